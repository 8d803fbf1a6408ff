"""Pure URL functions (no Scrapy import)."""

from __future__ import annotations

from urllib.parse import urlsplit


def url_host(url: str) -> str:
    """The url's host as records are filed under: lowercase, with a non-default port kept."""
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    try:
        port = parts.port
    except ValueError:
        port = None
    default = 443 if parts.scheme == "https" else 80
    return f"{host}:{port}" if port and port != default else host
