"""Global dedup of record trees: one record per body MD5 survives (seed 004 section 3.5).

The paper put 70 million MD5s into one database and waited 7 days; split into 1,024 small
ones by MD5 mod 1024, the same work took an hour, because each fits in memory. Here:

1. hash (both cores, one task per batch of input files): inflate each record, take the MD5
   of its HTTP body, and spill (md5, url, file, offset, length, date) to the work directory,
   sectioned by MD5 mod 1024. Input mirror tables are spilled the same way.
2. choose (one task per run of consecutive shards): group each shard's entries by MD5 and
   pick the survivor; the other urls of the group go to the mirror table, pointing at it.
3. copy (one task per output bucket data_<k>): copy the survivors' record bytes as they are
   (no inflate, no re-compress) into `<out>/data_<k>/<host>/page.dat`, sorted by url, and
   their links.tsv lines beside them.

Memory is bounded by one shard (1/1024 of the input), one bucket's survivors (1/256 of the
output) and one input file's batch, never by the whole input.

The survivor of a group is a rule of the group alone, so the output does not depend on how
the input was split into trees, files or workers: among the urls that have a record, the
shortest, then the first in code point order (seed 004's two duplicate kinds, `/` beside
`/default.htm` and a query string that does not change the page, both keep the plain url).
Two records of one url and one body (overlapping crawls) are one page: the later date is
kept, then the larger crc32 of the record bytes; the other is dropped without a mirror line.
A url whose body differs between inputs (it changed) keeps one record per body.

Restartable: every work file is written to a temporary name and renamed when whole; phase 1
and 2 tasks and phase 3 buckets already finished are kept by a rerun, the rest redone. The
output is complete only once `dedup.json` (the report) exists; the work directory
`<out>/.dedup-work/` marks an unfinished run.
"""

from __future__ import annotations

import fcntl
import json
import multiprocessing
import os
import re
import shutil
import signal
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from email.utils import mktime_tz, parsedate_tz
from pathlib import Path
from typing import Any

from tianwang.analysis.recordscan import scan_file
from tianwang.analysis.spill import read_sections, section_sizes, write_spill
from tianwang.formats.linkgraph import LINKS_FILE
from tianwang.formats.mirrors import MIRRORS_FILE
from tianwang.formats.record import RecordError
from tianwang.formats.store import host_bucket, host_dirname, record_files
from tianwang.urls import url_host

SHARDS = 1024  # MD5 mod 1024, as seed 004 did
BUCKETS = 256  # data_0..data_255, as the record tree has
WORK_DIR = ".dedup-work"
DONE_FILE = "dedup.json"
BATCH_BYTES = 64 << 20  # input bytes per hash task: big enough to amortize a spill write
PART_ENTRIES = 200_000  # a hash task spills every this many entries (one huge file: memory)
RANGE_BYTES = 8 << 20  # spilled bytes per choose task (its memory is a few times this)
MAX_OPEN = 64  # source files a copy task keeps open
_PART = re.compile(r"t([0-9]+)\.p([0-9]+)\Z")

Progress = Callable[[str, int, int], None]  # phase, done, total


class DedupError(Exception):
    """Something a user must fix: a bad output directory, a damaged input. Message says what."""


@dataclass
class Plan:
    trees: list[str]
    files: list[str]  # every input page.dat; a record names its file by index here
    mirrors: list[str]  # every input mirrors.tsv
    skip_damaged: bool

    def manifest(self) -> dict[str, Any]:
        """What the output depends on: the inputs as they are now, and the options."""
        stats = [os.stat(path) for path in self.files + self.mirrors]
        return {
            "format": 1,
            "trees": self.trees,
            "files": self.files,
            "mirrors": self.mirrors,
            "sizes": [[st.st_size, st.st_mtime_ns] for st in stats],
            "skip_damaged": self.skip_damaged,
        }


