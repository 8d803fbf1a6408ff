"""`tianwang sample DIR --out OUT`: seed 004's size-stratified sample of a record tree.

CWT200g sampled after the crawl, so the sample follows each site's real size (section 3.5):
the distinct site sizes (pages per host) sorted, taken in groups of 20 consecutive sizes, 10
sizes drawn at random from each group, and every host of a drawn size kept whole. A sampling
rate of 1:2 by sizes keeps about half the sites of every size band.

A last group of fewer than 20 sizes has half of them drawn, rounded up (so a lone largest
size is always kept rather than never). The draw is `random.Random(seed)` over the groups in
order, so one seed gives one sample on every machine.

A kept host is copied whole: its page.dat and links.tsv byte for byte, into the same
`data_<k>/<host>/` place; mirrors.tsv keeps the lines whose kept url is on a kept host (the
duplicates of pages that are in the sample). OUT/sample.json records the seed, the groups
and the drawn sizes. OUT is built in a temporary directory beside it and renamed when whole
(a run killed before that leaves only a `.OUT.*.tmp` directory, safe to remove); an existing
OUT is refused unless --force, which replaces it only once the new one is whole.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from tianwang.analysis.globaldedup import DONE_FILE, WORK_DIR
from tianwang.analysis.recordscan import scan_urls
from tianwang.formats.lines import iter_raw_lines
from tianwang.formats.linksfile import LINKS_FILE
from tianwang.formats.mirrors import MIRRORS_FILE
from tianwang.formats.record import RecordError, iter_records
from tianwang.formats.store import host_dirname, record_files
from tianwang.progress import Progress
from tianwang.urls import url_host

GROUP = 20  # consecutive distinct sizes per group (seed 004)
DRAWN = 10  # sizes drawn from a full group
REPORT_FILE = "sample.json"


class SampleError(Exception):
    """Something the user must fix; the message says what. Nothing was written."""


@dataclass(frozen=True)
class Band:
    sizes: list[int]  # consecutive distinct site sizes, ascending
    drawn: list[int]  # the sizes kept, ascending


@dataclass(frozen=True)
class Result:
    bands: list[Band]
    sites: int
    pages: int
    kept_sites: int
    kept_pages: int
    mirror_lines: int


# -- the draw (pure) ---------------------------------------------------------------------


def draw_bands(sizes: Iterable[int], seed: int) -> list[Band]:
    """Seed 004's draw over the distinct sizes: DRAWN of each GROUP, half of a last short one."""
    distinct = sorted(set(sizes))
    rng = random.Random(seed)
    bands = []
    for start in range(0, len(distinct), GROUP):
        group = distinct[start : start + GROUP]
        count = DRAWN if len(group) == GROUP else (len(group) + 1) // 2
        bands.append(Band(group, sorted(rng.sample(group, count))))
    return bands


def kept_hosts(sizes: dict[str, int], seed: int) -> tuple[list[Band], set[str]]:
    """The bands and every host (key of sizes) whose size was drawn."""
    bands = draw_bands(sizes.values(), seed)
    drawn = {size for band in bands for size in band.drawn}
    return bands, {host for host, size in sizes.items() if size in drawn}


# -- reading the tree --------------------------------------------------------------------


def site_sizes(tree: Path, progress: Progress) -> dict[str, int]:
    """`data_<k>/<host>` -> records in its page.dat (headers read, DATA not inflated)."""
    files = record_files(tree)
    sizes = {}
    for done, path in enumerate(files, 1):
        count = sum(1 for _url in scan_urls(path))
        if count:
            sizes[path.parent.relative_to(tree).as_posix()] = count
        progress("count", done, len(files))
    return sizes


# -- writing the sample ------------------------------------------------------------------


