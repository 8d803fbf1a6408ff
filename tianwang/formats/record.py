"""One Tianwang record: encode it, and read records back from a file (docs/design.md section 6)."""

from __future__ import annotations

import os
import re
import time
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from email.utils import formatdate
from functools import lru_cache
from typing import BinaryIO

import deflate as libdeflate

from tianwang.formats.http import HttpMessage, parse_http_response

VERSION = "1.0"
RESERVED = frozenset({"version", "url", "origin", "date", "ip", "unzip-length", "length"})
GZIP_MAGIC = b"\x1f\x8b"
_NAME = re.compile(r"[a-z0-9][a-z0-9._-]*\Z")
_NUMBER = re.compile(r"[0-9]{1,18}\Z")  # 18 digits: more than any file, less than int's limit
# Caps what one read may pull into memory when a corrupt file has no newline or a huge length.
MAX_LINE = 1 << 20
CHUNK = 1 << 20
# The largest DATA a reader accepts, compressed (length) or not (unzip-length): a header
# declaring more is damage, refused before a byte is allocated. The crawl's body limit
# (TIANWANG_MAX_PAGE_BYTES, 10 MiB by default) plus 1 MiB for the status line and headers;
# the writer refuses to write more, so every record written can be read back.
MAX_DATA = 11 * (1 << 20)
# What a reader holds at once of a compressed record: its stored bytes and DATA inflated.
# The writer stores DATA as it is (no unzip-length) when zlib would leave more than this, so
# that reading back the biggest page costs under 2 x TIANWANG_MAX_PAGE_BYTES at its default
# (an 11 MiB DATA is compressed if it shrinks to 7 MiB; HTML shrinks to a third or less).
MAX_HELD = 18 * (1 << 20)
# Where a damaged record's span ends: the next "version:" that starts a record that reads.
BOUNDARY = b"version:"

Source = str | os.PathLike[str] | BinaryIO


@dataclass
class Record:
    """A stored page: header fields plus DATA, the uncompressed HTTP response."""

    url: str
    data: bytes
    date: str | None = None
    ip: str | None = None
    origin: str | None = None
    extra: dict[str, str] = field(default_factory=dict)
    # Where the record was read from, not part of its content.
    offset: int = field(default=-1, compare=False)

    @property
    def http(self) -> HttpMessage:
        return parse_http_response(self.data)


class RecordError(Exception):
    """A malformed or truncated record, located by file and byte offset."""

    def __init__(
        self, path: str | None, offset: int, reason: str, length: int | None = None
    ) -> None:
        super().__init__(path, offset, reason)
        self.path = path
        self.offset = offset
        self.reason = reason
        # Bytes of the damaged span, up to the next good record or the end of the file;
        # None when the reader stopped at the damage instead of reading past it.
        self.length = length

    def __str__(self) -> str:
        where = f"{self.path}: " if self.path is not None else ""
        span = f" ({self.length} bytes skipped)" if self.length is not None else ""
        return f"{where}offset {self.offset}{span}: {self.reason}"


# Called with each damaged span (a RecordError with its length) when a reader goes on.
OnDamage = Callable[[RecordError], None]


class _Malformed(Exception):
    """Raised inside the reader; turned into RecordError once the offset is known."""