@dataclass
class Report:
    records: int = 0  # records read
    bytes_in: int = 0
    files: int = 0
    distinct: int = 0  # bodies: records written
    bytes_out: int = 0
    duplicates: int = 0  # records dropped because another url with their body survived
    same_url: int = 0  # records dropped because another record of the same url and body did
    mirror_lines_in: int = 0
    mirror_lines_out: int = 0
    damaged: list[list[Any]] = field(default_factory=list)  # [file, offset, reason] skipped
    seconds: float = 0.0
    resumed: bool = False

    def add(self, counts: dict[str, Any]) -> None:
        for name, value in counts.items():
            setattr(self, name, getattr(self, name) + value)


# -- the command's entry point -----------------------------------------------------------


def dedup(
    trees: Iterable[str | os.PathLike[str]],
    out: str | os.PathLike[str],
    workers: int = 2,
    skip_damaged: bool = False,
    progress: Progress | None = None,
) -> Report:
    """Dedup the record trees into out; resume an interrupted run into the same out."""
    started = time.monotonic()
    plan = make_plan(trees, skip_damaged)
    out = Path(out)
    check_out(out, plan)
    finished = _finished_report(out, plan)
    if finished is not None:
        return finished
    work = out / WORK_DIR
    with _locked(out, work):
        resumed = _start_work(work, plan)
        report = _run_phases(plan, out, work, max(1, workers), progress or _quiet)
        report.resumed = resumed
        report.seconds = time.monotonic() - started
        _finish(out, work, plan, report)
    return report


def make_plan(trees: Iterable[str | os.PathLike[str]], skip_damaged: bool) -> Plan:
    roots = [Path(tree) for tree in trees]
    for root in roots:
        if not root.is_dir():
            what = "not a directory" if root.exists() else "no such directory"
            raise DedupError(f"input {root}: {what}")
    resolved = [str(root.resolve()) for root in roots]
    if len(set(resolved)) != len(resolved):
        raise DedupError("the same input directory is given twice")
    files = [str(path.resolve()) for root in roots for path in record_files(root)]
    mirrors = [str(root.resolve() / MIRRORS_FILE) for root in roots]
    mirrors = [path for path in mirrors if os.path.isfile(path)]
    return Plan(resolved, files, mirrors, skip_damaged)


def check_out(out: Path, plan: Plan) -> None:
    """Refuse an output that is, holds or sits in an input."""
    target = out.resolve()
    for tree in map(Path, plan.trees):
        if target == tree or tree in target.parents or target in tree.parents:
            raise DedupError(f"output {out} is, holds or sits inside input {tree}")


def _finished_report(out: Path, plan: Plan) -> Report | None:
    done = out / DONE_FILE
    if not done.exists():
        return None
    stored = json.loads(done.read_text())
    if stored.get("manifest") != plan.manifest():
        raise DedupError(f"{out} already holds the finished dedup of other inputs; "
                         "remove it or choose another output")
    shutil.rmtree(out / WORK_DIR, ignore_errors=True)  # killed between done and clean-up
    return Report(**stored["report"])


