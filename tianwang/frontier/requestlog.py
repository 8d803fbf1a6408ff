"""Where the frontier keeps its requests: in memory, or in an append-only log under JOBDIR.

The log (``requests.log``) holds one record per request ever pushed, in push order; a
request's id is its record number. A second file (``done.log``) holds the ids of requests
whose processing finished (downloaded, parsed, their items stored and their links pushed).
On resume, pending = pushed - done, in the original order.

Crash safety (SIGKILL, not power loss): the write-ahead rule. New records are buffered
and written to the OS (no fsync) before any done id is, and done ids are written at once.
A request is marked done only after the engine has finished with it (response parsed,
items stored, links pushed), so a kill loses only records whose parent is not done: that
parent is fetched again on resume and pushes them again (the Bloom filter is rebuilt from
the log, so it does not refuse them). A kill can therefore only make the requests in
flight at that moment be fetched again. Start requests lost this way are re-yielded by the
spider on resume. A record cut short by a kill is dropped on resume. A power cut may lose
the last seconds of both files; the rule then holds only as far as the disk keeps order.

Record: header (body length, weight, priority, has-fingerprint, slot length), the 20-byte
request fingerprint (zeros when the request is not filtered), the download slot, the body.
The fingerprints let the Bloom filter be rebuilt from the log, so the filter never holds a
url whose request the log lost.
"""

from __future__ import annotations

import logging
import os
import struct
from array import array
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from scrapy import Request, Spider

from tianwang.frontier import codec

logger = logging.getLogger(__name__)

HEADER = struct.Struct("<IhiBH")
FP_SIZE = 20
_NO_FP = bytes(FP_SIZE)
# Records buffered before a write; a done id always writes them first.
BUFFER_BYTES = 1 << 20


@dataclass(frozen=True, slots=True)
class LogEntry:
    """What the queue and the Bloom filter need of a logged request, read on resume."""

    item: int
    weight: int
    priority: int
    slot: str
    fingerprint: bytes | None
    done: bool


class MemoryStore:
    """Requests kept in memory: the frontier without JOBDIR. Each is kept encoded (codec.py,
    as the log keeps it): about 300 bytes where the Request object takes a few KB, and a
    crawl may hold a million of them. One the codec cannot write is kept as it is."""

    def __init__(self, spider: Spider | None = None) -> None:
        self.spider = spider
        self._requests: dict[int, bytes | Request] = {}
        self._next = 0

    def put(self, request: Request, weight: int, slot: str, fingerprint: bytes | None) -> int:
        item = self._next
        self._next += 1
        try:
            self._requests[item] = codec.encode(request, self.spider) if self.spider else request
        except ValueError:  # a callback not on the spider, a meta value of no plain type
            self._requests[item] = request
        return item

    def open(self, visit: Callable[[LogEntry], None]) -> None:
        """Nothing to read: a memory frontier starts empty."""

    def get(self, item: int) -> Request:
        kept = self._requests.pop(item)
        return kept if isinstance(kept, Request) else codec.decode(kept, self.spider)

    def done(self, items: list[int]) -> None:
        """Nothing to record: a memory frontier does not survive its process."""

    def close(self) -> None:
        self._requests.clear()