def format_date(timestamp: float) -> str:
    """RFC 1123 date in GMT, e.g. 'Sun, 22 Nov 2026 05:16:17 GMT' (to the second: a crawl
    stores hundreds of pages a second, each formatted once a second)."""
    return _format_second(int(timestamp // 1))


@lru_cache(maxsize=16)
def _format_second(second: int) -> str:
    return formatdate(second, usegmt=True)


# -- writing -----------------------------------------------------------------------------


def encode_record(
    record: Record, compress: bool = True, level: int = zlib.Z_DEFAULT_COMPRESSION
) -> bytes:
    """The bytes of one record; DATA is zlib-compressed (at `level`) unless compress is False."""
    if record.date is None:  # every record carries its crawl time; the writer's clock is it
        record = replace(record, date=format_date(time.time()))
    data = bytes(record.data)
    if len(data) > MAX_DATA:  # no reader would take it back: refuse it here, nothing written
        raise ValueError(f"DATA of {len(data)} bytes is over the record limit of {MAX_DATA}")
    stored = zlib_compress(data, level) if compress else data
    if len(stored) > MAX_DATA or len(stored) + len(data) > MAX_HELD:
        compress, stored = False, data  # zlib saves too little to be worth the reader's memory
    fields = header_fields(record)
    if compress:
        fields.append(("unzip-length", str(len(data))))
    fields.append(("length", str(len(stored))))
    return encode_header(fields) + stored + b"\n"


def zlib_compress(data: bytes, level: int = zlib.Z_DEFAULT_COMPRESSION) -> bytes:
    """A zlib stream of `data` (any zlib reader inflates it), made by libdeflate: half
    zlib's time at level 1 on real pages (120 against 244 us for a 40 KB page) and 8% smaller;
    zlib's default level (-1) is its 6."""
    if level == 0:  # stored blocks: libdeflate has no such level
        return zlib.compress(data, 0)
    return libdeflate.zlib_compress(data, 6 if level < 0 else level)


def header_fields(record: Record) -> list[tuple[str, str]]:
    """The header fields before the lengths, in the order the format writes them."""
    fields = [("version", VERSION), ("url", record.url)]
    if record.origin and record.origin != record.url:
        fields.append(("origin", record.origin))
    if record.date is not None:
        fields.append(("date", record.date))
    if record.ip:
        fields.append(("ip", record.ip))
    _check_extra(record.extra)
    fields.extend(record.extra.items())
    for name, value in fields:
        _check_value(name, value)
    return fields


def encode_header(fields: list[tuple[str, str]]) -> bytes:
    """Header lines and the blank line; surrogateescape gives back undecodable bytes as read."""
    text = "".join(f"{name}: {value}\n" for name, value in fields) + "\n"
    return text.encode("utf-8", "surrogateescape")


def _check_extra(extra: dict[str, str]) -> None:
    for name in extra:
        if not isinstance(name, str) or not _NAME.match(name):
            raise ValueError(f"extra header name {name!r} is not a lowercase token")
        if name in RESERVED:
            raise ValueError(f"extra header name {name!r} is a reserved field")


def _check_value(name: str, value: str) -> None:
    if not isinstance(value, str):
        raise ValueError(f"header {name}: value {value!r} is not a string")
    if "\n" in value or "\r" in value:
        raise ValueError(f"header {name}: value {value!r} contains a line break")
    if name == "url" and not value:
        raise ValueError("a record needs a url")


# -- reading -----------------------------------------------------------------------------


def iter_records(
    source: Source,
    path: str | None = None,
    *,
    on_damage: OnDamage | None = None,
    limit: int = MAX_DATA,
) -> Iterator[Record]:
    """Records of a file (a path or a binary file object) in order, each with its offset.

    A record that fails its checks raises RecordError (file, offset, reason), unless
    on_damage is given: then the damaged span, from the bad record to the next record that
    reads (or the end of the file), goes to on_damage with its length, and reading goes on.
    A declared size over `limit` is damage, refused before anything is allocated.
    """
    for record, _end in _scan(source, path, on_damage, limit):
        yield record


def valid_end(path: str | os.PathLike[str]) -> int:
    """Where the file's unfinished tail starts: after the last record that reads, if only
    damage follows it to the end of the file (a crash's half-written record); else the size.

    Damage followed by a good record is not a tail: it costs that span only, and is left
    for `tianwang records repair` to take out.
    """
    return check_file(path)[0]


def check_file(path: str | os.PathLike[str]) -> tuple[int, list[RecordError]]:
    """valid_end(path), and every damaged span before it (a tail of damage is not listed)."""
    end, spans = 0, []
    for _record, record_end in _scan(path, os.fspath(path), spans.append, MAX_DATA):
        end = record_end
    return end, [span for span in spans if span.offset < end]


def _scan(
    source: Source, path: str | None, on_damage: OnDamage | None, limit: int
) -> Iterator[tuple[Record, int]]:
    if isinstance(source, str | os.PathLike):
        with open(source, "rb") as file:
            name = os.fspath(source) if path is None else path
            yield from _scan_file(file, name, on_damage, limit)
    else:
        yield from _scan_file(source, path, on_damage, limit)


def _scan_file(
    file: BinaryIO, path: str | None, on_damage: OnDamage | None, limit: int
) -> Iterator[tuple[Record, int]]:
    offset = _tell(file)
    while True:
        try:
            parsed = _read_record(file, limit)
        except _Malformed as exc:
            if on_damage is None or not file.seekable():
                raise RecordError(path, offset, str(exc)) from None
            good = _next_record(file, offset + 1, limit)
            on_damage(RecordError(path, offset, str(exc), good - offset))
            file.seek(good)
            offset = good
            continue
        if parsed is None:
            return
        record, size = parsed
        record.offset = offset
        offset += size
        yield record, offset


def _next_record(file: BinaryIO, start: int, limit: int) -> int:
    """Offset of the first record at or after start that reads in full, or the file's end.

    Every "version:" is a candidate, not only one after a newline: garbage inserted before
    a record must not cost the record.
    """
    size = file.seek(0, os.SEEK_END)
    for candidate in _candidates(file, start, size):
        file.seek(candidate)
        try:
            if _read_record(file, limit) is not None:
                return candidate
        except _Malformed:
            pass
    return size


def _candidates(file: BinaryIO, start: int, size: int) -> Iterator[int]:
    """Offsets of every BOUNDARY at or after start, reading a chunk at a time (each chunk
    once, however many candidates it holds: a page about software versions has many)."""
    overlap = len(BOUNDARY) - 1
    while start < size:
        file.seek(start)
        chunk = file.read(CHUNK + overlap)
        found = chunk.find(BOUNDARY)
        while found >= 0:
            yield start + found
            found = chunk.find(BOUNDARY, found + 1)
        start += CHUNK


def _tell(file: BinaryIO) -> int:
    try:
        return file.tell()
    except OSError:  # a pipe: offsets count from where reading starts
        return 0


def _read_record(file: BinaryIO, limit: int = MAX_DATA) -> tuple[Record, int] | None:
    header = _read_header(file)
    if header is None:
        return None
    fields, head_size = header
    length = _number(fields, "length", limit)
    unzip_length = _number(fields, "unzip-length", limit) if "unzip-length" in fields else None
    stored = _read_exact(file, length)
    if len(stored) < length:
        raise _Malformed(f"truncated record (length {length}, only {len(stored)} bytes left)")
    _expect_newline(file)
    if unzip_length is not None:
        stored = _inflate(stored, unzip_length)
    return _make_record(fields, stored), head_size + length + 1


def _read_header(file: BinaryIO) -> tuple[dict[str, str], int] | None:
    fields: dict[str, str] = {}
    size = 0
    while "length" not in fields:
        line = file.readline(MAX_LINE)
        if not line and size == 0:
            return None  # clean end of file
        name, value = _parse_line(line, first=size == 0)
        if name in fields:
            raise _Malformed(f"duplicate header {name!r}")
        fields[name] = value
        size += len(line)
    blank = file.read(1)
    if blank != b"\n":
        raise _Malformed(
            "truncated record (header cut short)"
            if not blank
            else "length is not the last header line"
        )
    return fields, size + 1


def _parse_line(line: bytes, first: bool) -> tuple[str, str]:
    """A property: a name, a colon, optional blanks, the value (the spec's "a name and a
    value separated by a colon"). Names are read case-insensitively, except the first line's
    `version`, written and matched in lowercase: it is what marks where a record starts."""
    if not line.endswith(b"\n"):
        if len(line) >= MAX_LINE:
            raise _Malformed(f"header line longer than {MAX_LINE} bytes")
        raise _Malformed("truncated record (header cut short)")
    if first and not line.startswith(BOUNDARY):
        raise _Malformed(f"record does not start with 'version:': {line[:40]!r}")
    text = line[:-1]
    if not text:
        raise _Malformed("header ends without a length line")
    if b"\r" in text:
        raise _Malformed(f"CR in header line {text[:60]!r} (lines end with LF only)")
    raw_name, sep, raw_value = text.partition(b":")
    name = raw_name.decode("latin-1").lower()
    if not sep or not _NAME.match(name):
        raise _Malformed(f"bad header line {text[:60]!r} (want 'name: value')")
    return name, raw_value.lstrip(b" \t").decode("utf-8", "surrogateescape")


def _number(fields: dict[str, str], name: str, limit: int) -> int:
    value = fields.get(name)
    if value is None or not _NUMBER.match(value):
        raise _Malformed(f"bad {name} header {value!r}")
    number = int(value)
    if number > limit:  # refused before anything that size is read or inflated
        raise _Malformed(f"{name} {number} is over the reader's limit of {limit} bytes")
    return number


def _read_exact(file: BinaryIO, length: int) -> bytes:
    # Up to MAX_DATA in one read, so DATA is allocated once; more (a caller lifted the
    # limit) in chunks, so a corrupt length of a terabyte costs one pass, not a terabyte
    # allocation. A raw file or a pipe may return less than asked: the rest is read on.
    step = length if length <= MAX_DATA else CHUNK
    data = file.read(step)
    if len(data) == length or not data:
        return data
    parts = [data]
    left = length - len(data)
    while left > 0:
        chunk = file.read(min(left, step))
        if not chunk:
            break
        parts.append(chunk)
        left -= len(chunk)
    return b"".join(parts)


def _expect_newline(file: BinaryIO) -> None:
    end = file.read(1)
    if not end:
        raise _Malformed("truncated record (no newline after DATA)")
    if end != b"\n":
        raise _Malformed(f"DATA is not followed by a newline (found {end!r})")


def _inflate(stored: bytes, unzip_length: int) -> bytes:
    """zlib (what Tianwang readers expect) or gzip (what the paper says), checked for size.

    A DATA over CHUNK is inflated twice: first in CHUNK steps, output thrown away, to learn
    that the stream stops within unzip-length and ends where DATA does; then in one
    allocation of that size. A single bounded pass (decompressobj with max_length) would
    gather its output in blocks and join them: twice the page in memory at once.
    """
    wbits = 31 if stored.startswith(GZIP_MAGIC) else 15
    try:
        if unzip_length <= CHUNK:
            data = _inflate_checked(stored, wbits, unzip_length)
        else:
            size = _check_stream(stored, wbits, unzip_length)
            _check_size(size, unzip_length)  # before allocating: the header may lie upward
            data = zlib.decompress(stored, wbits, size)
    except zlib.error as exc:
        raise _Malformed(f"bad compressed DATA: {exc}") from None
    _check_size(len(data), unzip_length)
    return data


def _check_size(size: int, unzip_length: int) -> None:
    if size != unzip_length:
        raise _Malformed(f"DATA inflates to {size} bytes, unzip-length says {unzip_length}")


def _inflate_checked(stored: bytes, wbits: int, unzip_length: int) -> bytes:
    inflater = zlib.decompressobj(wbits)
    # One byte over the promised size (itself under the limit) is enough to tell it lied;
    # no bomb gets inflated further.
    data = inflater.decompress(stored, unzip_length + 1)
    if len(data) > unzip_length:
        raise _Malformed(f"DATA inflates to more than unzip-length {unzip_length}")
    _check_end(inflater, bool(inflater.unused_data))
    return data


def _check_stream(stored: bytes, wbits: int, unzip_length: int) -> int:
    """The size stored inflates to; _Malformed unless it is one whole stream of at most
    unzip_length bytes. Never more than CHUNK of output (nor of input) held at once."""
    inflater = zlib.decompressobj(wbits)
    view = memoryview(stored)
    size = 0
    for start in range(0, len(view), CHUNK):
        pending = view[start : start + CHUNK]
        # An empty tail with a full output step may leave output inside zlib: the next
        # piece (or the drain below) takes it out.
        while pending and not inflater.eof:
            size += len(inflater.decompress(pending, CHUNK))
            if size > unzip_length:
                raise _Malformed(f"DATA inflates to more than unzip-length {unzip_length}")
            pending = inflater.unconsumed_tail
        if inflater.eof:
            _check_end(inflater, bool(inflater.unused_data) or start + CHUNK < len(view))
            return size
    while not inflater.eof:
        step = len(inflater.decompress(b"", CHUNK))
        size += step
        if size > unzip_length:
            raise _Malformed(f"DATA inflates to more than unzip-length {unzip_length}")
        if not step:
            break
    _check_end(inflater, False)
    return size


def _check_end(inflater: zlib._Decompress, trailing: bool) -> None:
    if not inflater.eof:
        raise _Malformed("compressed DATA ends before its stream does")
    if trailing:
        raise _Malformed("bytes after the end of the compressed DATA")


def _make_record(fields: dict[str, str], data: bytes) -> Record:
    version = fields.pop("version")
    if not version.startswith("1."):
        raise _Malformed(f"unsupported version {version!r}")
    url = fields.pop("url", None)
    if not url:
        raise _Malformed("record has no url")
    fields.pop("length")
    fields.pop("unzip-length", None)
    known = {name: fields.pop(name, None) for name in ("date", "ip", "origin")}
    return Record(url=url, data=data, extra=fields, **known)
