"""A fast pass over a record file for dedup: where each record is, its url, date and body MD5.

The offline tools read every record of a collection once, so the per-record cost beyond
inflating and hashing is what decides their speed. This scanner maps the file and parses the
header with a few byte searches; at a record it does not find perfectly well-formed it
hands over to the format's own reader (tianwang.formats.record.iter_records) for that one
record, which either reads it (a spelling only the spec allows, such as `url:x`) or raises the
RecordError naming file, offset and reason; given on_damage, the reader reports the damaged
span instead and resynchronises, and the fast pass goes on from the record it found. So both
agree on what a good record is, and only the reference reader words the errors. Both refuse a
declared size over the reader's limit (MAX_DATA) before allocating it.

Inflating is most of the work, so the fast path uses libdeflate (the `deflate` package): a
23 KB level-1 record inflates in 28 us against zlib-ng's 37 and the stdlib zlib's 62 (bench/
RESULTS-archive.md, issue 5). The reference reader keeps the stdlib zlib, so a stream the two
libraries judged differently falls back to it.
"""

from __future__ import annotations

import hashlib
import mmap
import os
import re
import zlib
from collections.abc import Iterator
from typing import BinaryIO, NamedTuple

import deflate as libdeflate

from tianwang.formats.http import body_start
from tianwang.formats.record import (
    GZIP_MAGIC,
    MAX_DATA,
    MAX_LINE,
    OnDamage,
    Record,
    iter_records,
)

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


def body_md5(data: bytes | mmap.mmap, begin: int = 0, end: int | None = None) -> bytes:
    """MD5 digest of the body a record's DATA carries: what follows the first blank line
    (CRLF CRLF or LF LF, whichever comes first, as parse_http_response splits) when DATA
    starts with "HTTP/"; all of DATA otherwise. The head is not parsed further: the writer
    checked it, and `tianwang records verify` reports one that is malformed. DATA may be
    data[begin:end] of a larger buffer (the file's map).
    """
    end = len(data) if end is None else end
    split = body_start(data, begin, end) if data[begin : begin + 5] == b"HTTP/" else None
    # A memoryview hashes the body where it lies instead of copying it out first.
    with memoryview(data) as view:
        return hashlib.md5(view[begin if split is None else split : end]).digest()


def scan_file(
    path: str | os.PathLike[str], on_damage: OnDamage | None = None
) -> Iterator[Scanned]:
    """Every record of the file in order; RecordError (file, offset, reason) at a bad one,
    or, given on_damage, each damaged span to it and the scan goes on after it."""
    with open(path, "rb") as file:
        size = os.fstat(file.fileno()).st_size
        if size == 0:
            return
        with mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) as buf:
            offset = 0
            while offset < size:
                scanned = _fast_record(buf, offset, size)
                if scanned is None:
                    scanned = _reference_record(file, os.fspath(path), offset, on_damage)
                    if scanned is None:
                        return  # damage to the end of the file
                yield scanned
                offset = scanned.offset + scanned.length


def _reference_record(
    file: BinaryIO, path: str, offset: int, on_damage: OnDamage | None
) -> Scanned | None:
    """The next record from offset on, read by the format's reader (which reports, or
    raises at, any damage on the way); None at the end of the file."""
    found = _next_by_reader(file, path, offset, on_damage)
    if found is None:
        return None
    record, end = found
    return _from_record(file, record, end)


def _next_by_reader(
    file: BinaryIO, path: str, offset: int, on_damage: OnDamage | None
) -> tuple[Record, int] | None:
    file.seek(offset)
    records = iter_records(file, path, on_damage=on_damage)
    record = next(records, None)
    end = file.tell()  # the reader stops just after the record it yields
    records.close()
    return None if record is None else (record, end)


def _fast_record(buf: mmap.mmap, offset: int, size: int) -> Scanned | None:
    """The record at offset if it is well-formed in every way the reader checks, else None."""
    framed = _framed(buf, offset, size)
    if framed is None:
        return None
    fields, start, end = framed
    # The record is read where it lies in the map, not copied out: copies of an 11 MB DATA
    # beside the map's own pages would take a reader over twice the page limit.
    with memoryview(buf) as view:
        crc = libdeflate.crc32(view[offset:end])
        if b"unzip-length" in fields:
            data = _inflate(view[start : end - 1], _number(fields[b"unzip-length"]))
            if data is None:
                return None
            md5 = body_md5(data)
        else:
            md5 = body_md5(buf, start, end - 1)
    url = fields[b"url"].decode("utf-8", "surrogateescape")
    date = fields.get(b"date", b"").decode("utf-8", "surrogateescape")
    return Scanned(offset, end - offset, url, date, md5, crc)


