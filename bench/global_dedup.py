"""Benchmark: `tianwang dedup` on generated records of CWT200g's average page size.

    python3 bench/global_dedup.py --data /work/bench-data/dedup --records 2000000

Generates (once, cached under --data) a record tree of --records records: 23 KB HTML-ish
bodies (CWT200g's average page size), a --dup-share of them repeating an earlier body under
another url, stored as the crawler stores them (zlib level 1). Then, alternating for
--rounds rounds:

- ceiling: the least work any dedup must do, on both cores: read each record, inflate its
  DATA and MD5 it (no spill, no sort, no copy), in --workers processes; once inflating with
  libdeflate (what the dedup uses, so "% of the ceiling" compares like with like) and once
  with the stdlib zlib;
- dedup: `tianwang dedup TREE --out OUT` in a subprocess, timing it, its peak RSS per
  process (getrusage of the children) and the peak RSS summed over its process tree
  (sampled from /proc every 0.1 s).

Prints records/s and CPU us/record of each and the ratio of medians (dedup / ceiling).
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import mmap
import multiprocessing
import os
import random
import re
import resource
import shutil
import statistics
import subprocess
import sys
import threading
import time
import zlib
from pathlib import Path

import deflate as libdeflate

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tianwang.formats.http import build_http_response  # noqa: E402
from tianwang.formats.record import Record, encode_record  # noqa: E402
from tianwang.formats.store import page_path, record_files  # noqa: E402

BODY_BYTES = 23 * 1024  # CWT200g's average page size (seed 004)
PER_HOST = 1000
DATE = "Sun, 22 Nov 2026 05:16:17 GMT"


# -- generating the tree -----------------------------------------------------------------


def _pool_text(seed: int = 7, size: int = 4 << 20) -> bytes:
    """A few MB of text with markup, words drawn by Zipf's law as in real text."""
    rng = random.Random(seed)
    letters = "abcdefghijklmnopqrstuvwxyz"
    words = ["".join(rng.choices(letters, k=rng.randint(2, 9))) for _ in range(4000)]
    weights = list(itertools.accumulate(1 / rank for rank in range(1, len(words) + 1)))
    out, total = [], 0
    while total < size:
        for word in rng.choices(words, cum_weights=weights, k=50):
            if rng.random() < 0.12:
                word = rng.choice(_TAGS)
            out.append(word)
            total += len(word) + 1
    return " ".join(out).encode()


_TAGS = ['<p class="text">', "</p>\n", "<br>\n", '<a href="/news/2006/index.html">', "</a>",
         "<li>", "</li>\n", '<td align="left" valign="top">', "</td>", "<tr>\n", "</tr>\n",
         '<span style="font-size:12px">', "</span>"]
_POOL = b""


# CWT200g stores 880 GB of pages (23.5 KB each) in 197 GB: 5.26 KB a record on disk (seed
# 004). Random words compress far worse than real pages, whose bytes are mostly markup, so the
# site template carries the markup: 86 navigation cells make a record 5.27 KB at zlib level 1,
# and the tree reads from disk as the real collection would.
NAV_COLUMNS = 86


