"""The frontier's request log on disk (``requests.log`` and ``done.log`` under JOBDIR).

``requests.log`` starts with MAGIC, then one record per request ever pushed, in push order:
a CRC-32 of the rest of the record, the request's id, its body's length, weight, priority,
whether it has a fingerprint, its slot's length; the 20-byte request fingerprint (zeros when
the request is not filtered), the slot (the download slot, and the level), the body (the
request, encoded). ``done.log`` holds 8-byte ids of the requests whose processing finished.

What reads it: a record whose checksum does not match, or whose id is not above the last
one's, is damage (a bad disk, a file edited, a copy gone wrong). The reader then looks for
the next record that reads, byte by byte, and goes on from there: the damaged span is left
in place and reported with the ids it hid, and every request after it is still read with
its own id, so done.log's ids still name the right requests. Bytes after the last record
that reads, with none after them, are a record cut short by a kill during a write.

Format 1 (before checksums: no MAGIC, ids by position) is still read, to be rewritten in
this format (tianwang/frontier/requestlog.py does it when a job resumes).
"""

from __future__ import annotations

import mmap
import os
import struct
import zlib
from array import array
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO, NamedTuple

MAGIC = b"twreqs2\n"  # format 2: records with ids and checksums
CRC = struct.Struct("<I")
FIELDS = struct.Struct("<IIhiBH")  # id, body length, weight, priority, has fp, slot length
HEADER_SIZE = CRC.size + FIELDS.size
FP_SIZE = 20
NO_FP = bytes(FP_SIZE)
MIN_RECORD = HEADER_SIZE + FP_SIZE  # an empty slot and body
MAX_ID = 2**32 - 1
DONE_CHUNK = 1 << 20  # a multiple of a done id's 8 bytes
_V1_HEADER = struct.Struct("<IhiBH")  # format 1: body length, weight, priority, has fp, slot


class Record(NamedTuple):
    """A record that reads: what the queue and the Bloom filter need, and where it is."""

    item: int
    weight: int
    priority: int
    slot: str
    fingerprint: bytes | None
    length: int  # of the body: 0 for a request kept in memory only, by a run now gone
    start: int
    end: int


# Told of each damaged span: its start and end offsets, and how many ids it hid.
OnDamage = Callable[[int, int, int], None]


def pack(item: int, weight: int, priority: int, fingerprint: bytes | None, slot: bytes,
         body: bytes) -> bytes:
    """One record. weight and priority as clip() leaves them."""
    fields = FIELDS.pack(item, len(body), weight, priority, fingerprint is not None, len(slot))
    fingerprint = fingerprint or NO_FP
    crc = zlib.crc32(body, zlib.crc32(slot, zlib.crc32(fingerprint, zlib.crc32(fields))))
    return b"".join((CRC.pack(crc), fields, fingerprint, slot, body))


def body_of(record: bytes) -> bytes:
    """The body of one whole record, as pack() wrote it."""
    _item, length, _w, _p, _fp, slot_length = FIELDS.unpack_from(record, CRC.size)
    start = HEADER_SIZE + FP_SIZE + slot_length
    return record[start : start + length]


def is_current(path: Path) -> bool:
    """Whether a log is in this format (or empty, or absent: it will be)."""
    if not path.exists() or path.stat().st_size < len(MAGIC):
        return True
    with open(path, "rb") as f:
        head = f.read(len(MAGIC) + MIN_RECORD)
        if head.startswith(MAGIC):
            return True
        if len(head) < len(MAGIC) + MIN_RECORD:
            return False
        # Its mark damaged, and a format 2 record after it all the same?
        _item, length, _w, _p, _fp, slot_length = FIELDS.unpack_from(head, len(MAGIC) + CRC.size)
        if len(MAGIC) + MIN_RECORD + slot_length + length > os.fstat(f.fileno()).st_size:
            return False
        head += f.read(slot_length + length)
    return _read(head, len(MAGIC), len(head), 0) is not None


