"""The record tree: `<data dir>/data_<k>/<host>/page.dat`, k a stable hash of the host."""

from __future__ import annotations

import hashlib
import os
import zlib
from collections import OrderedDict
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType

from tianwang.formats.diskspace import check_free
from tianwang.formats.pagefile import PageFile
from tianwang.formats.record import OnDamage, Record, iter_records

_UNSAFE = frozenset("/\\\0")


def host_bucket(host: str, buckets: int = 256) -> int:
    """md5 of the lowercased host, first four bytes big-endian, mod buckets.

    md5, not hash(): Python salts str hashes per process, and the bucket must not move.
    """
    if buckets < 1:
        raise ValueError(f"buckets must be at least 1, not {buckets}")
    return int.from_bytes(hashlib.md5(host.lower().encode()).digest()[:4], "big") % buckets


def host_dirname(host: str) -> str:
    """The host as a directory name: lowercased, a port as `host_8080`; ValueError if unsafe."""
    name = host.lower().replace(":", "_")
    unsafe = any(c in _UNSAFE or c.isspace() or not c.isprintable() for c in name)
    if name in ("", ".", "..") or unsafe:
        raise ValueError(f"host {host!r} is not safe as a directory name")
    return name


def page_path(data_dir: str | os.PathLike[str], host: str) -> Path:
    """Where the host's records live; k is taken from the directory name, so a path alone
    says which bucket it must be in."""
    dirname = host_dirname(host)
    return Path(data_dir) / f"data_{host_bucket(dirname)}" / dirname / "page.dat"


def check_writable(data_dir: str | os.PathLike[str]) -> None:
    """OSError unless a file can be made in data_dir: a directory that exists is not yet
    one the crawl can write (read-only file system, another owner, mode 555)."""
    probe = Path(data_dir) / f".write-check-{os.getpid()}"
    with open(probe, "wb"):
        pass
    probe.unlink()


def record_files(data_dir: str | os.PathLike[str]) -> list[Path]:
    """Every `data_*/*/page.dat` under data_dir, sorted."""
    return sorted(path for path in Path(data_dir).glob("data_*/*/page.dat") if path.is_file())


def iter_tree(
    data_dir: str | os.PathLike[str], on_damage: OnDamage | None = None
) -> Iterator[tuple[Path, Record]]:
    """Every record of the tree with its file; RecordError (naming the file) on a bad one,
    or, given on_damage, each damaged span to it and the reading goes on."""
    for path in record_files(data_dir):
        for record in iter_records(path, on_damage=on_damage):
            yield path, record


class RecordStore:
    """Appends records to their hosts' page.dat, keeping at most max_open files open, and
    only while the file system keeps min_free bytes free (else DiskFull, nothing written)."""

    def __init__(
        self,
        data_dir: str | os.PathLike[str],
        compress: bool = True,
        max_open: int = 64,
        level: int = zlib.Z_DEFAULT_COMPRESSION,
        min_free: int = 0,
    ) -> None:
        if max_open < 1:
            raise ValueError(f"max_open must be at least 1, not {max_open}")
        self.data_dir = Path(data_dir)
        self.compress = compress
        self.level = level
        self.max_open = max_open
        self.min_free = min_free
        self.records = 0
        self.bytes_written = 0
        self._open: OrderedDict[Path, PageFile] = OrderedDict()
        # Each host's file, computed once (an md5 and a name check per record add up). A
        # file in here was also repaired already: repair reads a whole file, and once per
        # session is enough, since only we write to it between a close and a reopen.
        self._paths: dict[str, Path] = {}

    def write(self, host: str, record: Record) -> tuple[Path, int]:
        """Append record to host's page.dat; return the file and the record's offset.
        OSError (DiskFull below the watermark) when it cannot be: nothing is written then."""
        check_free(self.data_dir, self.min_free)
        page = self._page(host.lower())
        offset = page.append(record)
        self.records += 1
        self.bytes_written += page.size - offset
        return page.path, offset

    def _page(self, host: str) -> PageFile:
        path = self._paths.get(host)
        page = self._open.get(path) if path is not None else None
        if page is not None:
            self._open.move_to_end(path)
            return page
        while len(self._open) >= self.max_open:
            _path, oldest = self._open.popitem(last=False)
            oldest.close()
        first_open = path is None
        if path is None:
            path = self._paths[host] = page_path(self.data_dir, host)
        page = self._open[path] = PageFile(path, self.compress, level=self.level, repair=first_open)
        return page

    @property
    def hosts(self) -> set[str]:
        """The hosts whose file this store opened (to write to it) in this session."""
        return set(self._paths)

    @property
    def open_files(self) -> int:
        return len(self._open)

    def close(self) -> None:
        while self._open:
            _path, page = self._open.popitem()
            page.close()

    def __enter__(self) -> RecordStore:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
