"""Pages/s of the `site` spider (storage on) against a plain Scrapy spider, same web, same run.

    python bench/crawl.py [--hosts 200] [--seed 1] [--rounds 3]

Both crawls go through the same test web process with the same politeness settings; the
rounds alternate which runs first, and the ratio of medians is reported, since this machine
is shared and noisy. Prints one line per run and a summary.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tianwang.testweb.launcher import TestWebProcess, write_seeds  # noqa: E402
from tianwang.testweb.model import SyntheticWeb  # noqa: E402

COMMON = {
    "DOWNLOAD_DELAY": "0",
    "CONCURRENT_REQUESTS": "32",
    "CONCURRENT_REQUESTS_PER_DOMAIN": "4",
    "ROBOTSTXT_OBEY": "True",
    "LOG_LEVEL": "WARNING",
    "RETRY_GIVE_UP_LOG_LEVEL": "INFO",
    "TELNETCONSOLE_ENABLED": "False",
    "REMOTE_CONTROL_ENABLED": "False",
    "EXTENSIONS": json.dumps({"bench.statsdump.StatsDump": 0}),
}


def run_crawl(kind: str, proxy: str, seeds: Path, workdir: Path) -> dict:
    stats_file = workdir / f"{kind}-stats.json"
    settings = {**COMMON, "BENCH_STATS_FILE": str(stats_file)}
    if kind == "site":
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
    command += ["-a", f"seeds={seeds}"]
    for key, value in settings.items():
        command += ["-s", f"{key}={value}"]
    env = {**os.environ, "PYTHONPATH": str(ROOT), **env_extra}
    if kind == "site":
        env.pop("http_proxy", None)
    subprocess.run(command, cwd=workdir, env=env, check=True)
    return json.loads(stats_file.read_text(encoding="utf-8"))


def rate(stats: dict) -> float:
    return stats.get("response_received_count", 0) / stats["elapsed_time_seconds"]


def measure(hosts: int, seed: int, rounds: int) -> dict[str, list[float]]:
    """Pages/s of each crawler, round by round, alternating which runs first."""
    rates: dict[str, list[float]] = {"plain": [], "site": []}
    with tempfile.TemporaryDirectory() as tmp, TestWebProcess(seed, hosts) as web:
        seeds = write_seeds(Path(tmp) / "seeds.txt", SyntheticWeb(seed, hosts).homepages())
        run_crawl("plain", web.address, seeds, Path(tmp))  # warm-up: the server builds its hosts
        for round_no in range(1, rounds + 1):
            for kind in ("plain", "site") if round_no % 2 else ("site", "plain"):
                with tempfile.TemporaryDirectory(dir=tmp) as workdir:
                    stats = run_crawl(kind, web.address, seeds, Path(workdir))
                rates[kind].append(rate(stats))
                print(run_line(round_no, kind, stats), flush=True)
    return rates


def run_line(round_no: int, kind: str, stats: dict) -> str:
    stored = stats.get("tianwang/storage/records", "-")
    return (
        f"round {round_no} {kind:5s}: {stats.get('response_received_count')} responses, "
        f"{stored} stored, {stats['elapsed_time_seconds']:.1f} s, {rate(stats):.1f} pages/s"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=200)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    rates = measure(args.hosts, args.seed, args.rounds)
    plain, site = statistics.median(rates["plain"]), statistics.median(rates["site"])
    print(f"median plain scrapy: {plain:.1f} pages/s")
    print(f"median site + storage: {site:.1f} pages/s")
    print(f"ratio site/plain: {site / plain:.3f} (target >= 0.9)")
    print(f"machine: {os.cpu_count()} cores, python {sys.version.split()[0]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