def scan_log(path: Path, on_damage: OnDamage | None = None) -> Iterator[Record]:
    """Each record of a request log that reads, in order; reads only (a running crawl's log
    may be read beside it). Damage is skipped and told to on_damage."""
    if not path.exists():
        return
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size < len(MAGIC):
            return
        if not is_current(path):
            yield from (record for record, _body in _scan_v1(f, size))
            return
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
            view = memoryview(mapped)
            try:
                yield from _scan(view, size, on_damage)
            finally:
                view.release()


def _scan(view: memoryview, size: int, on_damage: OnDamage | None) -> Iterator[Record]:
    position, expected = len(MAGIC), 0
    while position + MIN_RECORD <= size:
        record = _read(view, position, size, expected)
        if record is None:
            record = _next_good(view, position + 1, size, expected)
            if record is None:
                return  # a cut tail
            if on_damage is not None:
                on_damage(position, record.start, record.item - expected)
        yield record
        position, expected = record.end, record.item + 1


def _read(view: memoryview | bytes, position: int, size: int, expected: int) -> Record | None:
    """The record at position if it reads (its id at least expected), else None."""
    if position + MIN_RECORD > size:
        return None
    item, length, weight, priority, has_fp, slot_length = FIELDS.unpack_from(
        view, position + CRC.size)
    end = position + MIN_RECORD + slot_length + length
    if item < expected or end > size or has_fp > 1:
        return None
    if CRC.unpack_from(view, position)[0] != zlib.crc32(view[position + CRC.size : end]):
        return None
    at = position + HEADER_SIZE
    fingerprint = bytes(view[at : at + FP_SIZE]) if has_fp else None
    slot = bytes(view[at + FP_SIZE : at + FP_SIZE + slot_length]).decode("utf-8", "replace")
    return Record(item, weight, priority, slot, fingerprint, length, position, end)


def _next_good(view: memoryview, position: int, size: int, expected: int) -> Record | None:
    """The first record that reads from position on (a damaged span before it)."""
    for at in range(position, size - MIN_RECORD + 1):
        record = _read(view, at, size, expected)
        if record is not None:
            return record
    return None


def _scan_v1(f: BinaryIO, size: int) -> Iterator[tuple[Record, bytes]]:
    """Format 1: records without ids or checksums, an id its position; with their bodies."""
    f.seek(0)
    position, item = 0, 0
    while position + _V1_HEADER.size + FP_SIZE <= size:
        length, weight, priority, has_fp, slot_length = _V1_HEADER.unpack(
            f.read(_V1_HEADER.size))
        end = position + _V1_HEADER.size + FP_SIZE + slot_length + length
        if end > size:
            return
        rest = f.read(FP_SIZE + slot_length)
        fingerprint = rest[:FP_SIZE] if has_fp else None
        slot = rest[FP_SIZE:].decode("utf-8", "replace")
        yield Record(item, weight, priority, slot, fingerprint, length, position, end), f.read(
            length)
        position = end
        item += 1


def v1_records(path: Path) -> Iterator[tuple[Record, bytes]]:
    """Each record of a format 1 log with its body, to be written again in this format."""
    with open(path, "rb") as f:
        yield from _scan_v1(f, os.fstat(f.fileno()).st_size)


def read_done(path: Path, log: Path) -> bytes:
    """A byte per id, 1 for done (ids are read before the log: sized by the largest). An id
    no record of the log could have (damage: a stray 2**40 would ask for a terabyte) is
    dropped, as one past the log's end is."""
    if not path.exists():
        return b""
    records = log.stat().st_size // MIN_RECORD if log.exists() else 0
    done = bytearray()
    with open(path, "rb") as f:  # read a megabyte at a time: a month's ids are gigabytes
        while chunk := f.read(DONE_CHUNK):
            ids = array("Q")
            ids.frombytes(chunk[: len(chunk) - len(chunk) % 8])  # a torn last id dropped
            top = min(max(ids, default=-1) + 1, records)
            if top > len(done):
                done.extend(bytes(top - len(done)))
            for item in ids:
                if item < records:
                    done[item] = 1
    return done


def clip(weight: int, priority: int) -> tuple[int, int]:
    """Weight and priority within the log's fields (int16, int32), kept at their bounds."""
    return max(-(2**15), min(2**15 - 1, weight)), max(-(2**31), min(2**31 - 1, priority))