# The header as the writer lays it out (formats/record.py), matched in one step: most records
# of a collection are like this, and parsing a header line by line costs a tenth of the
# inflating. Anything else goes through _header, which checks what the reader checks.
_USUAL = re.compile(
    rb"version: 1\.0\nurl: ([^\r\n \t][^\r\n]*)\n(?:origin: [^\r\n]*\n)?"
    rb"(?:date: (?![ \t])([^\r\n]*)\n)?"
    rb"(?:ip: [^\r\n]*\n)?(?:unzip-length: ([0-9]{1,18})\n)?length: ([0-9]{1,18})\n\n"
)


def _framed(buf: mmap.mmap, offset: int, size: int) -> tuple[dict[bytes, bytes], int, int] | None:
    """The header fields of the record at offset, where its DATA starts and where it ends
    (after its newline); None unless header and framing are well-formed."""
    usual = _USUAL.match(buf, offset)
    if usual is not None and usual.end() - offset <= MAX_LINE:
        url, date, unzip_length, length = usual.groups()
        fields = {b"url": url, b"length": length}
        if date is not None:
            fields[b"date"] = date
        if unzip_length is not None:
            fields[b"unzip-length"] = unzip_length
        start = usual.end()
    else:
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
    unzip_length = fields.get(b"unzip-length")
    if unzip_length is not None and _number(unzip_length) is None:
        return None  # not a size the reader takes (over its limit): damage
    return fields, start, start + length + 1


def _header(head: bytes) -> dict[bytes, bytes] | None:
    if b"\r" in head:
        return None
    lines = head.split(b"\n")[:-1]
    try:  # a line without ": " is a one-item list, which dict() refuses
        fields = dict(line.split(b": ", 1) for line in lines)
    except ValueError:
        return None
    # More blanks after the colon are allowed, and not part of the value (the reader's rule).
    fields = {name: value.lstrip(b" \t") for name, value in fields.items()}
    # The reader wants: well-formed names, none repeated, length last, a url.
    if not fields.keys() <= _KNOWN and not all(map(_NAME.match, fields.keys() - _KNOWN)):
        return None
    if len(fields) != len(lines) or not lines[-1].startswith(b"length: "):
        return None
    return fields if fields.get(b"url") else None


def _number(value: bytes | None) -> int | None:
    """A size as the reader takes it: digits, and not over its limit."""
    if value is None or not value.isdigit() or len(value) > _MAX_DIGITS:
        return None
    number = int(value)
    return number if number <= MAX_DATA else None


def _inflate(stored: memoryview, unzip_length: int | None) -> bytearray | None:
    """DATA inflated, if it is exactly one whole zlib or gzip stream of unzip_length bytes.

    libdeflate inflates a whole buffer at once and stops at the end of the stream, saying
    nothing of bytes after it; but a stream ends with a check of what it holds (zlib: its
    adler32; gzip: its crc32 and size), so DATA that ends with that check holds nothing more.
    """
    if unzip_length is None:
        return None
    try:
        if stored[:2] == GZIP_MAGIC:
            # libdeflate sizes its buffer from the stream's own ISIZE: check it first.
            if int.from_bytes(stored[-4:], "little") != unzip_length & 0xFFFFFFFF:
                return None
            data = libdeflate.gzip_decompress(stored)
            trailer = libdeflate.crc32(data).to_bytes(4, "little")
            trailer += (len(data) & 0xFFFFFFFF).to_bytes(4, "little")
        else:
            data = libdeflate.zlib_decompress(stored, unzip_length)
            trailer = libdeflate.adler32(data).to_bytes(4, "big")
    except libdeflate.DeflateError:
        return None
    good = len(data) == unzip_length and stored[len(stored) - len(trailer) :] == trailer
    return data if good else None


def _from_record(file: BinaryIO, record: Record, end: int) -> Scanned:
    file.seek(record.offset)
    raw = file.read(end - record.offset)
    return Scanned(
        record.offset, len(raw), record.url, record.date or "", body_md5(record.data),
        zlib.crc32(raw),
    )


def scan_urls(
    path: str | os.PathLike[str], on_damage: OnDamage | None = None
) -> Iterator[str]:
    """The url of every record of the file, reading headers only where the file is
    well-formed; RecordError (file, offset, reason) at a bad record, or, given on_damage,
    each damaged span to it and the scan goes on after it."""
    with open(path, "rb") as file:
        size = os.fstat(file.fileno()).st_size
        if size == 0:
            return
        with mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) as buf:
            offset = 0
            while offset < size:
                found = _fast_head(buf, offset, size)
                if found is None:
                    by_reader = _next_by_reader(file, os.fspath(path), offset, on_damage)
                    if by_reader is None:
                        return
                    found = by_reader[0].url, by_reader[1]
                url, offset = found
                yield url


def _fast_head(buf: mmap.mmap, offset: int, size: int) -> tuple[str, int] | None:
    """The url of the record at offset and where the next starts, without inflating DATA
    (so only the header and the framing are checked)."""
    framed = _framed(buf, offset, size)
    if framed is None:
        return None
    fields, _start, end = framed
    return fields[b"url"].decode("utf-8", "surrogateescape"), end