class _locked:
    """One run at a time per output: a second one fails at once instead of interleaving."""

    def __init__(self, out: Path, work: Path) -> None:
        self.out, self.work = out, work

    def __enter__(self) -> None:
        self.out.mkdir(parents=True, exist_ok=True)
        if not self.work.exists() and any(self.out.iterdir()):
            raise DedupError(f"{self.out} is not empty and holds no unfinished dedup; "
                             "choose an empty or new directory")
        self.work.mkdir(exist_ok=True)
        self.file = open(self.work / "lock", "w")
        try:
            fcntl.flock(self.file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self.file.close()
            raise DedupError(f"another dedup is writing {self.out}") from None

    def __exit__(self, *exc: object) -> None:
        self.file.close()


def _start_work(work: Path, plan: Plan) -> bool:
    """Write the manifest of a new run, or check that an unfinished one is of these inputs."""
    path = work / "manifest.json"
    manifest = plan.manifest()
    if path.exists():
        if json.loads(path.read_text()) != manifest:
            raise DedupError(f"{work.parent} holds an unfinished dedup of other inputs (or the "
                             "inputs changed since); remove it to start over")
        return True
    for name in ("hash", "choose", "copy"):
        (work / name).mkdir(exist_ok=True)
    _write_atomic(path, json.dumps(manifest).encode())
    return False


def _write_atomic(path: Path, data: bytes) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def _quiet(phase: str, done: int, total: int) -> None:
    pass


def _run_phases(plan: Plan, out: Path, work: Path, workers: int, progress: Progress) -> Report:
    report = Report(files=len(plan.files))
    for counts in _hash_phase(plan, work, workers, progress):
        report.add(counts)
    parts = _hash_parts(work / "hash")
    ranges = shard_ranges([section_sizes(part)[:SHARDS] for part in parts], RANGE_BYTES)
    for counts in _choose_phase(plan, work, parts, ranges, workers, progress):
        report.add(counts)
    chosen = [work / "choose" / _range_name(first, stop) for first, stop in ranges]
    _copy_phase(plan, out, work, chosen, workers, progress)
    _write_mirrors(out, work, chosen)
    return report


def _finish(out: Path, work: Path, plan: Plan, report: Report) -> None:
    document = {"manifest": plan.manifest(), "report": report.__dict__}
    _write_atomic(out / DONE_FILE, json.dumps(document, indent=1).encode())
    shutil.rmtree(work)


# -- running tasks on both cores ---------------------------------------------------------

_PLAN: Plan | None = None  # the plan, in each worker process


def _init_worker(plan: Plan) -> None:
    global _PLAN
    _PLAN = plan
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    # A forked worker inherits the parent's handlers (an event loop's, say); the pool ends
    # a worker with SIGTERM, which must end it.
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _call(job: tuple[Callable[..., Any], tuple[Any, ...]]) -> Any:
    function, args = job
    return function(*args)


def _run_tasks(
    plan: Plan, function: Callable[..., Any], tasks: list[tuple[Any, ...]], workers: int
) -> Iterable[Any]:
    """Results of function(*task) for each task, in the order they finish."""
    if workers == 1 or len(tasks) <= 1:
        global _PLAN
        _PLAN = plan
        for task in tasks:
            yield function(*task)
        return
    with multiprocessing.Pool(min(workers, len(tasks)), _init_worker, (plan,)) as pool:
        yield from pool.imap_unordered(_call, [(function, task) for task in tasks])
        pool.close()  # let the workers end; leaving the block would terminate them
        pool.join()


# -- phase 1: hash -----------------------------------------------------------------------


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


def _hash_phase(plan: Plan, work: Path, workers: int, progress: Progress) -> list[dict]:
    sizes = [os.path.getsize(path) for path in plan.files]
    batches: list[tuple[list[int], list[str]]] = [(b, []) for b in hash_batches(sizes, BATCH_BYTES)]
    batches += [([], [mirror]) for mirror in plan.mirrors]
    done_counts, todo = [], []
    for task, (files, mirrors) in enumerate(batches):
        marker = work / "hash" / f"t{task:06d}.done"
        if marker.exists():
            done_counts.append(json.loads(marker.read_text()))
        else:
            weight = sum(sizes[i] for i in files) + sum(os.path.getsize(m) for m in mirrors)
            todo.append((weight, (str(work), task, files, mirrors)))
    todo.sort(key=lambda item: -item[0])  # largest first: the last task to finish is small
    total = sum(sizes) + sum(os.path.getsize(m) for m in plan.mirrors)
    done = total - sum(weight for weight, _task in todo)
    progress("hash", done, total)
    for counts in _run_tasks(plan, hash_task, [task for _w, task in todo], workers):
        done += counts.pop("weight")
        done_counts.append(counts)
        progress("hash", done, total)
    return done_counts


def hash_task(work: str, task: int, files: list[int], mirrors: list[str]) -> dict[str, Any]:
    """Spill every record of the files and every line of the mirror tables, by MD5 shard."""
    assert _PLAN is not None
    for stale in Path(work, "hash").glob(f"t{task:06d}.p*"):  # a killed run's parts
        stale.unlink()
    spill = _ShardSpill(Path(work) / "hash", task)
    counts: dict[str, Any] = {"records": 0, "bytes_in": 0, "mirror_lines_in": 0, "damaged": []}
    weight = 0
    for index in files:
        path = _PLAN.files[index]
        weight += os.path.getsize(path)
        for scanned in _scan(path, counts["damaged"]):
            shard = int.from_bytes(scanned.md5, "big") % SHARDS
            spill.add(shard, (scanned.md5, scanned.url, index, scanned.offset, scanned.length,
                              scanned.date, scanned.crc))
            counts["records"] += 1
            counts["bytes_in"] += scanned.length
    for path in mirrors:
        weight += os.path.getsize(path)
        for md5, duplicate, kept in _mirror_lines(path):
            spill.add(int.from_bytes(md5, "big") % SHARDS, (md5, duplicate, kept))
            counts["mirror_lines_in"] += 1
    spill.close()
    _write_atomic(Path(work) / "hash" / f"t{task:06d}.done", json.dumps(counts).encode())
    return {**counts, "weight": weight}


def _scan(path: str, damaged: list[list[Any]]) -> Iterable[Any]:
    assert _PLAN is not None
    try:
        yield from scan_file(path)
    except RecordError as exc:
        if not _PLAN.skip_damaged:
            raise DedupError(f"damaged input: {exc}\n(run `tianwang records repair` on its "
                             "tree, or pass --skip-damaged to use the records before it)") from None
        damaged.append([exc.path, exc.offset, exc.reason])
    except OSError as exc:
        raise DedupError(f"cannot read {path}: {exc.strerror}") from None


def _mirror_lines(path: str) -> Iterable[tuple[bytes, str, str]]:
    from tianwang.formats.lines import iter_lines

    for fields in iter_lines(path):
        if len(fields) == 3 and len(fields[0]) == 32 and fields[1] != fields[2]:
            try:
                yield bytes.fromhex(fields[0]), fields[1], fields[2]
            except ValueError:
                continue  # not a digest: not a line of the pinned format


class _ShardSpill:
    """A hash task's entries by shard, written out as numbered parts to bound memory."""

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
        name = f"t{self.task:06d}.p{self.parts:04d}"
        write_spill(self.directory / name, self.sections)
        self.parts += 1
        self._new()

    def close(self) -> None:
        if self.entries or not self.parts:
            self._flush()


def _hash_parts(directory: Path) -> list[Path]:
    """The spill parts of finished hash tasks, in task and part order."""
    parts = []
    for path in directory.iterdir():
        match = _PART.match(path.name)
        if match and (directory / f"t{match[1]}.done").exists():
            parts.append((int(match[1]), int(match[2]), path))
    return [path for _task, _part, path in sorted(parts)]


# -- phase 2: choose ---------------------------------------------------------------------


def shard_ranges(part_sizes: list[list[int]], limit: int) -> list[tuple[int, int]]:
    """Consecutive shards grouped so each group's spilled entries total about limit bytes."""
    per_shard = [sum(sizes[shard] for sizes in part_sizes) for shard in range(SHARDS)]
    ranges, first, total = [], 0, 0
    for shard, size in enumerate(per_shard):
        if total and total + size > limit:
            ranges.append((first, shard))
            first, total = shard, 0
        total += size
    ranges.append((first, SHARDS))
    return ranges


def _range_name(first: int, stop: int) -> str:
    return f"s{first:04d}-{stop:04d}"


def _choose_phase(
    plan: Plan, work: Path, parts: list[Path], ranges: list[tuple[int, int]], workers: int,
    progress: Progress,
) -> list[dict]:
    done_counts, todo = [], []
    for first, stop in ranges:
        path = work / "choose" / _range_name(first, stop)
        if path.exists():
            done_counts.append(read_sections(path, BUCKETS + 1, BUCKETS + 2)[0])
        else:
            todo.append((str(path), [str(part) for part in parts], first, stop))
    done = SHARDS - sum(stop - first for _p, _parts, first, stop in todo)
    progress("choose", done, SHARDS)
    for counts in _run_tasks(plan, choose_task, todo, workers):
        done += counts.pop("shards")
        done_counts.append(counts)
        progress("choose", done, SHARDS)
    return done_counts


def choose_task(path: str, parts: list[str], first: int, stop: int) -> dict[str, Any]:
    """Pick each MD5's survivor in shards first..stop-1; spill survivors by output bucket."""
    assert _PLAN is not None
    shards: list[list[tuple]] = [[] for _ in range(first, stop)]
    for part in parts:
        for offset, entries in enumerate(read_sections(part, first, stop)):
            shards[offset].extend(entries)
    keep: list[list[tuple]] = [[] for _ in range(BUCKETS)]
    lines: list[bytes] = []
    counts = {"distinct": 0, "bytes_out": 0, "duplicates": 0, "same_url": 0,
              "mirror_lines_out": 0}
    for entries in shards:
        for md5, group in sorted(_groups(entries).items()):
            _decide(md5, group, keep, lines, counts)
    write_spill(path, [*keep, b"".join(lines), counts])
    return {**counts, "shards": stop - first}


def _groups(entries: list[tuple]) -> dict[bytes, list[tuple]]:
    groups: dict[bytes, list[tuple]] = {}
    for entry in entries:
        groups.setdefault(entry[0], []).append(entry)
    return groups


def _decide(md5: bytes, group: list[tuple], keep: list[list[tuple]], lines: list[bytes],
            counts: dict[str, int]) -> None:
    records = [entry for entry in group if len(entry) == 7]
    mirrors = [entry for entry in group if len(entry) == 3]
    digest = md5.hex()
    if not records:  # a table names a kept url no input holds: carry its lines as they are
        pairs = sorted({(duplicate, kept) for _md5, duplicate, kept in mirrors})
        lines.extend(_line(digest, duplicate, kept) for duplicate, kept in pairs)
        counts["mirror_lines_out"] += len(pairs)
        return
    latest: dict[str, tuple] = {}
    for record in records:
        url = record[1]
        if url not in latest or _newer(record, latest[url]):
            latest[url] = record
    counts["same_url"] += len(records) - len(latest)
    counts["duplicates"] += len(latest) - 1
    survivor = min(latest, key=lambda url: (len(url), url))
    urls = set(latest)
    for _md5, duplicate, kept in mirrors:
        urls.update((duplicate, kept))
    urls.discard(survivor)
    lines.extend(_line(digest, url, survivor) for url in sorted(urls))
    counts["mirror_lines_out"] += len(urls)
    record = latest[survivor]
    bucket, directory = _out_place(survivor, record[2])
    keep[bucket].append((directory, survivor, md5, record[2], record[3], record[4]))
    counts["distinct"] += 1
    counts["bytes_out"] += record[4]


def _newer(record: tuple, other: tuple) -> bool:
    """Of two records of one url and body, the one to keep: later date, then larger crc."""
    return (_epoch(record[5]), record[6]) > (_epoch(other[5]), other[6])


def _epoch(date: str) -> float:
    parsed = parsedate_tz(date) if date else None
    return float("-inf") if parsed is None else float(mktime_tz(parsed))


def _line(digest: str, duplicate: str, kept: str) -> bytes:
    return f"{digest}\t{duplicate}\t{kept}\n".encode("utf-8", "surrogateescape")


def _out_place(url: str, file_index: int) -> tuple[int, str]:
    """The output bucket and host directory of url; a url with no usable host stays in the
    directory its input file was in."""
    try:
        name = host_dirname(url_host(url))
        return host_bucket(name, BUCKETS), name
    except ValueError:
        assert _PLAN is not None
        source = Path(_PLAN.files[file_index])
        return int(source.parent.parent.name.removeprefix("data_")) % BUCKETS, source.parent.name


# -- phase 3: copy -----------------------------------------------------------------------


def _copy_phase(
    plan: Plan, out: Path, work: Path, chosen: list[Path], workers: int, progress: Progress
) -> None:
    buckets = [k for k in range(BUCKETS) if not (out / f"data_{k}").exists()]
    done = BUCKETS - len(buckets)
    progress("copy", done, BUCKETS)
    tasks = [(str(out), str(work), k, [str(path) for path in chosen]) for k in buckets]
    for _k in _run_tasks(plan, copy_task, tasks, workers):
        done += 1
        progress("copy", done, BUCKETS)


def copy_task(out: str, work: str, bucket: int, chosen: list[str]) -> int:
    """Write data_<bucket> of the output: whole, under a temporary name, then renamed."""
    entries = [entry for path in chosen for entry in read_sections(path, bucket, bucket + 1)[0]]
    target = Path(out) / f"data_{bucket}"
    if not entries:
        return bucket
    tmp = Path(work) / "copy" / f"data_{bucket}"
    shutil.rmtree(tmp, ignore_errors=True)  # what a killed run left half written
    by_host: dict[str, list[tuple]] = {}
    for entry in entries:
        by_host.setdefault(entry[0], []).append(entry)
    with _Sources() as sources:
        for host in sorted(by_host):
            _copy_host(tmp / host, sorted(by_host[host], key=lambda e: (e[1], e[2])), sources)
    os.rename(tmp, target)
    return bucket


def _copy_host(directory: Path, entries: list[tuple], sources: _Sources) -> None:
    directory.mkdir(parents=True)
    with open(directory / "page.dat", "wb", buffering=1 << 20) as page:
        for _host, _url, _md5, index, offset, length in entries:
            page.write(sources.read(index, offset, length))
    lines = _links_lines(entries)
    if lines:
        (directory / LINKS_FILE).write_bytes(b"".join(lines))


def _links_lines(entries: list[tuple]) -> list[bytes]:
    """Each survivor's line of the links.tsv beside its input file (its last one), in order."""
    assert _PLAN is not None
    wanted: dict[int, set[str]] = {}
    for _host, url, _md5, index, _offset, _length in entries:
        wanted.setdefault(index, set()).add(url)
    found: dict[tuple[int, str], bytes] = {}
    for index, urls in wanted.items():
        links = Path(_PLAN.files[index]).with_name(LINKS_FILE)
        for url, line in _raw_lines(links):
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
    try:
        file = open(path, "rb")
    except FileNotFoundError:
        return
    with file:
        for raw in file:
            if raw.endswith(b"\n"):  # a line a crash cut short is not part of the table
                yield raw.split(b"\t", 1)[0].rstrip(b"\n").decode("utf-8", "surrogateescape"), raw


class _Sources:
    """Input files opened for reading by index, at most MAX_OPEN at a time."""

    def __init__(self) -> None:
        self.open: dict[int, int] = {}

    def read(self, index: int, offset: int, length: int) -> bytes:
        assert _PLAN is not None
        fd = self.open.pop(index, None)
        if fd is None:
            if len(self.open) >= MAX_OPEN:
                os.close(self.open.pop(next(iter(self.open))))
            fd = os.open(_PLAN.files[index], os.O_RDONLY)
        self.open[index] = fd
        data = os.pread(fd, length, offset)
        if len(data) != length:
            raise DedupError(f"{_PLAN.files[index]} changed during the dedup (offset {offset})")
        return data

    def __enter__(self) -> _Sources:
        return self

    def __exit__(self, *exc: object) -> None:
        for fd in self.open.values():
            os.close(fd)


def _write_mirrors(out: Path, work: Path, chosen: list[Path]) -> None:
    tmp = work / MIRRORS_FILE
    with open(tmp, "wb") as file:
        for path in chosen:
            file.write(read_sections(path, BUCKETS, BUCKETS + 1)[0])
    os.replace(tmp, out / MIRRORS_FILE)
