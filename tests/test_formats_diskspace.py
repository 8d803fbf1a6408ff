"""Free space and failed writes (tianwang/formats/diskspace.py)."""

from __future__ import annotations

import errno
import sqlite3
from pathlib import Path

import pytest

from tianwang.formats.diskspace import (
    DISK_FULL,
    STORAGE_ERROR,
    DiskFull,
    check_free,
    describe,
    failure,
    failure_kind,
    free_bytes,
    size,
)
from tianwang.formats.record import Record
from tianwang.formats.store import RecordStore


def test_below_the_watermark_nothing_is_written(tmp_path: Path) -> None:
    free = free_bytes(tmp_path)
    check_free(tmp_path, 0)  # no watermark: never refuses
    check_free(tmp_path, free // 2)
    store = RecordStore(tmp_path, min_free=free * 2)
    with pytest.raises(DiskFull) as refused:
        store.write("www.example.com", Record(url="http://www.example.com/", data=b"x"))
    assert refused.value.errno == errno.ENOSPC and failure_kind(refused.value) == DISK_FULL
    assert "below TIANWANG_MIN_FREE_DISK" in str(refused.value)
    assert not list(tmp_path.glob("data_*"))  # not even the host's directory


@pytest.mark.parametrize(("error", "kind"), [
    (OSError(errno.ENOSPC, "No space left on device"), DISK_FULL),
    (OSError(errno.EDQUOT, "Disk quota exceeded"), DISK_FULL),
    (OSError(errno.EIO, "Input/output error"), STORAGE_ERROR),
    (OSError(errno.EROFS, "Read-only file system"), STORAGE_ERROR),
])
def test_a_failed_write_says_whether_room_would_cure_it(error: OSError, kind: str) -> None:
    assert failure_kind(error) == kind
    said = failure(error, "record")
    assert said["reason"] == kind and "\n" not in said["message"]
    assert said["message"].startswith(f"record not written ({errno.errorcode[error.errno]}")


def test_sqlite_says_so_too(tmp_path: Path) -> None:
    full = sqlite3.OperationalError("database or disk is full")
    full.sqlite_errorname = "SQLITE_FULL"  # as sqlite3 sets it on Python 3.11
    assert failure_kind(full) == DISK_FULL
    assert describe(full, "MD5 index") == (
        "MD5 index not written (SQLITE_FULL: database or disk is full)")
    assert failure_kind(sqlite3.OperationalError("disk I/O error")) == STORAGE_ERROR


def test_sizes_read_as_people_say_them() -> None:
    assert [size(n) for n in (512, 20 * 2**20, 3 * 2**29)] == ["512 bytes", "20 MB", "1.5 GB"]
