"""Free space on the data directory's file system, and what a failed write means.

A crawl that fills its disk must stop, not go on fetching pages it cannot keep: a record is
written only while the file system keeps TIANWANG_MIN_FREE_DISK bytes free (the watermark,
as Heritrix's DiskSpaceMonitor keeps one), and any write error of the crawl's files (a full
disk, a quota, a read-only or failing file system) stops the crawl the same way.
"""

from __future__ import annotations

import errno
import os
import sqlite3

# Write errors that free space cures; any other OSError is the file system's fault.
FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})
DISK_FULL, STORAGE_ERROR = "disk_full", "storage_error"


class DiskFull(OSError):
    """The free space went below the watermark: raised before anything is written."""

    def __init__(self, path: str | os.PathLike[str], free: int, minimum: int) -> None:
        super().__init__(errno.ENOSPC,
                         f"{size(free)} free, below TIANWANG_MIN_FREE_DISK ({size(minimum)})",
                         os.fspath(path))
        self.free = free


def free_bytes(path: str | os.PathLike[str]) -> int:
    """Bytes an unprivileged process may still write on path's file system."""
    stat = os.statvfs(path)
    return stat.f_bavail * stat.f_frsize


def check_free(path: str | os.PathLike[str], minimum: int) -> None:
    """DiskFull if path's file system has less than `minimum` bytes free (0: no check)."""
    if minimum:
        free = free_bytes(path)
        if free < minimum:
            raise DiskFull(path, free, minimum)


# A failed write: of a file, or of an SQLite database (the MD5 index, the visit history).
WriteError = (OSError, sqlite3.Error)


def failure_kind(error: OSError | sqlite3.Error) -> str:
    """"disk_full" for a write that free space cures, else "storage_error"."""
    if isinstance(error, sqlite3.Error):
        full = getattr(error, "sqlite_errorname", "") == "SQLITE_FULL"
    else:
        full = error.errno in FULL_ERRNOS
    return DISK_FULL if full else STORAGE_ERROR


def describe(error: OSError | sqlite3.Error, what: str) -> str:
    """One line naming what could not be written, where and why (never the data)."""
    if isinstance(error, sqlite3.Error):
        return f"{what} not written ({getattr(error, 'sqlite_errorname', 'SQLite')}: {error})"
    name = errno.errorcode.get(error.errno or 0, "error")
    where = f" {error.filename}" if error.filename else ""
    return f"{what} not written ({name}{where}: {error.strerror or error})"


def size(count: int) -> str:
    """A byte count as people read it: 1.5 GB, 20 MB, 512 bytes."""
    for unit, scale in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if count >= scale:
            return f"{count / scale:.3g} {unit}"
    return f"{count} bytes"


def failure(error: OSError | sqlite3.Error, what: str) -> dict[str, str]:
    """The arguments of tianwang.signals.storage_failed for this error: reason, message."""
    return {"reason": failure_kind(error), "message": describe(error, what)}