def _template(site: int) -> tuple[bytes, bytes]:
    """A site's head (styles, navigation table) and footer: the markup pages of a site share."""
    style = "".join(f".c{n} {{ font-size: 12px; color: #333333; line-height: 150%; "
                    f"margin: 0px; padding: 2px; }}\n" for n in range(NAV_COLUMNS // 2))
    nav = "".join(f'<td class="nav" width="80" align="center"><a href="/col{n}/index.html" '
                  f'target="_blank">column {site}-{n}</a></td>\n' for n in range(NAV_COLUMNS))
    head = (f"<html><head><meta http-equiv=\"Content-Type\" content=\"text/html; "
            f"charset=gb2312\">\n<style type=\"text/css\">\n{style}</style>\n</head><body>\n"
            f"<table id=\"nav\" width=\"760\" border=\"0\" cellspacing=\"0\" "
            f"cellpadding=\"0\"><tr>\n{nav}</tr></table>\n<div id=\"main\">\n")
    foot = (f"</div>\n<div id=\"foot\">copyright 2006 site {site} | "
            f"<a href=\"/about.html\">about</a></div></body></html>\n")
    return head.encode(), foot.encode()


def body(seed: int) -> bytes:
    """The body of page `seed`: the same seed gives the same bytes (a duplicate reuses it)."""
    rng = random.Random(seed)
    head, foot = _template(seed % 50)
    title = f"<h1>page {seed}</h1>\n".encode()
    parts, total = [head, title], len(head) + len(title) + len(foot)
    while total < BODY_BYTES:
        start = rng.randrange(len(_POOL) - 4096)
        chunk = _POOL[start : start + rng.randint(1024, 4096)]
        parts.append(chunk)
        total += len(chunk)
    return b"".join(parts)[: BODY_BYTES - len(foot)] + foot


def _generate_hosts(args: tuple[str, int, int, int, float]) -> int:
    """Write hosts first..stop-1 of the tree; a record's body seed is its index, or for a
    duplicate an earlier record's."""
    global _POOL
    data, first, stop, records, dup_share = args
    _POOL = _pool_text()
    written = 0
    for host_index in range(first, stop):
        host = f"www.h{host_index}.bench.cn"
        path = page_path(data, host)
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "wb") as file:
            for index in range(host_index * PER_HOST, min(records, (host_index + 1) * PER_HOST)):
                rng = random.Random(index * 7919 + 1)
                seed = rng.randrange(index) if index and rng.random() < dup_share else index
                url = f"http://{host}/dir{index % 13}/page{index}.html"
                data_bytes = build_http_response(
                    200, [(b"Content-Type", b"text/html; charset=utf-8")], body(seed)
                )
                record = Record(url=url, data=data_bytes, date=DATE, ip="127.0.0.1")
                file.write(encode_record(record, compress=True, level=1))
                written += 1
    return written


def generate(data: Path, records: int, dup_share: float, workers: int) -> Path:
    tree = data / f"tree-{records}-{dup_share}-cwt"
    marker = tree / "GENERATED.json"
    if marker.exists():
        return tree
    shutil.rmtree(tree, ignore_errors=True)
    hosts = (records + PER_HOST - 1) // PER_HOST
    step = max(1, hosts // (workers * 8))
    tasks = [(str(tree), first, min(hosts, first + step), records, dup_share)
             for first in range(0, hosts, step)]
    started = time.monotonic()
    with multiprocessing.Pool(workers) as pool:
        done = 0
        for count in pool.imap_unordered(_generate_hosts, tasks):
            done += count
            print(f"\rgenerated {done}/{records}", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    size = sum(path.stat().st_size for path in record_files(tree))
    marker.write_text(json.dumps({"records": records, "dup_share": dup_share, "bytes": size,
                                  "seconds": time.monotonic() - started}))
    return tree


# -- the ceiling: inflate + md5 only -----------------------------------------------------


# (stored bytes, inflated size) -> inflated bytes; the size is the record's unzip-length.
INFLATERS = {
    "libdeflate": libdeflate.zlib_decompress,
    "stdlib zlib": lambda stored, size: zlib.decompress(stored, 15, size),
}


_LENGTHS = re.compile(rb"unzip-length: ([0-9]+)\nlength: ([0-9]+)\n\n")


def _inflate_md5_file(job: tuple[str, str]) -> int:
    """Inflate and MD5 each record's DATA, reading the file as the dedup does (mapped, no
    copy of DATA) and parsing no more of the header than the two lengths."""
    path, library = job
    decompress = INFLATERS[library]
    count = 0
    with open(path, "rb") as file, mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) as buf:
        view = memoryview(buf)
        offset, size = 0, len(buf)
        while offset < size:
            lengths = _LENGTHS.search(buf, offset)
            start, length = lengths.end(), int(lengths[2])
            hashlib.md5(decompress(view[start : start + length], int(lengths[1]))).digest()
            offset = start + length + 1
            count += 1
        view.release()
    return count


def _children_cpu() -> float:
    """User + system seconds of every waited-for descendant so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def ceiling(tree: Path, workers: int, library: str) -> tuple[int, float, float]:
    """Records, wall seconds and CPU seconds of inflate + md5 of every record."""
    files = [(str(path), library) for path in record_files(tree)]
    started, cpu = time.monotonic(), _children_cpu()
    with multiprocessing.Pool(workers) as pool:
        count = sum(pool.imap_unordered(_inflate_md5_file, files, chunksize=4))
        pool.close()
        pool.join()
    return count, time.monotonic() - started, _children_cpu() - cpu


# -- the dedup ---------------------------------------------------------------------------


# Runs the command as a child subreaper and waits for every descendant. The dedup's workers
# are children of multiprocessing's forkserver, which the dedup never waits for (it is
# orphaned at exit), so without this their CPU time never reached getrusage(RUSAGE_CHILDREN).
_REAPER = """
import ctypes, os, subprocess, sys
ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
code = subprocess.Popen(sys.argv[1:]).wait()
while True:
    try:
        os.wait()
    except ChildProcessError:
        break
sys.exit(code)
"""


def _tree_rss(root: int) -> tuple[int, int]:
    """Resident bytes of root's descendants (not root, the reaper), from /proc: summed, and
    the largest."""
    total, largest, todo = 0, 0, [root]
    while todo:
        current = todo.pop()
        try:
            with open(f"/proc/{current}/statm") as file:
                rss = int(file.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
            with open(f"/proc/{current}/task/{current}/children") as file:
                todo.extend(int(child) for child in file.read().split())
        except (FileNotFoundError, ProcessLookupError):
            continue
        if current != root:
            total, largest = total + rss, max(largest, rss)
    return total, largest


def run_dedup(tree: Path, out: Path, workers: int) -> dict[str, float]:
    shutil.rmtree(out, ignore_errors=True)
    command = [sys.executable, "-c", _REAPER, sys.executable, "-m", "tianwang.cli", "dedup",
               str(tree), "--out", str(out), "--workers", str(workers)]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    peak = [0, 0]
    started, cpu = time.monotonic(), _children_cpu()
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, text=True)

    def sample() -> None:
        while process.poll() is None:
            total, largest = _tree_rss(process.pid)
            peak[0], peak[1] = max(peak[0], total), max(peak[1], largest)
            time.sleep(0.1)

    sampler = threading.Thread(target=sample)
    sampler.start()
    output, _ = process.communicate()
    elapsed = time.monotonic() - started
    cpu = _children_cpu() - cpu
    sampler.join()
    if process.returncode:
        raise SystemExit(f"dedup failed ({process.returncode}):\n{output}")
    records = int(output.split("records in: ", 1)[1].split()[0])
    return {"records": records, "seconds": elapsed, "cpu": cpu, "tree_rss": peak[0],
            "process_rss": peak[1], "output": output}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, type=Path,
                        help="where the generated tree is cached and the output written "
                        "(outside the repository: 2M records take about 11 GB)")
    parser.add_argument("--records", type=int, default=2_000_000)
    parser.add_argument("--dup-share", type=float, default=0.2)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()
    tree = generate(args.data, args.records, args.dup_share, args.workers)
    print(f"tree: {tree} {json.loads((tree / 'GENERATED.json').read_text())}")
    rates: dict[str, list[float]] = {name: [] for name in (*INFLATERS, "dedup")}
    cpus: dict[str, list[float]] = {name: [] for name in rates}
    for round_ in range(args.rounds):
        for library in INFLATERS:
            count, seconds, cpu = ceiling(tree, args.workers, library)
            rates[library].append(count / seconds)
            cpus[library].append(cpu / count * 1e6)
            print(f"round {round_ + 1} ceiling ({library}): {count} records in {seconds:.1f} s,"
                  f" {count / seconds:,.0f} records/s, {cpus[library][-1]:.0f} CPU us/record",
                  flush=True)
        result = run_dedup(tree, args.data / "out", args.workers)
        rates["dedup"].append(result["records"] / result["seconds"])
        cpus["dedup"].append(result["cpu"] / result["records"] * 1e6)
        print(f"round {round_ + 1} dedup: {result['records']} records in "
              f"{result['seconds']:.1f} s, {rates['dedup'][-1]:,.0f} records/s, "
              f"{cpus['dedup'][-1]:.0f} CPU us/record, peak RSS summed over its processes "
              f"{result['tree_rss'] / 2**20:.0f} MB, of one process "
              f"{result['process_rss'] / 2**20:.0f} MB", flush=True)
        print("  " + result["output"].strip().replace("\n", "\n  "), flush=True)
    largest = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(f"largest single child process peak RSS (getrusage): {largest:.0f} MB")
    median = statistics.median
    dedup_cpu = median(cpus["dedup"])
    # CPU time is what a shared machine disturbs least; on idle cores it sets the rate.
    print(f"median dedup: {median(rates['dedup']):,.0f} records/s by wall time, "
          f"{dedup_cpu:.0f} CPU us/record, so {args.workers / dedup_cpu * 1e6:,.0f} records/s "
          f"on {args.workers} idle cores")
    for library in INFLATERS:
        cpu = median(cpus[library])
        print(f"median ceiling ({library}): {median(rates[library]):,.0f} records/s by wall "
              f"time, {cpu:.0f} CPU us/record, so {args.workers / cpu * 1e6:,.0f} records/s on "
              f"idle cores; the dedup does {cpu / dedup_cpu:.0%} of its rate by CPU, "
              f"{median(rates['dedup']) / median(rates[library]):.0%} by wall time")


if __name__ == "__main__":
    main()