def sample(tree: str | os.PathLike[str], out: str | os.PathLike[str], seed: int,
           force: bool = False, progress: Progress | None = None) -> Result:
    """Write the sample of tree to out, whole or not at all."""
    tree, out = Path(tree), Path(out)
    progress = progress or _quiet
    _check(tree, out, force)
    try:
        sizes = site_sizes(tree, progress)
    except RecordError as exc:
        raise SampleError(f"damaged record file: {exc} (nothing written; `tianwang records "
                          "repair` takes the damage out)") from None
    if not sizes:
        raise SampleError(f"{tree} holds no records (no data_*/<host>/page.dat)")
    bands, kept = kept_hosts(sizes, seed)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent))
    try:
        _copy_hosts(tree, tmp, sorted(kept), progress)
        lines = _copy_mirrors(tree, tmp, {host.split("/", 1)[1] for host in kept})
        result = Result(bands, len(sizes), sum(sizes.values()), len(kept),
                        sum(sizes[host] for host in kept), lines)
        _write_report(tmp, seed, result)
        _put_in_place(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return result


def _quiet(phase: str, done: int, total: int) -> None:
    pass


def _check(tree: Path, out: Path, force: bool) -> None:
    if not tree.is_dir():
        raise SampleError(f"{tree}: {'not a directory' if tree.exists() else 'no such directory'}")
    if (tree / WORK_DIR).exists() and not (tree / DONE_FILE).exists():
        raise SampleError(f"{tree} is an unfinished dedup output; finish it first "
                          "(run the same tianwang dedup command again)")
    source, target = tree.resolve(), out.resolve()
    if target == source or source in target.parents or target in source.parents:
        raise SampleError(f"output {out} is, holds or sits inside input {tree}")
    if out.exists() and not force:
        raise SampleError(f"{out} exists; choose a new directory or pass --force to replace it")
    if out.exists() and not out.is_dir():
        raise SampleError(f"{out} exists and is not a directory")


def _copy_hosts(tree: Path, tmp: Path, hosts: list[str], progress: Progress) -> None:
    """Each kept host's files as they are (a host is kept whole: no record to pick)."""
    for done, host in enumerate(hosts, 1):
        _check_records(tree / host / "page.dat")
        (tmp / host).mkdir(parents=True)
        for name in ("page.dat", LINKS_FILE):
            if (tree / host / name).is_file():
                shutil.copyfile(tree / host / name, tmp / host / name)
        progress("copy", done, len(hosts))


def _check_records(path: Path) -> None:
    """Every record of a file to be copied reads in full, DATA included (counting read the
    headers only): a sample never carries damage along unsaid."""
    try:
        for _record in iter_records(path):
            pass
    except RecordError as exc:
        raise SampleError(f"damaged record file: {exc} (nothing written; `tianwang records "
                          "repair` takes the damage out)") from None


def _copy_mirrors(tree: Path, tmp: Path, dirnames: set[str]) -> int:
    """The mirror lines whose kept url is on a kept host; the count written."""
    if not (tree / MIRRORS_FILE).is_file():
        return 0
    count = 0
    with open(tmp / MIRRORS_FILE, "wb") as file:
        for raw in iter_raw_lines(tree / MIRRORS_FILE):
            fields = raw[:-1].split(b"\t")
            if len(fields) == 3 and _dirname(fields[2]) in dirnames:
                file.write(raw)
                count += 1
    return count


def _dirname(url: bytes) -> str | None:
    try:
        return host_dirname(url_host(url.decode("utf-8", "surrogateescape")))
    except ValueError:
        return None


def _write_report(tmp: Path, seed: int, result: Result) -> None:
    document = {
        "seed": seed, "group": GROUP, "drawn_per_group": DRAWN,
        "sites": result.sites, "pages": result.pages,
        "kept_sites": result.kept_sites, "kept_pages": result.kept_pages,
        "mirror_lines": result.mirror_lines,
        "bands": [{"sizes": band.sizes, "drawn": band.drawn} for band in result.bands],
    }
    (tmp / REPORT_FILE).write_text(json.dumps(document, indent=1) + "\n")


def _put_in_place(tmp: Path, out: Path) -> None:
    """Rename tmp to out; an old out (--force) is moved aside first and removed after."""
    old = None
    if out.exists():
        old = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".old", dir=out.parent))
        os.replace(out, old / out.name)
    os.replace(tmp, out)
    if old is not None:
        shutil.rmtree(old)


# -- the command -------------------------------------------------------------------------
