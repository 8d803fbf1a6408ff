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

    python3 bench/global_dedup.py --data /work/bench-data/dedup --records 2000000 --mode stores

--mode stores: seed 004's own comparison, "saved in one database the dedup took 7 days, with
1,024 small databases 1 hour" (the MD5 mod 1024 of each page picks its database, so each
"stays in memory"). The records' (MD5, url) pairs are read from the tree once (or, with
--keys generated, made from the generator's seeds without writing the tree); then,
alternating for --rounds rounds, in this process, the same dedup by a database table keyed by
MD5 (a url whose MD5 is already there is a mirror of the kept url):

- one store: one sqlite file, every pair in record order;
- 1,024 shards: the pairs routed by MD5 mod 1024 (in memory; the real dedup spills them to
  files), then each shard's own sqlite file built in turn.

Both with the same page cache (--cache-mb, sqlite's own default of 2 MB; a shard's table is
well under it, the one store's is not), journal off, one transaction per 10,000 pairs. Both
must find the same mirror pairs. Prints each one's seconds and CPU seconds, and the ratio of
medians next to the paper's 7 days / 1 hour = 168.
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
import sqlite3
import statistics
import subprocess
import sys
import threading
import time
import zlib
from collections.abc import Callable, Iterable
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


def body_seed(index: int, dup_share: float) -> int:
    """Record `index`'s body seed: its own index, or for a duplicate an earlier record's."""
    rng = random.Random(index * 7919 + 1)
    return rng.randrange(index) if index and rng.random() < dup_share else index


def record_url(index: int) -> str:
    return f"http://www.h{index // PER_HOST}.bench.cn/dir{index % 13}/page{index}.html"


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
                seed, url = body_seed(index, dup_share), record_url(index)
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


# -- one store against 1,024 shards (--mode stores) -----------------------------------------


_KEY = re.compile(rb"\nurl: ([^\n]*)\n(?:[^\n]+\n)*?unzip-length: ([0-9]+)\nlength: ([0-9]+)\n\n")
SHARDS = 1024  # seed 004: MD5 mod 1024
BATCH = 10_000  # pairs per transaction, in both stores


def _keys_of_file(path: str) -> list[tuple[bytes, str]]:
    """(body MD5, url) of each record of one page.dat, in file order. The MD5 is of the whole
    DATA as the ceiling takes it; two records with one body have one DATA here (the
    generator's headers do not vary)."""
    keys = []
    with open(path, "rb") as file, mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) as buf:
        view = memoryview(buf)
        offset, size = 0, len(buf)
        while offset < size:
            found = _KEY.search(buf, offset)
            start, length = found.end(), int(found[3])
            data = libdeflate.zlib_decompress(view[start : start + length], int(found[2]))
            keys.append((hashlib.md5(data).digest(), found[1].decode()))
            offset = start + length + 1
        view.release()
    return keys


def read_keys(tree: Path, workers: int) -> list[tuple[bytes, str]]:
    files = [str(path) for path in sorted(record_files(tree))]
    with multiprocessing.Pool(workers) as pool:
        return [key for keys in pool.imap(_keys_of_file, files, chunksize=4) for key in keys]


def _open_store(path: Path, cache_mb: int) -> sqlite3.Connection:
    path.unlink(missing_ok=True)
    db = sqlite3.connect(path, isolation_level=None)
    db.execute(f"PRAGMA cache_size = -{cache_mb * 1024}")  # KiB when negative
    db.execute("PRAGMA journal_mode = OFF")
    db.execute("PRAGMA synchronous = OFF")
    db.execute("CREATE TABLE pages (md5 BLOB PRIMARY KEY, url TEXT NOT NULL) WITHOUT ROWID")
    return db


def store_dedup(db: sqlite3.Connection, keys: Iterable[tuple[bytes, str]]) -> list[tuple[str, str]]:
    """The paper's step: each page's MD5 looked up in the table; a new one is inserted, a
    known one makes the url a mirror of the kept one. Returns the mirror pairs."""
    mirrors = []
    insert = "INSERT OR IGNORE INTO pages (md5, url) VALUES (?, ?)"
    db.execute("BEGIN")
    for count, (md5, url) in enumerate(keys, 1):
        if db.execute(insert, (md5, url)).rowcount == 0:
            kept = db.execute("SELECT url FROM pages WHERE md5 = ?", (md5,)).fetchone()[0]
            mirrors.append((url, kept))
        if count % BATCH == 0:
            db.execute("COMMIT")
            db.execute("BEGIN")
    db.execute("COMMIT")
    return mirrors


def one_store(keys: list[tuple[bytes, str]], work: Path, cache_mb: int) -> list[tuple[str, str]]:
    db = _open_store(work / "one.sqlite", cache_mb)
    try:
        return store_dedup(db, keys)
    finally:
        db.close()


