"""One page.dat opened for appending records, repaired on open after a crash."""

from __future__ import annotations

import logging
import os
import shutil
import zlib
from pathlib import Path
from types import TracebackType
from typing import BinaryIO

from tianwang.formats.atomic import replacing
from tianwang.formats.lines import open_append
from tianwang.formats.record import Record, RecordError, check_file, encode_record, iter_records

logger = logging.getLogger(__name__)


class PageFile:
    """Appends records to one file; a record cut short by a crash is cut off on open.

    Only a tail is cut: damage after which nothing reads to the end of the file. The cut
    bytes are moved to ``page.dat.cut-<offset>`` beside the file rather than destroyed.
    Damage in the middle of the file costs its own span only: readers skip it, new records
    go after the last one, and `repair_file` (`tianwang records repair`) takes it out.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        compress: bool = True,
        *,
        level: int = zlib.Z_DEFAULT_COMPRESSION,
        repair: bool = True,
    ) -> None:
        self.path = Path(path)
        self.compress = compress
        self.level = level
        self.repaired_bytes = 0
        if repair:
            self._repair()
        # Unbuffered: each record reaches the OS in one write, nothing waits in a buffer.
        self._file = open_append(self.path)
        self.size = self._file.seek(0, os.SEEK_END)

    def _repair(self) -> None:
        if not self.path.exists():
            return
        size = self.path.stat().st_size
        end, damaged = check_file(self.path)
        if damaged:
            logger.warning(
                "%s: %d damaged span(s) left in place, the first %s; readers skip them, "
                "`tianwang records repair` takes them out",
                self.path, len(damaged), damaged[0],
            )
        if end < size:
            self._cut(end, size)

    def _cut(self, end: int, size: int) -> None:
        saved = self.path.with_name(f"{self.path.name}.cut-{end}")
        with open(self.path, "r+b") as file, open(saved, "ab") as keep:
            file.seek(end)
            shutil.copyfileobj(file, keep)
            file.truncate(end)
        self.repaired_bytes = size - end
        logger.warning(
            "%s: cut %d bytes of an unfinished record at offset %d (kept in %s)",
            self.path,
            size - end,
            end,
            saved.name,
        )

    def append(self, record: Record) -> int:
        """Write one record in a single write and return the offset it starts at."""
        data = encode_record(record, self.compress, self.level)  # may raise: nothing written yet
        offset = self.size
        try:
            self._write_all(data)
        except OSError:
            # A half-written record (disk full) would hide every record appended after it.
            os.ftruncate(self._file.fileno(), offset)
            raise
        self.size = offset + len(data)
        return offset

    def _write_all(self, data: bytes) -> None:
        view = memoryview(data)
        while view:  # a raw write may be partial; on a regular file it almost never is
            view = view[self._file.write(view) :]

    @property
    def closed(self) -> bool:
        return self._file.closed

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> PageFile:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def repair_file(path: str | os.PathLike[str]) -> list[RecordError]:
    """Take every damaged span out of a file; the spans taken, each kept in
    ``page.dat.cut-<offset>`` (offset in the file as it was) beside it.

    The file is rewritten beside itself and renamed into place, so a crash leaves the old
    file or the new one, never half of one.
    """
    path = Path(path)
    spans: list[RecordError] = []
    for _record in iter_records(path, on_damage=spans.append):
        pass
    if not spans:
        return spans
    with replacing(path) as out, open(path, "rb") as source:
        position = 0
        for span in spans:
            _copy(source, out, span.offset - position)
            with open(path.with_name(f"{path.name}.cut-{span.offset}"), "ab") as keep:
                _copy(source, keep, span.length or 0)
            position = span.offset + (span.length or 0)
        shutil.copyfileobj(source, out)
    return spans


def _copy(source: BinaryIO, out: BinaryIO, length: int) -> None:
    while length > 0:
        chunk = source.read(min(length, 1 << 20))
        if not chunk:
            return
        out.write(chunk)
        length -= len(chunk)
