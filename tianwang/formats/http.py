"""The HTTP response stored as a Tianwang record's DATA: build it from parts, parse it back."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from http import HTTPStatus

# The stored body is de-chunked, so this would describe framing that is not there. A
# Content-Encoding header is kept: Scrapy removes it when it decodes a body, so one still
# present means the body is still encoded as it says (e.g. a coding Scrapy cannot undo).
_ALWAYS_DROPPED = frozenset({b"transfer-encoding"})
_PROTOCOL = re.compile(r"HTTP/[0-9]+(?:\.[0-9]+)?\Z")
# Scrapy's HTTP/2 handler reports "h2"; the status line needs the HTTP-version form.
_PROTOCOL_ALIASES = {"h2": "HTTP/2"}
_STATUS_LINE = re.compile(rb"(HTTP/[0-9]+(?:\.[0-9]+)?) ([0-9]{3})(?: (.*))?\Z")


@dataclass(frozen=True)
class HttpMessage:
    """An HTTP response split into its parts; header names and values are latin-1 text."""

    protocol: str
    status: int
    reason: str
    headers: list[tuple[str, str]]
    body: bytes

    def header(self, name: str) -> str | None:
        """The first value of header `name` (case-insensitive), or None."""
        wanted = name.lower()
        return next((value for key, value in self.headers if key.lower() == wanted), None)


def reason_phrase(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Unknown"


def build_http_response(
    status: int,
    headers: list[tuple[bytes, bytes]],
    body: bytes,
    protocol: str = "HTTP/1.1",
) -> bytes:
    """Status line, headers and a blank line joined with CRLF, then the body."""
    lines = [_status_line(status, protocol)]
    for name, value in headers:
        _check_header(name, value)
        if _keep_header(name, value, len(body)):
            lines.append(name + b": " + value)
    return b"\r\n".join(lines) + b"\r\n\r\n" + body


def _status_line(status: int, protocol: str) -> bytes:
    protocol = _PROTOCOL_ALIASES.get(protocol, protocol)
    if not _PROTOCOL.match(protocol):
        raise ValueError(f"protocol {protocol!r} is not of the form HTTP/1.1")
    if not 100 <= status <= 999:
        raise ValueError(f"HTTP status {status} is not a three-digit code")
    return f"{protocol} {status} {reason_phrase(status)}".encode("latin-1")


def _check_header(name: bytes, value: bytes) -> None:
    # A CR or LF would split one header into two, or end the header block early.
    if not name or b":" in name or any(c in name + value for c in b"\r\n"):
        raise ValueError(f"HTTP header {name!r}: {value!r} cannot be stored on one line")


def _keep_header(name: bytes, value: bytes, body_length: int) -> bool:
    lowered = name.strip().lower()
    if lowered in _ALWAYS_DROPPED:
        return False
    if lowered == b"content-length":
        return value.strip() == str(body_length).encode()
    return True


def parse_http_response(data: bytes) -> HttpMessage:
    """Split DATA into status line, headers and body; ValueError if it is not a response."""
    message, start = parse_http_head(data)
    return replace(message, body=data[start:])


def parse_http_head(data: bytes) -> tuple[HttpMessage, int]:
    """parse_http_response without copying the body out (a page may be 10 MiB): the message
    with an empty body, and where the body starts in data. ValueError as parse_http_response."""
    if not data.startswith(b"HTTP/"):
        raise ValueError(f"DATA does not start with an HTTP status line: {data[:40]!r}")
    head, start = _split_head(data)
    status_line, *header_lines = [line.rstrip(b"\r") for line in head.split(b"\n")]
    match = _STATUS_LINE.match(status_line)
    if match is None:
        raise ValueError(f"bad HTTP status line: {status_line[:80]!r}")
    protocol, status, reason = match.groups()
    message = HttpMessage(
        protocol=protocol.decode("latin-1"),
        status=int(status),
        reason=(reason or b"").decode("latin-1"),
        headers=_parse_headers(header_lines),
        body=b"",
    )
    return message, start


def body_start(data: bytes, begin: int = 0, end: int | None = None) -> int | None:
    """Where an HTTP message's body starts: after its first blank line, CRLF CRLF or LF LF,
    whichever comes first (our writer uses CRLF; LF-only heads come from older tools). None
    when there is no blank line. The message may be data[begin:end] of a larger buffer (an
    mmap, searched where it lies)."""
    end = len(data) if end is None else end
    crlf = data.find(b"\r\n\r\n", begin, end)
    lf = data.find(b"\n\n", begin, crlf + 1 if crlf >= 0 else end)
    if lf >= 0:
        return lf + 2
    return crlf + 4 if crlf >= 0 else None


def _split_head(data: bytes) -> tuple[bytes, int]:
    """The head (without its blank line) and where the body starts."""
    start = body_start(data)
    if start is None:
        raise ValueError("no blank line after the HTTP headers")
    head_end = start - 4 if data.startswith(b"\r\n\r\n", start - 4) else start - 2
    return data[:head_end], start


def _parse_headers(lines: list[bytes]) -> list[tuple[str, str]]:
    headers: list[tuple[str, str]] = []
    for line in lines:
        if line[:1] in (b" ", b"\t") and headers:  # obsolete line folding continues a value
            name, value = headers[-1]
            headers[-1] = (name, f"{value} {line.strip().decode('latin-1')}")
            continue
        name, sep, value = line.partition(b":")
        if not sep or not name.strip():
            raise ValueError(f"HTTP header line without a name and ':': {line[:80]!r}")
        headers.append((name.strip().decode("latin-1"), value.strip().decode("latin-1")))
    return headers
