"""Pages/s of the `site` spider (storage on) against a plain Scrapy spider, same web, same run.

    python bench/crawl.py [--hosts 200] [--seed 1] [--rounds 5]
    python bench/crawl.py --compare frontier --hosts 1000 [--delay 0.5] [--concurrency 256]
                          [--pages 10000] [--rounds 5]

The second form crawls with the `site` spider twice per round instead: tianwang's frontier
(the project's SCHEDULER) against Scrapy's default scheduler (DownloaderAwarePriorityQueue,
LIFO queues, DEPTH_PRIORITY 0), both with one connection per host and the same per-host
delay, so what differs is only the order and how each scheduler keeps hosts busy.

Both crawls go through the same test web process with the same politeness settings; the
rounds alternate which runs first, and the ratio of medians is reported, since this machine
is shared and noisy. Prints one line per run and a summary.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.process_usage import run_measured  # noqa: E402
from tianwang import default_settings  # noqa: E402
from tianwang.testweb.launcher import TestWebProcess, write_seeds  # noqa: E402
from tianwang.testweb.model import SyntheticWeb  # noqa: E402

# A `-s EXTENSIONS=` replaces the project's dict: a `site` crawl measured here keeps the
# stack's own extensions, so it is the crawl users run, plus the stats dump.
SITE_EXTENSIONS = json.dumps({**default_settings.EXTENSIONS, "bench.statsdump.StatsDump": 0})
# The plain spider has only Scrapy's extensions, and the stats dump.
PLAIN_EXTENSIONS = json.dumps({"bench.statsdump.StatsDump": 0})

COMMON = {
    "DOWNLOAD_DELAY": "0",
    "CONCURRENT_REQUESTS": "32",
    "CONCURRENT_REQUESTS_PER_DOMAIN": "4",
    "ROBOTSTXT_OBEY": "True",
    "LOG_LEVEL": "WARNING",
    "RETRY_GIVE_UP_LOG_LEVEL": "INFO",
    "TELNETCONSOLE_ENABLED": "False",
    "REMOTE_CONTROL_ENABLED": "False",
    "EXTENSIONS": SITE_EXTENSIONS,
}


# Scrapy's own scheduler as Scrapy ships it (the project settings choose breadth first).
SCRAPY_DEFAULT_SCHEDULER = {
    "SCHEDULER": "scrapy.core.scheduler.Scheduler",
    "SCHEDULER_PRIORITY_QUEUE": "scrapy.pqueues.DownloaderAwarePriorityQueue",
    "SCHEDULER_MEMORY_QUEUE": "scrapy.squeues.LifoMemoryQueue",
    "SCHEDULER_DISK_QUEUE": "scrapy.squeues.PickleLifoDiskQueue",
    "DEPTH_PRIORITY": "0",
}
# Crawler kinds of each comparison: the first is the baseline of the ratio.
COMPARISONS = {"foundation": ("plain", "site"), "frontier": ("scrapy", "frontier")}
KIND_SETTINGS = {"scrapy": SCRAPY_DEFAULT_SCHEDULER, "frontier": {}}


def run_crawl(
    kind: str, proxy: str, seeds: Path, workdir: Path, extra: dict[str, str] | None = None
) -> dict:
    stats_file = workdir / f"{kind}-stats.json"
    settings = {**COMMON, **(extra or {}), "BENCH_STATS_FILE": str(stats_file)}
    settings |= KIND_SETTINGS.get(kind, {})
    if kind in ("site", *KIND_SETTINGS):
        command = [sys.executable, "-m", "scrapy", "crawl", "site"]
        settings |= {"TIANWANG_PROXY": proxy, "TIANWANG_DATA_DIR": str(workdir / "data")}
        env_extra = {"SCRAPY_SETTINGS_MODULE": "tianwang.settings"}
    else:
        command = [
            sys.executable,
            "-m",
            "scrapy",
            "runspider",
            str(ROOT / "bench" / "plain_spider.py"),
        ]
        env_extra = {"http_proxy": proxy}
        settings["EXTENSIONS"] = PLAIN_EXTENSIONS
    command += ["-a", f"seeds={seeds}"]
    for key, value in settings.items():
        command += ["-s", f"{key}={value}"]
    env = {**os.environ, "PYTHONPATH": str(ROOT), **env_extra}
    if kind != "plain":
        env.pop("http_proxy", None)
    return measured_run(command, env, workdir, stats_file)


def site_command(seeds: Path | str, settings: dict[str, str],
                 tree: Path = ROOT) -> tuple[list[str], dict[str, str]]:
    """`scrapy crawl site -a seeds=SEEDS -s K=V ...` in the project at `tree` (this one, or a
    commit's archive to compare with), and its environment."""
    command = [sys.executable, "-m", "scrapy", "crawl", "site", "-a", f"seeds={seeds}"]
    for key, value in settings.items():
        command += ["-s", f"{key}={value}"]
    env = {**os.environ, "PYTHONPATH": str(tree), "SCRAPY_SETTINGS_MODULE": "tianwang.settings"}
    env.pop("http_proxy", None)
    return command, env


def timed_process(command: list[str], env: dict[str, str], cwd: Path,
                  log: Path) -> tuple[int, float, float]:
    """Run a process, its output into `log`: its exit code, peak RSS (MB), wall seconds."""
    started = time.monotonic()
    with open(log, "wb") as out:
        usage = run_measured(command, cwd, env, out)
    return usage.returncode, usage.max_rss_kb / 1024, time.monotonic() - started


def measured_run(command: list[str], env: dict[str, str], workdir: Path, stats_file: Path) -> dict:
    """Run one crawl process; its stats (from BENCH_STATS_FILE) and the CPU seconds it took."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(command, cwd=workdir, env=env, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    stats = json.loads(stats_file.read_text(encoding="utf-8"))
    # CPU seconds of the crawl process: less disturbed by other load than wall-clock rates.
    stats["cpu_seconds"] = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return stats


def rate(stats: dict) -> float:
    return stats.get("response_received_count", 0) / stats["elapsed_time_seconds"]


def cpu_per_1000(stats: dict) -> float:
    return 1000 * stats["cpu_seconds"] / max(stats.get("response_received_count", 0), 1)


def measure(
    hosts: int,
    seed: int,
    rounds: int,
    kinds: tuple[str, str] = COMPARISONS["foundation"],
    extra: dict[str, str] | None = None,
) -> dict[str, list[dict]]:
    """Stats of each crawler's runs, round by round, alternating which runs first."""
    runs: dict[str, list[dict]] = {kind: [] for kind in kinds}
    with tempfile.TemporaryDirectory() as tmp, TestWebProcess(seed, hosts) as web:
        seeds = write_seeds(Path(tmp) / "seeds.txt", SyntheticWeb(seed, hosts).homepages())
        # Warm-up: the server builds its hosts.
        run_crawl(kinds[0], web.address, seeds, Path(tmp), extra)
        for round_no in range(1, rounds + 1):
            for kind in kinds if round_no % 2 else kinds[::-1]:
                with tempfile.TemporaryDirectory(dir=tmp) as workdir:
                    stats = run_crawl(kind, web.address, seeds, Path(workdir), extra)
                runs[kind].append(stats)
                print(run_line(round_no, kind, stats), flush=True)
    return runs


def run_line(round_no: int, kind: str, stats: dict) -> str:
    stored = stats.get("tianwang/storage/records", "-")
    return (
        f"round {round_no} {kind:8s}: {stats.get('response_received_count')} responses, "
        f"{stored} stored, {stats['elapsed_time_seconds']:.1f} s, {rate(stats):.1f} pages/s, "
        f"{cpu_per_1000(stats):.2f} cpu s/1000 pages"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=200)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--compare", choices=sorted(COMPARISONS), default="foundation")
    parser.add_argument("--delay", type=float, default=0.5, help="per-host delay (frontier)")
    parser.add_argument(
        "--concurrency", type=int, default=256, help="CONCURRENT_REQUESTS (frontier)"
    )
    parser.add_argument(
        "--pages", type=int, default=10_000, help="CLOSESPIDER_PAGECOUNT (frontier), 0 = all"
    )
    args = parser.parse_args()
    if args.compare == "frontier":
        return compare_frontier(args)
    runs = measure(args.hosts, args.seed, args.rounds)
    plain = statistics.median(rate(stats) for stats in runs["plain"])
    site = statistics.median(rate(stats) for stats in runs["site"])
    plain_cpu = statistics.median(cpu_per_1000(stats) for stats in runs["plain"])
    site_cpu = statistics.median(cpu_per_1000(stats) for stats in runs["site"])
    print(f"median plain scrapy: {plain:.1f} pages/s, {plain_cpu:.2f} cpu s/1000 pages")
    print(f"median site + storage: {site:.1f} pages/s, {site_cpu:.2f} cpu s/1000 pages")
    print(
        f"ratio site/plain: {site / plain:.3f} pages/s (target >= 0.9), "
        f"{plain_cpu / site_cpu:.3f} by cpu time"
    )
    print(f"machine: {os.cpu_count()} cores, python {sys.version.split()[0]}")
    return 0


def compare_frontier(args: argparse.Namespace) -> int:
    """The frontier against Scrapy's default scheduler: one connection per host, same delay."""
    polite = {
        "CONCURRENT_REQUESTS": str(args.concurrency),
        "CONCURRENT_REQUESTS_PER_DOMAIN": "1",
        "DOWNLOAD_DELAY": str(args.delay),
        "CLOSESPIDER_PAGECOUNT": str(args.pages),
    }
    kinds = COMPARISONS["frontier"]
    runs = measure(args.hosts, args.seed, args.rounds, kinds, polite)
    medians = {kind: statistics.median(rate(stats) for stats in runs[kind]) for kind in kinds}
    for kind in kinds:
        cpu = statistics.median(cpu_per_1000(stats) for stats in runs[kind])
        print(f"median {kind}: {medians[kind]:.1f} pages/s, {cpu:.2f} cpu s/1000 pages")
    ratio = medians["frontier"] / medians["scrapy"]
    print(f"ratio frontier/scrapy: {ratio:.3f} pages/s (target >= 0.95)")
    print(f"settings: {polite}, machine: {os.cpu_count()} cores, python {sys.version.split()[0]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
