"""Phase 3 of global dedup: write one output bucket data_<k> from the chosen survivors.

Survivors' records are copied byte for byte (no inflate, no re-compress) into
`data_<k>/<host>/page.dat`, sorted by url, and each one's line of the links.tsv beside its
input file into the links.tsv beside it. The bucket is written under a temporary name and
renamed into the output when whole, so a bucket that exists in the output is complete.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable
from pathlib import Path

from tianwang.analysis.spill import read_sections
from tianwang.formats.lines import iter_raw_lines
from tianwang.formats.linksfile import LINKS_FILE
from tianwang.formats.mirrors import MIRRORS_FILE

BUCKETS = 256  # data_0..data_255, as the record tree has
# A choose spill file: one section of survivors per bucket, then mirror lines, then counts.
MIRRORS_SECTION = BUCKETS
COUNTS_SECTION = BUCKETS + 1
MAX_OPEN = 64  # input files a copy keeps open

# A survivor: (host directory, url, md5, input file index, offset, length)
Survivor = tuple[str, str, bytes, int, int, int]


class ChangedInput(Exception):
    """An input file is shorter than when it was read in phase 1."""


def copy_bucket(out: Path, tmp_dir: Path, bucket: int, chosen: list[str],
                files: list[str]) -> None:
    """Write out/data_<bucket> (nothing if no survivor belongs there)."""
    entries = [entry for path in chosen for entry in read_sections(path, bucket, bucket + 1)[0]]
    if not entries:
        return
    tmp = tmp_dir / f"data_{bucket}"
    shutil.rmtree(tmp, ignore_errors=True)  # what a killed run left half written
    by_host: dict[str, list[Survivor]] = {}
    for entry in entries:
        by_host.setdefault(entry[0], []).append(entry)
    with _Sources(files) as sources:
        for host in sorted(by_host):
            survivors = sorted(by_host[host], key=lambda e: (e[1], e[2]))
            _copy_host(tmp / host, survivors, sources, files)
    os.rename(tmp, out / f"data_{bucket}")


def _copy_host(directory: Path, entries: list[Survivor], sources: _Sources,
               files: list[str]) -> None:
    directory.mkdir(parents=True)
    with open(directory / "page.dat", "wb", buffering=1 << 20) as page:
        for _host, _url, _md5, index, offset, length in entries:
            page.write(sources.read(index, offset, length))
    lines = _links_lines(entries, files)
    if lines:
        (directory / LINKS_FILE).write_bytes(b"".join(lines))


def _links_lines(entries: list[Survivor], files: list[str]) -> list[bytes]:
    """Each survivor's line of the links.tsv beside its input file (its last one), in order."""
    wanted: dict[int, set[str]] = {}
    for _host, url, _md5, index, _offset, _length in entries:
        wanted.setdefault(index, set()).add(url)
    found: dict[tuple[int, str], bytes] = {}
    for index, urls in wanted.items():
        for url, line in _raw_lines(Path(files[index]).with_name(LINKS_FILE)):
            if url in urls:
                found[index, url] = line
    lines, written = [], set()
    for _host, url, _md5, index, _offset, _length in entries:
        line = found.get((index, url))
        if line is not None and url not in written:
            lines.append(line)
            written.add(url)
    return lines


def _raw_lines(path: Path) -> Iterable[tuple[str, bytes]]:
    """(url, line as stored) of each complete line of a links.tsv."""
    for raw in iter_raw_lines(path):
        yield raw.split(b"\t", 1)[0].rstrip(b"\n").decode("utf-8", "surrogateescape"), raw


class _Sources:
    """Input files opened for reading by index, at most MAX_OPEN at a time."""

    def __init__(self, files: list[str]) -> None:
        self.files = files
        self.open: dict[int, int] = {}

    def read(self, index: int, offset: int, length: int) -> bytes:
        fd = self.open.pop(index, None)
        if fd is None:
            if len(self.open) >= MAX_OPEN:
                os.close(self.open.pop(next(iter(self.open))))
            fd = os.open(self.files[index], os.O_RDONLY)
        self.open[index] = fd
        data = os.pread(fd, length, offset)
        if len(data) != length:
            raise ChangedInput(f"{self.files[index]} changed during the dedup "
                               f"(no record at offset {offset} any more)")
        return data

    def __enter__(self) -> _Sources:
        return self

    def __exit__(self, *exc: object) -> None:
        for fd in self.open.values():
            os.close(fd)


def write_mirrors(out: Path, tmp_dir: Path, chosen: list[Path]) -> None:
    """out/mirrors.tsv: the chosen files' mirror lines in shard order, renamed when whole."""
    tmp = tmp_dir / MIRRORS_FILE
    with open(tmp, "wb") as file:
        for path in chosen:
            file.write(read_sections(path, MIRRORS_SECTION, MIRRORS_SECTION + 1)[0])
    os.replace(tmp, out / MIRRORS_FILE)
