"""Which embedded store should hold the online dedup's md5 -> kept url map? (issue 5)

    python bench/dedup_store.py [--n 1000000] [--kinds dict-url,dict-offset,sqlite,...]
    python bench/dedup_store.py --pipeline      # the pipeline's cost per page, test web bodies
    python bench/dedup_store.py --crawl 5       # site crawls with dedup on vs off, alternating

Each kind runs in its own process (so its memory is its own) and prints: inserts/s (each
insert durable against kill -9 of the process, as the pipeline needs), lookups/s of present
md5s (the kept url read back) and of absent ones, resident memory and disk bytes per entry,
and the time to reopen the store. Keys are the md5 of a counter, values urls of about 50
bytes. Compare kinds within one run only: the machine is shared.

Kinds:
  dict-url     append-only log file + dict md5 -> url, rebuilt from the log on open
  dict-offset  append-only log file + dict md5 -> offset of its log line (url read back)
  sqlite       sqlite3 WAL table md5 -> url, WITHOUT ROWID, one commit per 1000 inserts
  sqlite-each  the same, one commit per insert
  dbm-dumb     dbm.dumb (the only dbm this Python has: no gdbm, no ndbm)
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

KINDS = ("dict-url", "dict-offset", "sqlite", "sqlite-each", "dbm-dumb")


def rss() -> int:
    with open("/proc/self/statm") as file:
        return int(file.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def key(i: int) -> bytes:
    return hashlib.md5(i.to_bytes(8, "little")).digest()


def url(i: int) -> str:
    return f"http://www.host{i % 5000}.edu.cn/news/2004/page{i}.html"


class LogDict:
    """Append-only `md5 hex \\t url \\n` log; the map in memory, rebuilt on open."""

    def __init__(self, path: Path, offsets: bool) -> None:
        self.path, self.offsets = path, offsets
        self.map: dict[bytes, object] = {}
        self.fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND)
        self.size = 0
        with open(path, "rb") as file:
            for line in file:
                md5 = bytes.fromhex(line[:32].decode())
                self.map[md5] = self.size if offsets else line[33:-1].decode()
                self.size += len(line)

    def put(self, md5: bytes, value: str) -> None:
        line = f"{md5.hex()}\t{value}\n".encode()
        os.write(self.fd, line)  # one write per insert: the OS has it if the process dies
        self.map[md5] = self.size if self.offsets else value
        self.size += len(line)

    def get(self, md5: bytes) -> str | None:
        found = self.map.get(md5)
        if found is None or not self.offsets:
            return found  # type: ignore[return-value]
        line = os.pread(self.fd, 4096, found)  # type: ignore[arg-type]
        return line[33 : line.index(b"\n")].decode()

    def close(self) -> None:
        os.close(self.fd)


class SQLite:
    def __init__(self, path: Path, batch: int) -> None:
        self.db = sqlite3.connect(path, isolation_level=None)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")  # no fsync per commit in WAL mode
        self.db.execute(
            "CREATE TABLE IF NOT EXISTS md5 (md5 BLOB PRIMARY KEY, url TEXT) WITHOUT ROWID"
        )
        self.batch, self.pending = batch, 0
        self.db.execute("BEGIN")

    def put(self, md5: bytes, value: str) -> None:
        self.db.execute("INSERT OR IGNORE INTO md5 VALUES (?, ?)", (md5, value))
        self.pending += 1
        if self.pending >= self.batch:
            self.db.execute("COMMIT")
            self.db.execute("BEGIN")
            self.pending = 0

    def get(self, md5: bytes) -> str | None:
        row = self.db.execute("SELECT url FROM md5 WHERE md5 = ?", (md5,)).fetchone()
        return row[0] if row else None

    def close(self) -> None:
        self.db.execute("COMMIT")
        self.db.close()


class Dumb:
    def __init__(self, path: Path) -> None:
        import dbm.dumb

        self.db = dbm.dumb.open(str(path), "c")

    def put(self, md5: bytes, value: str) -> None:
        self.db[md5] = value.encode()

    def get(self, md5: bytes) -> str | None:
        found = self.db.get(md5)
        return found.decode() if found is not None else None

    def close(self) -> None:
        self.db.close()


def open_store(kind: str, path: Path):  # noqa: ANN201
    if kind.startswith("dict"):
        return LogDict(path, offsets=kind == "dict-offset")
    if kind.startswith("sqlite"):
        return SQLite(path, batch=1 if kind == "sqlite-each" else 1000)
    return Dumb(path)


def disk_bytes(directory: Path) -> int:
    return sum(path.stat().st_size for path in directory.iterdir())


def measure(kind: str, n: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="dedupbench") as tmp:
        path = Path(tmp) / "store"
        before = rss()
        store = open_store(kind, path)
        started = time.perf_counter()
        for i in range(n):
            store.put(key(i), url(i))
        insert = n / (time.perf_counter() - started)
        grown = rss() - before
        lookups = min(n, 200_000)
        started = time.perf_counter()
        for i in range(0, n, max(1, n // lookups)):
            assert store.get(key(i)) == url(i)
        hit = lookups / (time.perf_counter() - started)
        started = time.perf_counter()
        for i in range(n, n + lookups):
            assert store.get(key(i)) is None
        miss = lookups / (time.perf_counter() - started)
        store.close()
        disk = disk_bytes(Path(tmp))
        started = time.perf_counter()
        open_store(kind, path).close()
        reopen = time.perf_counter() - started
    return {
        "kind": kind,
        "n": n,
        "insert_per_s": round(insert),
        "hit_per_s": round(hit),
        "miss_per_s": round(miss),
        "rss_bytes_per_entry": round(grown / n, 1),
        "disk_bytes_per_entry": round(disk / n, 1),
        "reopen_s": round(reopen, 2),
    }


def pipeline_cost(hosts: int = 200, seed: int = 1) -> None:
    """CPU per page of MD5DedupPipeline (md5, lookup, index commit) on the test web's pages."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from tests.conftest import project_crawler
    from tianwang.items import PageItem
    from tianwang.pipelines.dedup import MD5DedupPipeline
    from tianwang.testweb.model import SyntheticWeb

    web = SyntheticWeb(seed, hosts)
    pages = [PageItem(url=r["url"], requested_url=r["url"], status=200, headers=[],
                      body=web.respond(r["url"]).body, ip=None, fetched_at=0.0, level=1)
             for r in web.truth(bodies=False) if r["status"] == 200 and r["kind"] != "robots"]
    size = sum(len(page.body) for page in pages) / len(pages)
    with tempfile.TemporaryDirectory(prefix="dedupbench") as tmp:
        crawler = project_crawler(TIANWANG_DATA_DIR=tmp)
        crawler.stats.open_spider()
        pipeline = MD5DedupPipeline.from_crawler(crawler)
        pipeline.open_spider()
        started, cpu = time.perf_counter(), time.process_time()
        for page in pages:
            pipeline.process_item(page)
            pipeline.item_scraped(page)
        wall, cpu = time.perf_counter() - started, time.process_time() - cpu
        pipeline.close_spider()
    print(f"pipeline: {len(pages):,} pages of {size / 1000:.1f} KB on average: "
          f"{1e6 * cpu / len(pages):.1f} us CPU a page ({1e6 * wall / len(pages):.1f} us wall)")


