"""Append-only text tables of tab-separated lines, safe against a crash mid-write.

The mirror table and the link graph are such tables. A line is complete only with its
final "\\n": a line a crash cut short is ignored by readers and cut off (and kept in
`<name>.cut-<offset>`) when the file is next opened for appending, so nothing before it is
lost and nothing half-written is ever read. Fields are urls (percent-encoded, so they hold
no tab or newline) and hex digests.
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
from collections.abc import Callable, Iterable, Iterator
from io import FileIO
from pathlib import Path
from types import TracebackType

logger = logging.getLogger(__name__)


class LineError(ValueError):
    """A field that would break the table (a tab or newline inside it)."""


def iter_lines(path: str | os.PathLike[str]) -> Iterator[list[str]]:
    """The fields of every complete line of a table; nothing if the file does not exist."""
    for raw in iter_raw_lines(path):
        yield raw[:-1].decode("utf-8", "surrogateescape").split("\t")


def iter_raw_lines(path: str | os.PathLike[str]) -> Iterator[bytes]:
    """Every complete line of a table as stored, newline included; nothing if no file."""
    try:
        file = open(path, "rb")
    except FileNotFoundError:
        return
    with file:
        for raw in file:
            if raw.endswith(b"\n"):  # the last line of a crashed writer may lack it
                yield raw


def complete_end(path: str | os.PathLike[str]) -> int:
    """The offset just after the last complete line (0 for a missing or empty file)."""
    try:
        with open(path, "rb") as file:
            size = file.seek(0, os.SEEK_END)
            position = size
            while position > 0:
                step = min(65536, position)
                file.seek(position - step)
                chunk = file.read(step)
                newline = chunk.rfind(b"\n")
                if newline >= 0:
                    return position - step + newline + 1
                position -= step
            return 0
    except FileNotFoundError:
        return 0


def prune_lines(path: str | os.PathLike[str], keep: Callable[[list[str]], bool]) -> int:
    """Rewrite a table without the complete lines `keep` refuses; how many were dropped.

    The dropped lines go to `<name>.cut-pruned` beside it, and the table is written beside
    itself and renamed into place, so a crash leaves the old table or the new one.
    """
    path = Path(path)
    if not path.exists():
        return 0
    dropped: list[bytes] = []
    handle, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as out:
            for raw in iter_raw_lines(path):
                fields = raw[:-1].decode("utf-8", "surrogateescape").split("\t")
                if keep(fields):
                    out.write(raw)
                else:
                    dropped.append(raw)
        if dropped:
            with open(path.with_name(f"{path.name}.cut-pruned"), "ab") as aside:
                aside.writelines(dropped)
            os.replace(temp, path)
        else:
            os.unlink(temp)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
    return len(dropped)


def encode_line(fields: Iterable[str]) -> bytes:
    fields = list(fields)
    for field in fields:
        if "\t" in field or "\n" in field or "\r" in field:
            raise LineError(f"field {field!r} holds a tab or a line break")
    return ("\t".join(fields) + "\n").encode("utf-8", "surrogateescape")


def open_append(path: Path) -> FileIO:
    """path opened unbuffered for appending, its directory made if missing (tried second:
    a crawl reopens a host's file far more often than it makes one)."""
    try:
        return open(path, "ab", buffering=0)
    except FileNotFoundError:
        path.parent.mkdir(parents=True, exist_ok=True)
        return open(path, "ab", buffering=0)


class LineLog:
    """One table opened for appending; each line reaches the OS in a single write."""

    def __init__(self, path: str | os.PathLike[str], repair: bool = True) -> None:
        """repair: cut an unfinished last line first (once a session is enough for a file
        only this process writes to between a close and a reopen)."""
        self.path = Path(path)
        self.repaired_bytes = self._repair() if repair else 0
        self._file = open_append(self.path)

    def _repair(self) -> int:
        if not self.path.exists():
            return 0
        size = self.path.stat().st_size
        end = complete_end(self.path)
        if end == size:
            return 0
        saved = self.path.with_name(f"{self.path.name}.cut-{end}")
        with open(self.path, "r+b") as file, open(saved, "ab") as keep:
            file.seek(end)
            shutil.copyfileobj(file, keep)
            file.truncate(end)
        logger.warning("%s: cut an unfinished line of %d bytes at offset %d (kept in %s)",
                       self.path, size - end, end, saved.name)
        return size - end

    def append(self, fields: Iterable[str]) -> None:
        self._write(encode_line(fields))  # encoding may raise: nothing written yet

    def append_many(self, rows: Iterable[Iterable[str]]) -> None:
        """Several lines in one write (a crash may still cut the last one: readers skip it)."""
        self._write(b"".join(encode_line(row) for row in rows))

    def _write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:  # a raw write may be partial; on a regular file it almost never is
            view = view[self._file.write(view):]

    @property
    def closed(self) -> bool:
        return self._file.closed

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> LineLog:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()
