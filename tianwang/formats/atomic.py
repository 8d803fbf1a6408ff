"""Writing a file whole or not at all: a tool never leaves a half file in place of a good one.

Pure python.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO


def write_atomic(path: Path, data: bytes) -> None:
    """A small file, whole or not at all."""
    tmp = path.with_name(path.name + ".tmp")
    try:
        tmp.write_bytes(data)
        os.replace(tmp, path)
    except OSError:  # a full disk: the file as it was, no half-written one beside it
        tmp.unlink(missing_ok=True)
        raise


@contextmanager
def replacing(path: Path) -> Iterator[BinaryIO]:
    """A file written beside `path` (a hidden temp file in its directory), synced and renamed
    over it when the block ends cleanly, removed when it raises: a large file streamed out
    whole or not at all."""
    handle, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as out:
            yield out
            out.flush()
            os.fchmod(out.fileno(), _mode_for(path))
            os.fsync(out.fileno())
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


def _mode_for(path: Path) -> int:
    """The mode a file replaced keeps; a new one gets what open() would give it (0666 less
    the umask), not mkstemp's private 0600."""
    try:
        return path.stat().st_mode & 0o7777
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask
