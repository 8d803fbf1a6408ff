"""Reading a response's header list ([(name, value)] as bytes, as a PageItem holds it).

Pure Python: the change-statistics pipeline and the refresh spider both read headers so.
"""

from __future__ import annotations

from email.utils import parsedate_to_datetime


def header(headers: list[tuple[bytes, bytes]], name: bytes) -> str | None:
    name = name.lower()
    for key, value in headers:
        if key.lower() == name:
            return value.decode("latin-1")
    return None


def media_type(headers: list[tuple[bytes, bytes]]) -> str:
    value = header(headers, b"Content-Type") or ""
    return value.split(";")[0].strip().lower()


def charset(headers: list[tuple[bytes, bytes]]) -> str | None:
    """The charset the Content-Type header names (None: the parser reads the page's meta)."""
    for param in (header(headers, b"Content-Type") or "").split(";")[1:]:
        name, _, value = param.partition("=")
        if name.strip().lower() == "charset" and value.strip():
            return value.strip().strip('"').lower()
    return None


def visit_time(headers: list[tuple[bytes, bytes]], fallback: float) -> float:
    """The Date header as epoch seconds; the crawler's clock without a usable one."""
    value = header(headers, b"Date")
    if value:
        try:
            return parsedate_to_datetime(value).timestamp()
        except (TypeError, ValueError):
            pass
    return fallback
