"""A fast pass over a record file for dedup: where each record is, its url, date and body MD5.

The offline tools read every record of a collection once, so the per-record cost beyond
inflating and hashing is what decides their speed. This scanner maps the file and parses the
header with a few byte searches; at the first record it does not find perfectly well-formed it
hands over to the format's own reader (tianwang.formats.record.iter_records) from that
offset, which either reads on or raises the RecordError naming file, offset and reason. So
both agree on what a good record is, and only the reference reader words the errors.

Inflating is most of the work, so the fast path uses zlib-ng (the same zlib API and streams,
zlib or gzip): a 23 KB level-1 record inflates in 47 us against the stdlib zlib's 73, its
crc32 in 0.7 us against 2.4 (bench/RESULTS.md, issue 5). The reference reader keeps the
stdlib zlib, so a stream the two libraries judged differently would fall back to it.
"""

from __future__ import annotations

import hashlib
import mmap
import os
import re
import zlib
from collections.abc import Iterator
from typing import NamedTuple

from zlib_ng import zlib_ng

from tianwang.formats.record import GZIP_MAGIC, MAX_LINE, iter_records

_NAME = re.compile(rb"[a-z0-9][a-z0-9._-]*\Z")
_MAX_DIGITS = 18
_KNOWN = frozenset((b"version", b"url", b"origin", b"date", b"ip", b"unzip-length", b"length"))


class Scanned(NamedTuple):
    offset: int  # where the record starts in its file
    length: int  # bytes of the whole record: header, DATA and the final newline
    url: str
    date: str  # the date header as stored ("" if none)
    md5: bytes  # digest of the HTTP body (of all of DATA when DATA is not an HTTP response)
    crc: int  # crc32 of the record's bytes: tells apart two records of one url and body


def body_md5(data: bytes) -> bytes:
    """MD5 digest of the body a record's DATA carries: what follows the first blank line
    (CRLF CRLF or LF LF, whichever comes first, as parse_http_response splits) when DATA
    starts with "HTTP/"; all of DATA otherwise. The head is not parsed further: the writer
    checked it, and `tianwang records verify` reports one that is malformed.
    """
    split = _head_end(data) if data.startswith(b"HTTP/") else None
    # A memoryview hashes the body where it lies instead of copying it out first.
    return hashlib.md5(data if split is None else memoryview(data)[split:]).digest()


def _head_end(data: bytes) -> int | None:
    """Where the body starts: after the first CRLF CRLF or LF LF, whichever comes first."""
    crlf = data.find(b"\r\n\r\n")
    lf = data.find(b"\n\n", 0, crlf + 1) if crlf >= 0 else data.find(b"\n\n")
    if lf >= 0:
        return lf + 2
    return crlf + 4 if crlf >= 0 else None


def scan_file(path: str | os.PathLike[str]) -> Iterator[Scanned]:
    """Every record of the file in order; RecordError (file, offset, reason) at a bad one."""
    with open(path, "rb") as file:
        size = os.fstat(file.fileno()).st_size
        if size == 0:
            return
        with mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) as buf:
            offset = 0
            while offset < size:
                scanned = _fast_record(buf, offset, size)
                if scanned is None:
                    break
                yield scanned
                offset += scanned.length
            else:
                return
    yield from _reference_scan(path, offset)


def _fast_record(buf: mmap.mmap, offset: int, size: int) -> Scanned | None:
    """The record at offset if it is well-formed in every way the reader checks, else None."""
    framed = _framed(buf, offset, size)
    if framed is None:
        return None
    fields, start, end = framed
    raw = buf[offset:end]
    data = raw[start - offset : -1]
    if b"unzip-length" in fields:
        data = _inflate(data, _number(fields[b"unzip-length"]))
        if data is None:
            return None
    url = fields[b"url"].decode("utf-8", "surrogateescape")
    date = fields.get(b"date", b"").decode("utf-8", "surrogateescape")
    return Scanned(offset, len(raw), url, date, body_md5(data), zlib_ng.crc32(raw))


