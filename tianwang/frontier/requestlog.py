"""Where the frontier keeps its requests: in memory, or in an append-only log under JOBDIR.

The log (``requests.log``) holds one record per request ever pushed, in push order; a
request's id is its record number (and written in its record). A second file
(``done.log``) holds the ids of requests whose processing finished (downloaded, parsed,
their items stored and their links pushed).
On resume, pending = pushed - done, in the original order. Once most of the log is done it
is compacted: rewritten with the pending requests only (their ids kept) and done.log
emptied, so that neither grows with the crawl's length. The Bloom filter is saved before,
as the log no longer holds the done requests' urls it would be rebuilt from.

Crash safety (SIGKILL, not power loss): the write-ahead rule. New records are buffered
and written to the OS (no fsync) before any done id is, and done ids are written at once.
A request is marked done only after the engine has finished with it (response parsed,
items stored, links pushed), so a kill loses only records whose parent is not done: that
parent is fetched again on resume and pushes them again (the Bloom filter is rebuilt from
its checkpoint, which covers only records written, and the records after it, so it does
not refuse them). A kill can therefore only make the requests in flight at that moment be
fetched again. Start requests lost this way are re-yielded by the
spider on resume. A record cut short by a kill is dropped on resume. A power cut may lose
the last seconds of both files; the rule then holds only as far as the disk keeps order.

The records' layout, their checksums and what a damaged log reads as are
tianwang/formats/requestlog.py's. A damaged span is skipped and the requests it hid are
lost (counted, said at resume); the requests after it are read with their own ids.
"""

from __future__ import annotations

import logging
import os
from array import array
from bisect import bisect_left
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from scrapy import Request, Spider

from tianwang.formats.requestlog import (
    MAGIC,
    MAX_ID,
    Done,
    Head,
    Record,
    body_of,
    clip,
    is_current,
    pack,
    pack_head,
    read_done,
    read_head,
    scan_log,
    v1_records,
)
from tianwang.frontier import codec

logger = logging.getLogger(__name__)

