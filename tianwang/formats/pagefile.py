"""One page.dat opened for appending records, repaired on open after a crash."""

from __future__ import annotations

import logging
import os
import shutil
import zlib
from pathlib import Path
from types import TracebackType

from tianwang.formats.record import Record, encode_record, valid_end

logger = logging.getLogger(__name__)


class PageFile:
    """Appends records to one file; a record cut short by a crash is cut off on open.

    The cut bytes are moved to ``page.dat.cut-<offset>`` beside the file rather than
    destroyed: a crash leaves only a useless partial record there, but damage in the middle
    of a file would otherwise take every good record after it.
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
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if repair:
            self._repair()
        # Unbuffered: each record reaches the OS in one write, nothing waits in a buffer.
        self._file = open(self.path, "ab", buffering=0)
        self.size = self._file.seek(0, os.SEEK_END)

    def _repair(self) -> None:
        if not self.path.exists():
            return
        size = self.path.stat().st_size
        end = valid_end(self.path)
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
            "%s: cut %d bytes of a damaged or unfinished record at offset %d (kept in %s)",
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
