"""Pure URL functions (no Scrapy import)."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from w3lib.url import safe_url_string

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


# URLs w3lib's safe_url_string leaves as they are: lowercase host, and only unreserved or
# sub-delim characters and valid %XX escapes after it. Most links on the web are like this,
# and the check is far cheaper than safe_url_string itself.
_ALREADY_SAFE = re.compile(
    r"https?://[a-z0-9.\-_~:]*(?:[/?](?:[A-Za-z0-9\-._~:/?@!$&'()*+,;=]|%[0-9A-Fa-f]{2})*)?\Z"
)


def safe_url(url: str, encoding: str = "utf-8") -> str:
    """w3lib's safe_url_string(url, encoding), with a fast path for already-safe urls."""
    if _ALREADY_SAFE.match(url):
        return url
    return safe_url_string(url, encoding=encoding)
