"""Phase 1 of global dedup: read records, take their body MD5, spill them by MD5 shard.

A task is a batch of input files (about BATCH_BYTES) or one input mirror table. Its entries
go to spill parts `t<task>.p<n>` sectioned by MD5 mod 1024 (seed 004's 1,024 databases),
a part every PART_ENTRIES entries so one huge file does not fill memory; `t<task>.done`, with
the task's counts, is written last. A task without it is redone from scratch by a rerun.

    record entry: (md5, url, file index, offset, length, date, crc32 of the record bytes)
    mirror entry: (md5, duplicate url, kept url)
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from tianwang.analysis.recordscan import Scanned, scan_file
from tianwang.analysis.spill import write_spill
from tianwang.formats.atomic import write_atomic
from tianwang.formats.lines import iter_lines
from tianwang.formats.record import RecordError

SHARDS = 1024  # MD5 mod 1024, as seed 004 did
PART_ENTRIES = 200_000  # entries per spill part (a few tens of MB in memory)
_PART = re.compile(r"t([0-9]+)\.p([0-9]+)\Z")


class DamagedInput(Exception):
    """A record file with a bad record, when damage is not to be skipped."""


def shard_of(md5: bytes) -> int:
    return int.from_bytes(md5, "big") % SHARDS


def hash_batches(sizes: list[int], limit: int) -> list[list[int]]:
    """Consecutive file indexes grouped so each group holds about limit bytes."""
    batches: list[list[int]] = []
    current: list[int] = []
    total = 0
    for index, size in enumerate(sizes):
        current.append(index)
        total += size
        if total >= limit:
            batches.append(current)
            current, total = [], 0
    if current:
        batches.append(current)
    return batches


def hash_batch(directory: Path, task: int, files: list[tuple[int, str]], mirrors: list[str],
               skip_damaged: bool) -> dict[str, Any]:
    """Spill every record of the files (index, path) and every line of the mirror tables."""
    for stale in directory.glob(f"t{task:06d}.p*"):  # a killed run's parts of this task
        stale.unlink()
    spill = _ShardSpill(directory, task)
    counts: dict[str, Any] = {"records": 0, "bytes_in": 0, "mirror_lines_in": 0, "damaged": []}
    for index, path in files:
        for scanned in _scan(path, counts["damaged"], skip_damaged):
            spill.add(shard_of(scanned.md5), (scanned.md5, scanned.url, index, scanned.offset,
                                              scanned.length, scanned.date, scanned.crc))
            counts["records"] += 1
            counts["bytes_in"] += scanned.length
    for path in mirrors:
        for md5, duplicate, kept in _mirror_lines(path):
            spill.add(shard_of(md5), (md5, duplicate, kept))
            counts["mirror_lines_in"] += 1
    spill.close()
    write_atomic(directory / f"t{task:06d}.done", json.dumps(counts).encode())
    return counts


def finished_counts(directory: Path, task: int) -> dict[str, Any] | None:
    """The counts of a task a previous run finished, or None."""
    marker = directory / f"t{task:06d}.done"
    return json.loads(marker.read_text()) if marker.exists() else None


def hash_parts(directory: Path) -> list[Path]:
    """The spill parts of finished tasks, in task and part order."""
    parts = []
    for path in directory.iterdir():
        match = _PART.match(path.name)
        if match and (directory / f"t{match[1]}.done").exists():
            parts.append((int(match[1]), int(match[2]), path))
    return [path for _task, _part, path in sorted(parts)]


def _scan(path: str, damaged: list[list[Any]], skip_damaged: bool) -> Iterator[Scanned]:
    def skip(span: RecordError) -> None:
        damaged.append([span.path, span.offset, span.reason])

    try:
        yield from scan_file(path, on_damage=skip if skip_damaged else None)
    except RecordError as exc:
        raise DamagedInput(f"damaged input: {exc}\n(run `tianwang records repair` on its "
                           "tree, or pass --skip-damaged to use every record that reads)"
                           ) from None
    except OSError as exc:
        raise DamagedInput(f"cannot read {path}: {exc.strerror}") from None


def _mirror_lines(path: str) -> Iterable[tuple[bytes, str, str]]:
    for fields in iter_lines(path):
        if len(fields) == 3 and len(fields[0]) == 32 and fields[1] != fields[2]:
            try:
                yield bytes.fromhex(fields[0]), fields[1], fields[2]
            except ValueError:
                continue  # not a digest: not a line of the pinned format


class _ShardSpill:
    """A task's entries by shard, written out as numbered parts to bound memory."""

    def __init__(self, directory: Path, task: int) -> None:
        self.directory, self.task = directory, task
        self.parts = 0
        self._new()

    def _new(self) -> None:
        self.sections: list[list[tuple]] = [[] for _ in range(SHARDS)]
        self.entries = 0

    def add(self, shard: int, entry: tuple) -> None:
        self.sections[shard].append(entry)
        self.entries += 1
        if self.entries >= PART_ENTRIES:
            self._flush()

    def _flush(self) -> None:
        write_spill(self.directory / f"t{self.task:06d}.p{self.parts:04d}", self.sections)
        self.parts += 1
        self._new()

    def close(self) -> None:
        if self.entries or not self.parts:
            self._flush()