# Records buffered before a write; a done id always writes them first.
BUFFER_BYTES = 1 << 20
# The log is compacted once the records done take more than this many bytes and three times
# what the records not done take (TIANWANG_LOG_COMPACT_MB): a log at most four times what is
# pending, each byte copied at most a third of a time per byte logged.
COMPACT_RATIO = 3
# Bytes copied at once while compacting.
COPY_BYTES = 1 << 20


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
    """Requests in ``<directory>/requests.log``, finished ids in ``done.log``; the log
    compacted (``compact``) once most of it is done."""

    def __init__(self, directory: Path, spider: Spider, compact_after: int | None = None) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.directory = directory
        self.spider = spider
        # Bytes of records done, at least, to compact (TIANWANG_LOG_COMPACT_MB); None: never.
        self.compact_after = compact_after
        self._path = directory / "requests.log"
        self._done_path = directory / "done.log"
        self._places = Places()  # where each record not done yet is
        self._count = 0  # records (ids) so far
        self._start = len(MAGIC)  # where the records start (after a compacted log's head)
        self._end = len(MAGIC)  # where the next record goes
        self._head: Head | None = None  # a compacted log's, as read on resume
        self._memory: dict[int, Request] = {}  # requests that cannot be serialized
        self.unserializable = 0
        self._lost: set[int] = set()  # unserializable requests of an earlier run
        # Damaged spans met on resume: (start, end, ids hidden), left in place; the hidden
        # ids done.log does not mark done (requests lost).
        self.damaged: list[tuple[int, int, int]] = []
        self.hidden_pending = 0
        self._after_damage = False
        self._fd = -1
        self._done_fd = -1
        self._buffer = bytearray()  # records not yet written, from offset _flushed on
        self._flushed = 0
        self._postponed = 0  # dead bytes below which a compaction that failed is not tried

    def __len__(self) -> int:
        return self._count

    @property
    def mark(self) -> int:
        """The ids logged before the log's last compaction (0 if never compacted)."""
        return self._head.mark if self._head is not None else 0

    def open(self, visit: Callable[[LogEntry], None]) -> None:
        """Read the log, calling ``visit`` for every record in push order, then open it.

        A record cut short by a kill is dropped; so are done ids past the log's end. A
        damaged span is skipped (``damaged``); a log of the format before is rewritten.
        """
        self._partial.unlink(missing_ok=True)  # a compaction a kill cut short
        if not is_current(self._path):
            self._rewrite_v1()
        if self._path.exists():
            self._head, self._start = read_head(self._path)
        done = read_done(self._done_path)
        for entry in self._scan(done):
            finished = entry.item in self._lost or entry.item in done
            if not finished:
                self._places.add(entry.item, entry.start, entry.end)
            visit(LogEntry(*entry[:5], done=finished))
        size = self._end
        self._fd = os.open(self._path, os.O_RDWR | os.O_CREAT, 0o644)
        os.ftruncate(self._fd, size)
        if size == len(MAGIC) and self._head is None:  # a new log (or one cut in its first record)
            os.pwrite(self._fd, MAGIC, 0)
        os.lseek(self._fd, size, os.SEEK_SET)
        self._flushed = size
        self._open_done(done)

    def _open_done(self, done: Done) -> None:
        """done.log opened to append; ids past the log's last record (a log cut back, or
        restored older than done.log) dropped first, or they would mark new requests done."""
        if len(done.between(self._count, MAX_ID + 1)):
            partial = self._done_path.with_name(self._done_path.name + ".partial")
            partial.write_bytes(done.between(0, self._count).tobytes())
            os.replace(partial, self._done_path)
        self._done_fd = os.open(self._done_path, os.O_RDWR | os.O_CREAT, 0o644)
        done_size = os.fstat(self._done_fd).st_size
        os.ftruncate(self._done_fd, done_size - done_size % 8)
        os.lseek(self._done_fd, 0, os.SEEK_END)

    def _scan(self, done: Done) -> Iterator[Record]:
        """Each record that reads; an id a damaged span hid is never read, and counted in
        ``hidden_pending`` if it may have been pending and done.log does not mark it done."""
        self._end, expected = self._start, 0
        for record in scan_log(self._path, self._damaged):
            if not record.length:
                self._lost.add(record.item)  # kept in memory only, by a run that is gone
            if self._after_damage:
                self._after_damage = False
                self.hidden_pending += self._hidden_pending(expected, record.item, done)
            self._end, expected = record.end, record.item + 1
            yield record
        # A compacted log's ids go on from its mark, whether or not records follow its head.
        self._count = max(expected, self.mark)

    def _hidden_pending(self, low: int, high: int, done: Done) -> int:
        """The ids in [low, high) a damaged span hid that were pending: below a compacted
        log's mark, only the ids its head kept had a record."""
        head = self._head
        if head is None:
            return high - low - len(done.between(low, high))
        return head.count_pending(low, high) - sum(
            map(head.may_be_pending, done.between(low, high)))

    def _damaged(self, start: int, end: int, hidden: int) -> None:
        self.damaged.append((start, end, hidden))
        self._after_damage = True

    def _rewrite_v1(self) -> None:
        """A log of format 1 (no ids, no checksums) in this format, ids kept."""
        partial = self._path.with_name(self._path.name + ".partial")
        with open(partial, "wb") as out:
            out.write(MAGIC)
            for record, body in v1_records(self._path):
                out.write(pack(record.item, record.weight, record.priority, record.fingerprint,
                               record.slot.encode("utf-8"), body))
        os.replace(partial, self._path)
        logger.info("Request log %s rewritten with checksums (it was of an earlier version)",
                    self._path)

    def put(self, request: Request, weight: int, slot: str, fingerprint: bytes | None) -> int:
        """Log the request (or keep it in memory if it cannot be serialized); its id.
        OSError if the log cannot be written: the request is not logged then."""
        if len(self._buffer) >= BUFFER_BYTES:
            self.flush()  # first: an OSError then leaves this request unrecorded
        item = self._count
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
        weight, priority = clip(weight, request.priority)
        record = pack(item, weight, priority, fingerprint, slot.encode("utf-8"), body)
        self._buffer += record
        start, self._end = self._end, self._end + len(record)
        self._places.add(item, start, self._end)
        self._count += 1
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
            self._flushed = self._end
            self._buffer = bytearray()

    def get(self, item: int) -> Request:
        if item in self._memory:
            return self._memory.pop(item)
        start, end = self._places.find(item)
        if start >= self._flushed:
            record = bytes(self._buffer[start - self._flushed : end - self._flushed])
        else:
            record = os.pread(self._fd, end - start, start)
        return codec.decode(body_of(record), self.spider)

    def done(self, items: list[int]) -> None:
        """Record finished ids, after every record they may have pushed (write-ahead)."""
        if items:
            self.flush()
            _write_all(self._done_fd, array("Q", items).tobytes())
            for item in items:
                self._places.drop(item)

    @property
    def size(self) -> int:
        """The log's bytes, its buffer's included."""
        return self._end

    @property
    def pending(self) -> int:
        """Requests logged and not done."""
        return len(self._places)

    @property
    def needs_compaction(self) -> bool:
        """Whether the records done take enough of the log to rewrite it without them."""
        if self.compact_after is None:
            return False
        dead = self._end - self._start - self._places.bytes
        return dead > max(self.compact_after, COMPACT_RATIO * self._places.bytes, self._postponed)

    def postpone_compaction(self) -> None:
        """A compaction failed: not tried again before twice as much of the log is done."""
        self._postponed = 2 * (self._end - self._start - self._places.bytes)

    def compact(self) -> None:
        """Rewrite the log with only the records not done, ids kept, and empty done.log: the
        log's size and a resume's reading follow what is pending, not the crawl's length.
        Written beside, synced, then renamed over the log: a kill at any point leaves the
        old log or the new one whole (the done ids the old one needed, the new one needs
        none of). On an OSError (a full disk) the log is left as it was."""
        self.flush()
        kept = array("I", self._places.ids())
        head = pack_head(self._count, kept)
        try:
            places, end = self._write_compacted(head)
        except OSError:
            self._partial.unlink(missing_ok=True)
            raise
        self._head, self._postponed = Head(self._count, kept), 0
        self._places, self._start, self._end, self._flushed = places, len(head), end, end
        try:  # every id done.log holds names a record now gone: harmless if it stays
            os.ftruncate(self._done_fd, 0)
            os.lseek(self._done_fd, 0, os.SEEK_SET)
        except OSError:
            os.lseek(self._done_fd, 0, os.SEEK_END)

    def _write_compacted(self, head: bytes) -> tuple[Places, int]:
        """The head and the records not done written beside the log, synced, renamed over
        it; where each record now is, and the log's end."""
        places = Places()
        fd = os.open(self._partial, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            _write_all(fd, head)
            position = len(head)
            for start, end, records in self._places.runs(COPY_BYTES):
                _write_all(fd, os.pread(self._fd, end - start, start))
                for item, length in records:
                    places.add(item, position, position + length)
                    position += length
            os.fsync(fd)
            os.replace(self._partial, self._path)
        except OSError:
            os.close(fd)
            raise
        os.close(self._fd)
        self._fd = fd
        _sync_directory(self.directory)
        return places, position

    @property
    def _partial(self) -> Path:
        return self._path.with_name(self._path.name + ".partial")

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


class Places:
    """Where the log's records not done yet are: ids ascending (records are logged in id
    order), each one's start and end. A record done is marked (its start -1) and the arrays
    rebuilt without the marked once they are half of them: 24 bytes a request not done,
    none for the requests a long crawl is done with."""

    def __init__(self) -> None:
        self._ids = array("q")
        self._starts = array("q")
        self._ends = array("q")
        self._dropped = 0
        self.bytes = 0  # of the records not done

    def __len__(self) -> int:
        return len(self._ids) - self._dropped

    def add(self, item: int, start: int, end: int) -> None:
        """A record not done; its id above every id added so far."""
        self._ids.append(item)
        self._starts.append(start)
        self._ends.append(end)
        self.bytes += end - start

    def ids(self) -> Iterator[int]:
        """The ids not done, ascending."""
        return (item for item, start in zip(self._ids, self._starts, strict=True) if start >= 0)

    def runs(self, most: int) -> Iterator[tuple[int, int, list[tuple[int, int]]]]:
        """The records not done as runs of adjacent ones, each at most ``most`` bytes (or one
        record): (start, end, [(id, length), ...])."""
        run: list[tuple[int, int]] = []
        first = last = 0
        for item, start, end in zip(self._ids, self._starts, self._ends, strict=True):
            if start < 0:
                continue
            if run and (start != last or end - first > most):
                yield first, last, run
                run = []
            if not run:
                first = start
            run.append((item, end - start))
            last = end
        if run:
            yield first, last, run

    def find(self, item: int) -> tuple[int, int]:
        """(start, end) of a record not done; KeyError for one done or never logged."""
        at = self._index(item)
        if at < 0:
            raise KeyError(item)
        return self._starts[at], self._ends[at]

    def drop(self, item: int) -> None:
        """The record is done (nothing if it was, or was never added)."""
        at = self._index(item)
        if at < 0:
            return
        self.bytes -= self._ends[at] - self._starts[at]
        self._starts[at] = -1
        self._dropped += 1
        if self._dropped * 2 > len(self._ids):
            kept = [i for i, start in enumerate(self._starts) if start >= 0]
            self._ids = array("q", [self._ids[i] for i in kept])
            self._starts = array("q", [self._starts[i] for i in kept])
            self._ends = array("q", [self._ends[i] for i in kept])
            self._dropped = 0

    def _index(self, item: int) -> int:
        """Where a record not done is in the arrays, or -1."""
        at = bisect_left(self._ids, item)
        if at == len(self._ids) or self._ids[at] != item or self._starts[at] < 0:
            return -1
        return at


def _sync_directory(directory: Path) -> None:
    """A rename made durable, where the file system can (the log compacted replaces the one
    that held the done requests); the rename is done either way."""
    try:
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError:
        pass


def _write_all(fd: int, data: bytes | bytearray) -> None:
    """os.write may write less than asked (a signal, a full disk): write the rest."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