def crawl_cost(rounds: int, hosts: int = 200, seed: int = 1) -> None:
    """Median CPU per 1000 pages of `site` crawls with TIANWANG_DEDUP on and off."""
    import statistics

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from bench.crawl import COMMON, cpu_per_1000, rate
    from tianwang.testweb.launcher import TestWebProcess, write_seeds
    from tianwang.testweb.model import SyntheticWeb

    runs: dict[str, list[dict]] = {"on": [], "off": []}
    with tempfile.TemporaryDirectory() as tmp, TestWebProcess(seed, hosts) as web:
        seeds = write_seeds(Path(tmp) / "seeds.txt", SyntheticWeb(seed, hosts).homepages())
        for round_no in range(rounds + 1):  # round 0 warms the server up, and is not counted
            for dedup in ("on", "off") if round_no % 2 else ("off", "on"):
                with tempfile.TemporaryDirectory(dir=tmp) as workdir:
                    stats = run_site(web.address, seeds, Path(workdir), dedup == "on", COMMON)
                if round_no:
                    runs[dedup].append(stats)
                    print(f"round {round_no} dedup {dedup:3}: {rate(stats):.1f} pages/s, "
                          f"{cpu_per_1000(stats):.2f} cpu s/1000 pages", flush=True)
    cpu = {kind: statistics.median(cpu_per_1000(s) for s in runs[kind]) for kind in runs}
    pages = {kind: statistics.median(rate(s) for s in runs[kind]) for kind in runs}
    print(f"median dedup on: {cpu['on']:.3f}, off: {cpu['off']:.3f} cpu s/1000 pages; "
          f"ratio on/off {cpu['on'] / cpu['off']:.3f} (cpu), {pages['on'] / pages['off']:.3f} "
          f"(pages/s)")


def run_site(proxy: str, seeds: Path, workdir: Path, dedup: bool, common: dict) -> dict:
    from bench.crawl import measured_run

    stats_file = workdir / "stats.json"
    settings = {**common, "BENCH_STATS_FILE": str(stats_file), "TIANWANG_PROXY": proxy,
                "TIANWANG_DATA_DIR": str(workdir / "data"), "TIANWANG_DEDUP": str(dedup)}
    command = [sys.executable, "-m", "scrapy", "crawl", "site", "-a", f"seeds={seeds}"]
    for name, value in settings.items():
        command += ["-s", f"{name}={value}"]
    root = str(Path(__file__).resolve().parent.parent)
    env = {**os.environ, "PYTHONPATH": root, "SCRAPY_SETTINGS_MODULE": "tianwang.settings"}
    env.pop("http_proxy", None)
    return measured_run(command, env, workdir, stats_file)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=1_000_000, help="entries (default 1,000,000)")
    parser.add_argument("--kinds", default=",".join(KINDS), help="comma-separated kinds")
    parser.add_argument("--pipeline", action="store_true", help="the pipeline's cost per page")
    parser.add_argument("--crawl", type=int, metavar="ROUNDS", help="crawls, dedup on vs off")
    parser.add_argument("--one", help=argparse.SUPPRESS)  # internal: measure one kind
    args = parser.parse_args()
    if args.pipeline:
        pipeline_cost()
        return 0
    if args.crawl:
        crawl_cost(args.crawl)
        return 0
    if args.one:
        print(json.dumps(measure(args.one, args.n)))
        return 0
    print(f"{'kind':12} {'insert/s':>10} {'hit/s':>10} {'miss/s':>10} "
          f"{'RSS B/entry':>12} {'disk B/entry':>12} {'reopen s':>9}")
    for kind in args.kinds.split(","):
        n = min(args.n, 200_000) if kind in ("dbm-dumb", "sqlite-each") else args.n
        out = subprocess.run([sys.executable, __file__, "--one", kind, "--n", str(n)],
                             check=True, capture_output=True, text=True).stdout
        r = json.loads(out)
        print(f"{kind:12} {r['insert_per_s']:>10,} {r['hit_per_s']:>10,} {r['miss_per_s']:>10,} "
              f"{r['rss_bytes_per_entry']:>12} {r['disk_bytes_per_entry']:>12} "
              f"{r['reopen_s']:>9}  (n={n:,})", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