class RequestLog:
    """Requests in ``<directory>/requests.log``, finished ids in ``done.log``."""

    def __init__(self, directory: Path, spider: Spider) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.directory = directory
        self.spider = spider
        self._path = directory / "requests.log"
        self._done_path = directory / "done.log"
        self._offsets = array("q", [0])  # record i spans offsets[i]:offsets[i + 1]
        self._memory: dict[int, Request] = {}  # requests that cannot be serialized
        self.unserializable = 0
        self._lost: set[int] = set()  # unserializable requests of an earlier run
        self._fd = -1
        self._done_fd = -1
        self._buffer = bytearray()  # records not yet written, from offset _flushed on
        self._flushed = 0

    def __len__(self) -> int:
        return len(self._offsets) - 1

    def open(self, visit: Callable[[LogEntry], None]) -> None:
        """Read the log, calling ``visit`` for every record in push order, then open it.

        A record cut short by a kill is dropped; so are done ids past the log's end.
        """
        self._offsets = array("q", [0])
        done = self._read_done()
        size = 0
        for entry in self._scan():
            size = self._offsets[-1]
            item = entry[0]
            finished = item in self._lost or (item < len(done) and bool(done[item]))
            visit(LogEntry(*entry, done=finished))
        self._fd = os.open(self._path, os.O_RDWR | os.O_CREAT, 0o644)
        os.ftruncate(self._fd, size)
        os.lseek(self._fd, size, os.SEEK_SET)
        self._flushed = size
        self._done_fd = os.open(self._done_path, os.O_RDWR | os.O_CREAT, 0o644)
        done_size = os.fstat(self._done_fd).st_size
        os.ftruncate(self._done_fd, done_size - done_size % 8)
        os.lseek(self._done_fd, 0, os.SEEK_END)

    def _scan(self) -> Iterator[tuple]:
        """(item, weight, priority, slot, fingerprint) of each complete record."""
        for item, weight, priority, slot, fingerprint, length, end in scan_log(self._path):
            if not length:
                self._lost.add(item)  # kept in memory only, by a run that is gone
            self._offsets.append(end)
            yield (item, weight, priority, slot, fingerprint)

    def _read_done(self) -> bytes:
        return read_done(self._done_path)

    def put(self, request: Request, weight: int, slot: str, fingerprint: bytes | None) -> int:
        """Log the request (or keep it in memory if it cannot be serialized); its id.
        OSError if the log cannot be written: the request is not logged then."""
        if len(self._buffer) >= BUFFER_BYTES:
            self.flush()  # first: an OSError then leaves this request unrecorded
        item = len(self)
        try:
            body = codec.encode(request, self.spider)
        except ValueError as error:
            if not self.unserializable:
                logger.warning(
                    "Unable to serialize request %s (%s): kept in memory, so lost if the crawl "
                    "stops; no more unserializable requests will be logged (stats counted)",
                    request,
                    error,
                )
            self.unserializable += 1
            self._memory[item] = request
            body = b""
        slot_bytes = slot.encode("utf-8")
        weight, priority = clip(weight, request.priority)
        head = HEADER.pack(len(body), weight, priority, fingerprint is not None, len(slot_bytes))
        record = b"".join((head, fingerprint or _NO_FP, slot_bytes, body))
        self._buffer += record
        self._offsets.append(self._offsets[-1] + len(record))
        return item

    def flush(self) -> None:
        """Hand the buffered records to the OS. On an OSError (a full disk) the file is cut
        back to its last whole record and the records stay buffered, for a later flush."""
        if self._buffer:
            try:
                _write_all(self._fd, self._buffer)
            except OSError:
                os.ftruncate(self._fd, self._flushed)
                os.lseek(self._fd, self._flushed, os.SEEK_SET)
                raise
            self._flushed = self._offsets[-1]
            self._buffer = bytearray()

    def get(self, item: int) -> Request:
        if item in self._memory:
            return self._memory.pop(item)
        start, end = self._offsets[item], self._offsets[item + 1]
        if start >= self._flushed:
            record = bytes(self._buffer[start - self._flushed : end - self._flushed])
        else:
            record = os.pread(self._fd, end - start, start)
        _, _, _, _, slot_length = HEADER.unpack_from(record)
        return codec.decode(record[HEADER.size + FP_SIZE + slot_length :], self.spider)

    def done(self, items: list[int]) -> None:
        """Record finished ids, after every record they may have pushed (write-ahead)."""
        if items:
            self.flush()
            _write_all(self._done_fd, array("Q", items).tobytes())

    def close(self) -> None:
        """Flush and close; an OSError from the flush comes after both files are closed."""
        try:
            if self._fd >= 0:
                self.flush()
        finally:
            for fd in (self._fd, self._done_fd):
                if fd >= 0:
                    os.close(fd)
            self._fd = self._done_fd = -1


def scan_log(path: Path) -> Iterator[tuple]:
    """(item, weight, priority, slot, fingerprint, body length, end offset) of each complete
    record of a request log; reads only (a running crawl's log may be read beside it)."""
    if not path.exists():
        return
    size = path.stat().st_size
    with open(path, "rb", buffering=1 << 20) as f:
        position, item = 0, 0
        while position + HEADER.size + FP_SIZE <= size:
            length, weight, priority, has_fp, slot_length = HEADER.unpack(f.read(HEADER.size))
            end = position + HEADER.size + FP_SIZE + slot_length + length
            if end > size:
                return
            rest = f.read(FP_SIZE + slot_length)
            f.seek(length, os.SEEK_CUR)
            position = end
            fingerprint = rest[:FP_SIZE] if has_fp else None
            yield (item, weight, priority, rest[FP_SIZE:].decode("utf-8", "replace"),
                   fingerprint, length, end)
            item += 1


def read_done(path: Path) -> bytes:
    """A byte per id, 1 for done (ids are read before the log: sized by the largest)."""
    if not path.exists():
        return b""
    ids = array("Q")
    blob = path.read_bytes()
    ids.frombytes(blob[: len(blob) - len(blob) % 8])
    done = bytearray(max(ids, default=-1) + 1)
    for item in ids:
        done[item] = 1
    return done


def clip(weight: int, priority: int) -> tuple[int, int]:
    """Weight and priority within the log's fields (int16, int32), kept at their bounds."""
    return max(-(2**15), min(2**15 - 1, weight)), max(-(2**31), min(2**31 - 1, priority))


def _write_all(fd: int, data: bytes | bytearray) -> None:
    """os.write may write less than asked (a signal, a full disk): write the rest."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