def _framed(buf: mmap.mmap, offset: int, size: int) -> tuple[dict[bytes, bytes], int, int] | None:
    """The header fields of the record at offset, where its DATA starts and where it ends
    (after its newline); None unless header and framing are well-formed."""
    head_end = buf.find(b"\n\n", offset, min(size, offset + MAX_LINE))
    if head_end < 0 or buf[offset : offset + 11] != b"version: 1.":
        return None
    fields = _header(buf[offset : head_end + 1])
    if fields is None:
        return None
    start = head_end + 2
    length = _number(fields.get(b"length"))
    if length is None or start + length >= size or buf[start + length] != 0x0A:
        return None
    return fields, start, start + length + 1


def _header(head: bytes) -> dict[bytes, bytes] | None:
    if b"\r" in head:
        return None
    lines = head.split(b"\n")[:-1]
    try:  # a line without ": " is a one-item list, which dict() refuses
        fields = dict(line.split(b": ", 1) for line in lines)
    except ValueError:
        return None
    # The reader wants: well-formed names, none repeated, length last, a url.
    if not fields.keys() <= _KNOWN and not all(map(_NAME.match, fields.keys() - _KNOWN)):
        return None
    if len(fields) != len(lines) or not lines[-1].startswith(b"length: "):
        return None
    return fields if fields.get(b"url") else None


def _number(value: bytes | None) -> int | None:
    if value is None or not value.isdigit() or len(value) > _MAX_DIGITS:
        return None
    return int(value)


def _inflate(stored: bytes, unzip_length: int | None) -> bytes | None:
    if unzip_length is None:
        return None
    inflater = zlib_ng.decompressobj(31 if stored.startswith(GZIP_MAGIC) else 15)
    try:
        data = inflater.decompress(stored, unzip_length + 1)
    except zlib_ng.error:
        return None
    good = len(data) == unzip_length and inflater.eof and not inflater.unused_data
    return data if good else None


def _reference_scan(path: str | os.PathLike[str], offset: int) -> Iterator[Scanned]:
    """From offset on, through the format's reader; a record's length is where the next
    (or the damage, or the end of the file) starts."""
    with open(path, "rb") as file:
        file.seek(offset)
        previous = None
        try:
            for record in iter_records(file, os.fspath(path)):
                if previous is not None:
                    yield _from_record(file, previous, record.offset)
                previous = record
            end = file.tell()
        except Exception as exc:
            if previous is not None:
                yield _from_record(file, previous, getattr(exc, "offset", file.tell()))
            raise
        if previous is not None:
            yield _from_record(file, previous, end)


def _from_record(file, record, end: int) -> Scanned:  # type: ignore[no-untyped-def]
    here = file.tell()
    file.seek(record.offset)
    raw = file.read(end - record.offset)
    file.seek(here)
    return Scanned(
        record.offset, len(raw), record.url, record.date or "", body_md5(record.data),
        zlib.crc32(raw),
    )


def scan_urls(path: str | os.PathLike[str]) -> Iterator[str]:
    """The url of every record of the file, reading headers only where the file is
    well-formed; RecordError (file, offset, reason) at a bad record."""
    with open(path, "rb") as file:
        size = os.fstat(file.fileno()).st_size
        if size == 0:
            return
        with mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) as buf:
            offset = 0
            while offset < size:
                found = _fast_head(buf, offset, size)
                if found is None:
                    break
                url, offset = found
                yield url
            else:
                return
    with open(path, "rb") as file:
        file.seek(offset)
        for record in iter_records(file, os.fspath(path)):
            yield record.url


def _fast_head(buf: mmap.mmap, offset: int, size: int) -> tuple[str, int] | None:
    """The url of the record at offset and where the next starts, without inflating DATA
    (so only the header and the framing are checked)."""
    framed = _framed(buf, offset, size)
    if framed is None:
        return None
    fields, _start, end = framed
    return fields[b"url"].decode("utf-8", "surrogateescape"), end