def sharded_stores(keys: list[tuple[bytes, str]], work: Path,
                   cache_mb: int) -> list[tuple[str, str]]:
    shards: list[list[tuple[bytes, str]]] = [[] for _ in range(SHARDS)]
    for key in keys:  # MD5 mod 1024: the digest as a big-endian number, its last 10 bits
        shards[int.from_bytes(key[0][-2:], "big") % SHARDS].append(key)
    work.mkdir(exist_ok=True)
    mirrors = []
    for index, shard in enumerate(shards):
        db = _open_store(work / f"{index:04d}.sqlite", cache_mb)
        try:
            mirrors.extend(store_dedup(db, shard))
        finally:
            db.close()
    return mirrors


def _timed(run: Callable[[], list[tuple[str, str]]]) -> tuple[list[tuple[str, str]], float, float]:
    started, cpu = time.monotonic(), time.process_time()
    result = run()
    return result, time.monotonic() - started, time.process_time() - cpu


def generated_keys(records: int, dup_share: float) -> list[tuple[bytes, str]]:
    """The (MD5, url) pairs of the tree's records without the tree: each body's MD5 stands
    for an MD5 of its seed, so the same records are duplicates of the same earlier ones (two
    bodies are one exactly when their seeds are), and the databases see the same work."""
    return [(hashlib.md5(b"body %d" % body_seed(index, dup_share)).digest(), record_url(index))
            for index in range(records)]


def compare_stores(tree: Path | None, args: argparse.Namespace) -> None:
    started = time.monotonic()
    keys = (read_keys(tree, args.workers) if tree is not None
            else generated_keys(args.records, args.dup_share))
    print(f"keys: {len(keys):,} (MD5, url) pairs read in {time.monotonic() - started:.1f} s",
          flush=True)
    work = args.data / "stores"
    work.mkdir(parents=True, exist_ok=True)
    runs = {"one store": lambda: one_store(keys, work, args.cache_mb),
            "1,024 shards": lambda: sharded_stores(keys, work / "shards", args.cache_mb)}
    seconds: dict[str, list[float]] = {name: [] for name in runs}
    cpus: dict[str, list[float]] = {name: [] for name in runs}
    found: dict[str, set[tuple[str, str]]] = {}
    for round_ in range(args.rounds):
        order = list(runs) if round_ % 2 == 0 else list(runs)[::-1]  # alternate who goes first
        for name in order:
            mirrors, wall, cpu = _timed(runs[name])
            seconds[name].append(wall)
            cpus[name].append(cpu)
            found[name] = set(mirrors)
            print(f"round {round_ + 1} {name}: {len(keys):,} pairs, {len(mirrors):,} mirrors "
                  f"in {wall:.1f} s ({cpu:.1f} CPU s), {len(keys) / wall:,.0f} pairs/s",
                  flush=True)
    if found["one store"] != found["1,024 shards"]:
        raise SystemExit("the two stores found different mirror pairs")
    median = statistics.median
    one, sharded = median(seconds["one store"]), median(seconds["1,024 shards"])
    one_cpu, sharded_cpu = median(cpus["one store"]), median(cpus["1,024 shards"])
    print(f"median: one store {one:.1f} s ({one_cpu:.1f} CPU s), 1,024 shards {sharded:.1f} s "
          f"({sharded_cpu:.1f} CPU s): one store / shards = {one / sharded:.2f} by wall time, "
          f"{one_cpu / sharded_cpu:.2f} by CPU; the paper's 7 days / 1 hour = 168")
    shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, type=Path,
                        help="where the generated tree is cached and the output written "
                        "(outside the repository: 2M records take about 11 GB)")
    parser.add_argument("--records", type=int, default=2_000_000)
    parser.add_argument("--dup-share", type=float, default=0.2)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--mode", choices=("dedup", "stores"), default="dedup",
                        help="dedup: tianwang dedup against the ceiling; stores: one database "
                        "against 1,024 (seed 004's 7 days / 1 hour)")
    parser.add_argument("--cache-mb", type=int, default=2,
                        help="--mode stores: each sqlite database's page cache (default 2, "
                        "sqlite's own)")
    parser.add_argument("--keys", choices=("tree", "generated"), default="tree",
                        help="--mode stores: read the (MD5, url) pairs from the generated "
                        "tree, or make them from the generator's seeds without writing the "
                        "tree (the same duplicates; for 2M records without 18 GB on disk)")
    args = parser.parse_args()
    if args.mode == "stores" and args.keys == "generated":
        compare_stores(None, args)
        return
    tree = generate(args.data, args.records, args.dup_share, args.workers)
    print(f"tree: {tree} {json.loads((tree / 'GENERATED.json').read_text())}")
    if args.mode == "stores":
        compare_stores(tree, args)
        return
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
