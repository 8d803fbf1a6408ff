"""Crawls at the politeness limit: many hosts, a delay and one connection each.

    python bench/polite.py [--hosts 1000,10000,50000] [--concurrency 64,256]
                           [--seconds 60] [--latency 0.2] [--delay 1] [--rounds 1]
                           [--set NAME=VALUE ...] [--kinds tianwang,plain]

Per (hosts H, CONCURRENT_REQUESTS C): a test web of H hosts whose server takes --latency
seconds to answer each request (`testweb serve --latency`), crawled for --seconds from all
its homepages, DOWNLOAD_DELAY --delay and one connection a host, by the default stack
(`scrapy crawl site`) and by a plain Scrapy spider under Scrapy's "Broad Crawls" settings
(bench/plain_spider.py: Scrapy's scheduler, DownloaderAwarePriorityQueue, breadth first),
rounds alternating which goes first (--set: a setting of the tianwang crawl, for an
ablation; --kinds: which of the two crawl). The limit either can reach is
min(H / delay, C / latency): each host once a delay, each connection once a latency.

Prints per crawl requests/s, its share of the limit, CPU ms per request, peak RSS; then a
table of medians: tianwang, plain Scrapy, their ratio, and each one's share of the limit.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.crawl import PLAIN_EXTENSIONS, SITE_EXTENSIONS  # noqa: E402
from tests.process_usage import run_measured  # noqa: E402
from tianwang.testweb.launcher import TestWebProcess, write_seeds  # noqa: E402
from tianwang.testweb.model import SyntheticWeb  # noqa: E402

SEED, MAX_PAGES = 5, 300
# Scrapy's "Broad Crawls" advice (docs/topics/broad-crawls.rst), for the plain spider.
BROAD = {"REACTOR_THREADPOOL_MAXSIZE": "20", "COOKIES_ENABLED": "False",
         "RETRY_ENABLED": "False", "DOWNLOAD_TIMEOUT": "15", "REDIRECT_ENABLED": "False",
         "AJAXCRAWL_ENABLED": "True", "DEPTH_PRIORITY": "1",
         "SCHEDULER_DISK_QUEUE": "scrapy.squeues.PickleFifoDiskQueue",
         "SCHEDULER_MEMORY_QUEUE": "scrapy.squeues.FifoMemoryQueue"}


def crawl(kind: str, proxy: str, seeds: Path, workdir: Path, settings: dict[str, str]) -> dict:
    """One crawl process: its stats, CPU seconds and peak RSS (MB)."""
    stats_file = workdir / "stats.json"
    settings = {**settings, "BENCH_STATS_FILE": str(stats_file), "LOG_LEVEL": "WARNING"}
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    if kind == "tianwang":
        command = [sys.executable, "-m", "scrapy", "crawl", "site"]
        settings |= {"TIANWANG_PROXY": proxy, "TIANWANG_DATA_DIR": str(workdir / "data"),
                     "EXTENSIONS": SITE_EXTENSIONS}
        env |= {"SCRAPY_SETTINGS_MODULE": "tianwang.settings"}
        env.pop("http_proxy", None)
    else:
        command = [sys.executable, "-m", "scrapy", "runspider",
                   str(ROOT / "bench" / "plain_spider.py")]
        settings |= {**BROAD, "EXTENSIONS": PLAIN_EXTENSIONS}
        env |= {"http_proxy": proxy}
    command += ["-a", f"seeds={seeds}"]
    for key, value in settings.items():
        command += ["-s", f"{key}={value}"]
    with open(workdir / "crawl.log", "wb") as log:
        usage = run_measured(command, workdir, env, log)
    if usage.returncode not in (0, 1):
        raise SystemExit(f"{kind} crawl failed: see {workdir / 'crawl.log'}")
    stats = json.loads(stats_file.read_text(encoding="utf-8"))
    stats["cpu_seconds"] = usage.cpu_seconds
    stats["rss_mb"] = usage.max_rss_kb / 1024
    return stats


def figures(stats: dict, limit: float) -> dict:
    responses = stats.get("response_received_count", 0)
    rate = responses / stats["elapsed_time_seconds"]
    return {"rate": rate, "share": rate / limit, "rss": stats["rss_mb"],
            "cpu_ms": 1000 * stats["cpu_seconds"] / max(responses, 1)}


def table(rows: list) -> None:
    """The medians, one row a (hosts, connections); a kind not crawled shows as -."""
    print("| hosts | CONCURRENT_REQUESTS | limit | tianwang req/s | share of limit | plain "
          "Scrapy req/s | share | tianwang / plain | tianwang CPU ms/request | plain CPU "
          "ms/request | tianwang peak RSS |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    none = {"rate": float("nan"), "share": float("nan"), "cpu_ms": float("nan"),
            "rss": float("nan")}
    for hosts, concurrency, limit, med in rows:
        ours, plain = med.get("tianwang", none), med.get("plain", none)
        print(f"| {hosts:,} | {concurrency} | {limit:,.0f} | {ours['rate']:.1f} | "
              f"**{ours['share']:.2f}** | {plain['rate']:.1f} | {plain['share']:.2f} | "
              f"{ours['rate'] / plain['rate']:.2f} | {ours['cpu_ms']:.2f} | "
              f"{plain['cpu_ms']:.2f} | {ours['rss']:.0f} MB |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", default="1000,10000,50000")
    parser.add_argument("--concurrency", default="64,256")
    parser.add_argument("--seconds", type=int, default=60)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--delay", type=float, default=1.0)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE")
    parser.add_argument("--kinds", default="tianwang,plain")
    args = parser.parse_args()
    ours = dict(item.split("=", 1) for item in args.set)
    rows = []
    for hosts in map(int, args.hosts.split(",")):
        with tempfile.TemporaryDirectory() as tmp, TestWebProcess(
                SEED, hosts, MAX_PAGES, extra_args=("--latency", str(args.latency))) as web:
            seeds = write_seeds(Path(tmp) / "seeds.txt",
                                SyntheticWeb(SEED, hosts, MAX_PAGES).homepages())
            for concurrency in map(int, args.concurrency.split(",")):
                limit = min(hosts / args.delay, concurrency / args.latency)
                settings = {"CONCURRENT_REQUESTS": str(concurrency),
                            "CONCURRENT_REQUESTS_PER_DOMAIN": "1",
                            "DOWNLOAD_DELAY": str(args.delay), "ROBOTSTXT_OBEY": "True",
                            "CLOSESPIDER_TIMEOUT": str(args.seconds)}
                runs: dict[str, list[dict]] = {kind: [] for kind in args.kinds.split(",")}
                for round_no in range(args.rounds):
                    kinds = list(runs) if round_no % 2 == 0 else list(runs)[::-1]
                    for kind in kinds:
                        with tempfile.TemporaryDirectory(dir=tmp) as workdir:
                            mine = {**settings, **ours} if kind == "tianwang" else settings
                            got = figures(crawl(kind, web.address, seeds, Path(workdir), mine),
                                          limit)
                        runs[kind].append(got)
                        print(f"{hosts:>6} hosts, C={concurrency:<4} {kind:8}: "
                              f"{got['rate']:7.1f} req/s ({got['share']:.2f} of {limit:.0f}), "
                              f"{got['cpu_ms']:.2f} CPU ms/request, {got['rss']:.0f} MB",
                              flush=True)
                med = {kind: {key: statistics.median(run[key] for run in runs[kind])
                              for key in runs[kind][0]} for kind in runs}
                rows.append((hosts, concurrency, limit, med))
                time.sleep(1)
    print()
    table(rows)
    print(f"\nmachine: {os.cpu_count()} cores, python {sys.version.split()[0]}, "
          f"load {os.getloadavg()[0]:.1f}; {args.seconds} s crawls, delay {args.delay} s, "
          f"latency {args.latency} s, {args.rounds} round(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
