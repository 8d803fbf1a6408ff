"""A Tianwang record reader written from the specification alone (docs/design.md section 6).

Deliberately shares no code with tianwang.formats: if the project's writer drifts from the
spec, this reader, not the project's own, is what notices.
"""

from __future__ import annotations

import gzip
import zlib


class SpecError(AssertionError):
    pass


def read_records(blob: bytes) -> list[dict]:
    records, pos = [], 0
    while pos < len(blob):
        record, pos = _read_one(blob, pos)
        records.append(record)
    return records


def _read_one(blob: bytes, start: int) -> tuple[dict, int]:
    end_of_head = blob.find(b"\n\n", start)
    if end_of_head < 0:
        raise SpecError(f"offset {start}: no blank line after the header")
    lines = blob[start:end_of_head].split(b"\n")
    names = [line.split(b": ", 1)[0].decode("ascii") for line in lines]
    fields = dict(line.decode("utf-8").split(": ", 1) for line in lines)
    _check_header(start, lines, names, fields)
    data_start = end_of_head + 2
    length = int(fields["length"])
    data = blob[data_start : data_start + length]
    if len(data) != length or blob[data_start + length : data_start + length + 1] != b"\n":
        raise SpecError(f"offset {start}: DATA is not {length} bytes followed by LF")
    return {
        "header": fields,
        "names": names,
        "data": _inflate(start, data, fields),
    }, data_start + length + 1


def _check_header(start: int, lines: list[bytes], names: list[str], fields: dict) -> None:
    if any(b"\r" in line for line in lines):
        raise SpecError(f"offset {start}: CR in a header line (LF only)")
    if lines[0] != b"version: 1.0":
        raise SpecError(f"offset {start}: first line is {lines[0]!r}, not 'version: 1.0'")
    if names[-1] != "length":
        raise SpecError(f"offset {start}: last header is {names[-1]!r}, not length")
    if "unzip-length" in fields and names[-2] != "unzip-length":
        raise SpecError(f"offset {start}: unzip-length is not just before length")
    if any(name != name.lower() for name in names) or "url" not in fields:
        raise SpecError(f"offset {start}: header names must be lowercase and include url")


def _inflate(start: int, data: bytes, fields: dict) -> bytes:
    if "unzip-length" not in fields:
        return data
    raw = gzip.decompress(data) if data[:2] == b"\x1f\x8b" else zlib.decompress(data)
    if len(raw) != int(fields["unzip-length"]):
        raise SpecError(
            f"offset {start}: inflated {len(raw)} bytes, unzip-length says {fields['unzip-length']}"
        )
    return raw


def http_parts(data: bytes) -> tuple[int, dict[str, str], bytes]:
    """Status, headers (lowercase names) and body of a record's DATA."""
    head, sep, body = data.partition(b"\r\n\r\n")
    if not sep:
        raise SpecError("DATA has no CRLF blank line after the HTTP headers")
    status_line, *header_lines = head.split(b"\r\n")
    protocol, status, *_ = status_line.decode("latin-1").split(" ", 2)
    if not protocol.startswith("HTTP/"):
        raise SpecError(f"DATA does not begin with an HTTP status line: {status_line[:40]!r}")
    headers = {}
    for line in header_lines:
        name, _, value = line.decode("latin-1").partition(":")
        headers[name.strip().lower()] = value.strip()
    return int(status), headers, body
