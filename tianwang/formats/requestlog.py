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

A compacted log (rewritten with only the requests not done, so that its size follows what is
pending and not the crawl's length) starts with COMPACTED_MAGIC and a head: a CRC-32, the
mark (the ids logged before the compaction), and the ids it kept below the mark, ascending.
An id below the mark and not kept was done: its record is gone, and a gap in the ids is no
damage. Damage is still told by the checksums, and the head says which of the ids a
damaged span hid could have been pending.

Format 1 (before checksums: no MAGIC, ids by position) is still read, to be rewritten in
this format (tianwang/frontier/requestlog.py does it when a job resumes).
"""

from __future__ import annotations

import mmap
import os
import struct
import zlib
from array import array
from bisect import bisect_left
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO, NamedTuple

MAGIC = b"twreqs2\n"  # format 2: records with ids and checksums
COMPACTED_MAGIC = b"twreqc2\n"  # format 2, compacted: a head of the ids kept, then records
HEAD = struct.Struct("<IQQ")  # CRC-32 of the rest of the head, the mark, how many ids kept
CRC = struct.Struct("<I")
FIELDS = struct.Struct("<IIhiBH")  # id, body length, weight, priority, has fp, slot length
HEADER_SIZE = CRC.size + FIELDS.size
FP_SIZE = 20
NO_FP = bytes(FP_SIZE)
MIN_RECORD = HEADER_SIZE + FP_SIZE  # an empty slot and body
MAX_ID = 2**32 - 1
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


class Head(NamedTuple):
    """What a compacted log's head says: ids below mark not in kept (ascending) are done.
    A head that does not read is not known: no id below the first record is then taken for
    pending (a damaged span can hide pending requests uncounted)."""

    mark: int
    kept: array  # array("I")
    known: bool = True

    def may_be_pending(self, item: int) -> bool:
        """Whether the id had a record when the log was compacted (or came after it)."""
        if not self.known:
            return False
        if item >= self.mark:
            return True
        at = bisect_left(self.kept, item)
        return at < len(self.kept) and self.kept[at] == item

    def count_pending(self, low: int, high: int) -> int:
        """How many ids in [low, high) may be pending."""
        if not self.known or high <= low:
            return 0
        below = min(high, self.mark)
        kept = bisect_left(self.kept, below) - bisect_left(self.kept, low) if below > low else 0
        return kept + max(0, high - max(low, self.mark))


def pack_head(mark: int, kept: array) -> bytes:
    """COMPACTED_MAGIC and the head (kept: array("I"), ascending): records follow it."""
    rest = HEAD.pack(0, mark, len(kept))[CRC.size :] + kept.tobytes()
    return COMPACTED_MAGIC + CRC.pack(zlib.crc32(rest)) + rest


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
        size = os.fstat(f.fileno()).st_size
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
            if mapped[: len(MAGIC)] in (MAGIC, COMPACTED_MAGIC):
                return True
            # Its mark damaged, and a head or a format 2 record after it all the same?
            if _head(mapped, size) is not None:
                return True
            return _read(mapped, len(MAGIC), size, 0) is not None


def read_head(path: Path) -> tuple[Head | None, int]:
    """A compacted log's head (None if the log is not compacted) and where its records
    start."""
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size < len(MAGIC):
            return None, len(MAGIC)
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
            if mapped[: len(MAGIC)] == MAGIC:  # not compacted: a record follows the mark
                return None, len(MAGIC)
            found = _head(mapped, size)
            compacted = mapped[: len(MAGIC)] == COMPACTED_MAGIC
    if found is not None:
        return found
    return (Head(0, array("I"), known=False) if compacted else None), len(MAGIC)


def _head(view: mmap.mmap | memoryview, size: int) -> tuple[Head, int] | None:
    """The head after the mark and where it ends, if one reads there."""
    if size < len(MAGIC) + HEAD.size:
        return None
    crc, mark, count = HEAD.unpack_from(view, len(MAGIC))
    end = len(MAGIC) + HEAD.size + 4 * count
    if end > size or crc != zlib.crc32(view[len(MAGIC) + CRC.size : end]):
        return None
    kept = array("I")
    kept.frombytes(view[len(MAGIC) + HEAD.size : end])
    return Head(mark, kept), end


def scan_log(path: Path, on_damage: OnDamage | None = None) -> Iterator[Record]:
    """Each record of a request log that reads, in order; reads only (a running crawl's log
    may be read beside it). Damage is skipped and told to on_damage; a compacted log's head
    is read_head's."""
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
            found = _head(mapped, size) if mapped[: len(MAGIC)] != MAGIC else None
            view = memoryview(mapped)
            try:
                yield from _scan(view, found[1] if found else len(MAGIC), size, on_damage)
            finally:
                view.release()


def _scan(view: memoryview, position: int, size: int,
          on_damage: OnDamage | None) -> Iterator[Record]:
    expected = 0
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


class Done:
    """The ids done.log marks done, sorted: 8 bytes an id, and done.log holds only the ids done
    since the log's last compaction."""

    def __init__(self, ids: array) -> None:
        self._ids = ids

    def __len__(self) -> int:
        return len(self._ids)

    def __contains__(self, item: int) -> bool:
        at = bisect_left(self._ids, item)
        return at < len(self._ids) and self._ids[at] == item

    def between(self, low: int, high: int) -> array:
        """The ids done in [low, high)."""
        return self._ids[bisect_left(self._ids, low) : bisect_left(self._ids, high)]


def read_done(path: Path) -> Done:
    """The ids done. One no record could have (damage: a stray 2**40) is dropped."""
    if not path.exists():
        return Done(array("Q"))
    import numpy  # here: a crawl without JOBDIR, or a job with nothing done, never needs it

    ids = numpy.fromfile(path, dtype="<u8", count=path.stat().st_size // 8)  # torn id dropped
    return Done(array("Q", numpy.unique(ids[ids <= MAX_ID]).tobytes()))


def clip(weight: int, priority: int) -> tuple[int, int]:
    """Weight and priority within the log's fields (int16, int32), kept at their bounds."""
    return max(-(2**15), min(2**15 - 1, weight)), max(-(2**31), min(2**31 - 1, priority))
