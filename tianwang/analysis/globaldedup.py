"""Global dedup of record trees: one record per body MD5 survives (seed 004 section 3.5).

The paper put 70 million MD5s into one database and waited 7 days; split into 1,024 small
ones by MD5 mod 1024, the same work took an hour, because each fits in memory. Here:

1. hash (hasher.py; one task per batch of input files): inflate each record, take the MD5
   of its HTTP body, and spill (md5, url, file, offset, length, date) to the work directory,
   sectioned by MD5 mod 1024. Input mirror tables are spilled the same way.
2. choose (one task per run of consecutive shards): group each shard's entries by MD5 and
   pick the survivor (survivor.py); the group's other urls go to the mirror table.
3. copy (copier.py; one task per output bucket data_<k>): copy the survivors' record bytes
   as they are (no inflate, no re-compress) into `<out>/data_<k>/<host>/page.dat`, sorted by
   url, with their links.tsv lines beside them.

Tasks run on every core (multiprocessing). Memory is bounded by one run of shards (at least
1/1024 of the input), one bucket's survivors (1/256 of the output) and one spill part of a
hash task, never by the whole input.

The survivor of a body is a rule of its group alone (tianwang/analysis/survivor.py: the
shortest url with a record, then the first in code point order), so the output does not depend
on how the input was split into trees, files or workers.

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
import shutil
import signal
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tianwang.analysis.copier import (
    BUCKETS,
    COUNTS_SECTION,
    ChangedInput,
    copy_bucket,
    write_mirrors,
)
from tianwang.analysis.hasher import (
    SHARDS,
    DamagedInput,
    finished_counts,
    hash_batch,
    hash_batches,
    hash_parts,
)
from tianwang.analysis.spill import read_sections, section_sizes, write_spill
from tianwang.analysis.survivor import RECORD_FIELDS, Outcome, decide
from tianwang.formats.atomic import write_atomic
from tianwang.formats.mirrors import MIRRORS_FILE
from tianwang.formats.store import host_bucket, host_dirname, record_files
from tianwang.progress import Progress
from tianwang.urls import url_host

WORK_DIR = ".dedup-work"
DONE_FILE = "dedup.json"
BATCH_BYTES = 64 << 20  # input bytes per hash task: big enough to amortize a spill write
RANGE_BYTES = 8 << 20  # spilled bytes per choose task (its memory is a few times this)



class DedupError(Exception):
    """Something a user must fix: a bad output directory, a damaged input. Message says what."""


@dataclass
class DedupPlan:
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


def make_plan(trees: Iterable[str | os.PathLike[str]], skip_damaged: bool) -> DedupPlan:
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
    return DedupPlan(resolved, files, mirrors, skip_damaged)


def check_out(out: Path, plan: DedupPlan) -> None:
    """Refuse an output that is, holds or sits in an input."""
    target = out.resolve()
    for tree in map(Path, plan.trees):
        if target == tree or tree in target.parents or target in tree.parents:
            raise DedupError(f"output {out} is, holds or sits inside input {tree}")


def _finished_report(out: Path, plan: DedupPlan) -> Report | None:
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


def _start_work(work: Path, plan: DedupPlan) -> bool:
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
    write_atomic(path, json.dumps(manifest).encode())
    return False


def _quiet(phase: str, done: int, total: int) -> None:
    pass


def _run_phases(plan: DedupPlan, out: Path, work: Path, workers: int, progress: Progress) -> Report:
    report = Report(files=len(plan.files))
    for counts in _hash_phase(plan, work, workers, progress):
        report.add(counts)
    parts = hash_parts(work / "hash")
    ranges = shard_ranges([section_sizes(part)[:SHARDS] for part in parts], RANGE_BYTES)
    for counts in _choose_phase(plan, work, parts, ranges, workers, progress):
        report.add(counts)
    chosen = [work / "choose" / _range_name(first, stop) for first, stop in ranges]
    _copy_phase(plan, out, work, chosen, workers, progress)
    write_mirrors(out, work, chosen)
    return report


def _finish(out: Path, work: Path, plan: DedupPlan, report: Report) -> None:
    document = {"report": report.__dict__, "manifest": plan.manifest()}
    write_atomic(out / DONE_FILE, json.dumps(document, indent=1).encode())
    shutil.rmtree(work)


# -- running tasks on both cores ---------------------------------------------------------

_PLAN: DedupPlan | None = None  # the plan, in each worker process


def _init_worker(plan: DedupPlan) -> None:
    global _PLAN
    _PLAN = plan
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    # The pool ends a worker with SIGTERM, which must end it whatever handler it inherited.
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _call(job: tuple[Callable[..., Any], tuple[Any, ...]]) -> Any:
    function, args = job
    return function(*args)


def _run_tasks(
    plan: DedupPlan, function: Callable[..., Any], tasks: list[tuple[Any, ...]], workers: int
) -> Iterable[Any]:
    """Results of function(*task) for each task, in the order they finish."""
    if workers == 1 or len(tasks) <= 1:
        global _PLAN
        _PLAN = plan
        for task in tasks:
            yield function(*task)
        return
    # forkserver, not fork: a test or tool calling this from a process with threads (an event
    # loop, a resolver pool) would fork their held locks with it, and a worker could hang.
    context = multiprocessing.get_context("forkserver")
    with context.Pool(min(workers, len(tasks)), _init_worker, (plan,)) as pool:
        yield from pool.imap_unordered(_call, [(function, task) for task in tasks])
        pool.close()  # let the workers end; leaving the block would terminate them
        pool.join()


# -- phase 1: hash -----------------------------------------------------------------------


def _hash_phase(plan: DedupPlan, work: Path, workers: int, progress: Progress) -> list[dict]:
    sizes = [os.path.getsize(path) for path in plan.files]
    batches: list[tuple[list[int], list[str]]] = [(b, []) for b in hash_batches(sizes, BATCH_BYTES)]
    batches += [([], [mirror]) for mirror in plan.mirrors]
    done_counts, todo = [], []
    for task, (files, mirrors) in enumerate(batches):
        finished = finished_counts(work / "hash", task)
        if finished is not None:
            done_counts.append(finished)
        else:
            weight = sum(sizes[i] for i in files) + sum(os.path.getsize(m) for m in mirrors)
            todo.append((weight, (str(work), task, files, mirrors, weight)))
    todo.sort(key=lambda item: -item[0])  # largest first: the last task to finish is small
    total = sum(sizes) + sum(os.path.getsize(m) for m in plan.mirrors)
    done = total - sum(weight for weight, _task in todo)
    progress("hash", done, total)
    for counts in _run_tasks(plan, hash_task, [task for _w, task in todo], workers):
        done += counts.pop("weight")
        done_counts.append(counts)
        progress("hash", done, total)
    return done_counts


def hash_task(work: str, task: int, files: list[int], mirrors: list[str],
              weight: int) -> dict[str, Any]:
    assert _PLAN is not None
    indexed = [(index, _PLAN.files[index]) for index in files]
    try:
        counts = hash_batch(Path(work, "hash"), task, indexed, mirrors, _PLAN.skip_damaged)
    except DamagedInput as exc:
        raise DedupError(str(exc)) from None
    return {**counts, "weight": weight}


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
    plan: DedupPlan, work: Path, parts: list[Path], ranges: list[tuple[int, int]], workers: int,
    progress: Progress,
) -> list[dict]:
    done_counts, todo = [], []
    for first, stop in ranges:
        path = work / "choose" / _range_name(first, stop)
        if path.exists():
            done_counts.append(read_sections(path, COUNTS_SECTION, COUNTS_SECTION + 1)[0])
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
    _PLACES.clear()
    shards: list[list[tuple]] = [[] for _ in range(first, stop)]
    for part in parts:
        for offset, entries in enumerate(read_sections(part, first, stop)):
            shards[offset].extend(entries)
    keep: list[list[tuple]] = [[] for _ in range(BUCKETS)]
    lines: list[bytes] = []
    counts = {"distinct": 0, "bytes_out": 0, "duplicates": 0, "same_url": 0,
              "mirror_lines_out": 0}
    for entries in shards:
        groups: dict[bytes, list[tuple]] = {}
        for entry in entries:
            groups.setdefault(entry[0], []).append(entry)
        for md5, group in sorted(groups.items()):
            if len(group) == 1 and len(group[0]) == RECORD_FIELDS:  # most bodies: seen once
                _keep_survivor(md5, group[0], keep, counts)
            else:
                _keep(md5, decide(group), keep, lines, counts)
    write_spill(path, [*keep, b"".join(lines), counts])
    return {**counts, "shards": stop - first}


def _keep(md5: bytes, outcome: Outcome, keep: list[list[tuple]], lines: list[bytes],
          counts: dict[str, int]) -> None:
    digest = md5.hex()
    lines.extend(f"{digest}\t{duplicate}\t{kept}\n".encode("utf-8", "surrogateescape")
                 for duplicate, kept in outcome.lines)
    counts["mirror_lines_out"] += len(outcome.lines)
    counts["same_url"] += outcome.same_url
    counts["duplicates"] += outcome.duplicates
    if outcome.survivor is not None:
        _keep_survivor(md5, outcome.survivor, keep, counts)


def _keep_survivor(md5: bytes, survivor: tuple, keep: list[list[tuple]],
                   counts: dict[str, int]) -> None:
    _md5, url, index, offset, length, _date, _crc = survivor
    bucket, directory = _out_place(url, index)
    keep[bucket].append((directory, url, md5, index, offset, length))
    counts["distinct"] += 1
    counts["bytes_out"] += length


_PLACES: dict[str, tuple[int, str]] = {}  # scheme://netloc -> its place, in one choose task


def _out_place(url: str, file_index: int) -> tuple[int, str]:
    """The output bucket and host directory of url; a url with no usable host stays in the
    directory its input file was in."""
    # url_host depends on scheme and netloc only; parsing each url again costs more than
    # all the rest of the choosing.
    end = url.find("/", url.find("//") + 2)
    key = url if end < 0 else url[:end]
    place = _PLACES.get(key)
    if place is None:
        try:
            name = host_dirname(url_host(url))
        except ValueError:
            assert _PLAN is not None
            source = Path(_PLAN.files[file_index])
            bucket = source.parent.parent.name.removeprefix("data_")
            return int(bucket) % BUCKETS if bucket.isdigit() else 0, source.parent.name
        place = _PLACES[key] = (host_bucket(name, BUCKETS), name)
    return place


# -- phase 3: copy -----------------------------------------------------------------------


def _copy_phase(
    plan: DedupPlan, out: Path, work: Path, chosen: list[Path], workers: int, progress: Progress
) -> None:
    buckets = [k for k in range(BUCKETS) if not (out / f"data_{k}").exists()]
    done = BUCKETS - len(buckets)
    progress("copy", done, BUCKETS)
    tasks = [(str(out), str(work), k, [str(path) for path in chosen]) for k in buckets]
    for _k in _run_tasks(plan, copy_task, tasks, workers):
        done += 1
        progress("copy", done, BUCKETS)


def copy_task(out: str, work: str, bucket: int, chosen: list[str]) -> int:
    assert _PLAN is not None
    try:
        copy_bucket(Path(out), Path(work) / "copy", bucket, chosen, _PLAN.files)
    except ChangedInput as exc:
        raise DedupError(str(exc)) from None
    return bucket
