"""Pure URL functions (no Scrapy import)."""

from __future__ import annotations

from urllib.parse import urlsplit

_DEFAULT_PORTS = {"http": 80, "https": 443}


def url_host(url: str) -> str:
    """The host a url's records are filed under: lowercase, a port only if not the default.

    ValueError for a url with no host or a bad port.
    """
    parts = urlsplit(url)
    host = parts.hostname
    if not host:
        raise ValueError(f"URL {url!r} has no host")
    if ":" in host:  # an IPv6 address keeps its brackets, so a port stays distinguishable
        host = f"[{host}]"
    port = parts.port
    if port is None or port == _DEFAULT_PORTS.get(parts.scheme):
        return host
    return f"{host}:{port}"
