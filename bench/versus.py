"""The `site` crawl (full stack, storage on) of this tree against the same crawl of a commit.

    python bench/versus.py COMMIT [--hosts 200] [--seed 1] [--rounds 5]

Both crawl one test web process (this tree's) with bench/crawl.py's settings; the commit's
code is `git archive`d into a temporary directory and put first on PYTHONPATH, so each
crawl runs its own tianwang. The rounds alternate which goes first (the machine is shared:
only ratios of the same run mean anything); prints one line per run, then the ratios of
medians, this tree over the commit: pages/s (above 1: faster) and CPU seconds per 1000
pages (above 1: cheaper).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.crawl import COMMON, cpu_per_1000, measured_run, rate  # noqa: E402
from tianwang.testweb.launcher import TestWebProcess, write_seeds  # noqa: E402
from tianwang.testweb.model import SyntheticWeb  # noqa: E402


def archived(commit: str, into: Path) -> Path:
    """The commit's tree, extracted into `into` (made): its code, to run beside this tree's."""
    into.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", commit],
                             check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def stack_extensions(tree: Path) -> str:
    """bench/crawl.py's EXTENSIONS as the tree's own stack has them (a commit may lack
    extensions this tree has, or have others)."""
    code = ("import json, tianwang.default_settings as d; "
            "print(json.dumps({**d.EXTENSIONS, 'bench.statsdump.StatsDump': 0}))")
    env = {**os.environ, "PYTHONPATH": str(tree)}
    # In the tree: `python -c` puts its working directory first on the path, before PYTHONPATH.
    return subprocess.run([sys.executable, "-c", code], env=env, check=True, text=True,
                          capture_output=True, cwd=tree).stdout.strip()


def site_run(tree: Path, proxy: str, seeds: Path, workdir: Path) -> dict:
    stats_file = workdir / "stats.json"
    settings = {**COMMON, "BENCH_STATS_FILE": str(stats_file), "TIANWANG_PROXY": proxy,
                "TIANWANG_DATA_DIR": str(workdir / "data"),
                "EXTENSIONS": stack_extensions(tree)}
    command = [sys.executable, "-m", "scrapy", "crawl", "site", "-a", f"seeds={seeds}"]
    for key, value in settings.items():
        command += ["-s", f"{key}={value}"]
    env = {**os.environ, "PYTHONPATH": str(tree), "SCRAPY_SETTINGS_MODULE": "tianwang.settings"}
    env.pop("http_proxy", None)
    return measured_run(command, env, workdir, stats_file)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("commit")
    parser.add_argument("--hosts", type=int, default=200)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        trees = {"commit": archived(args.commit, Path(tmp) / "base"), "this": ROOT}
        runs: dict[str, list[dict]] = {name: [] for name in trees}
        with TestWebProcess(args.seed, args.hosts) as web:
            seeds = write_seeds(Path(tmp) / "seeds.txt",
                                SyntheticWeb(args.seed, args.hosts).homepages())
            with tempfile.TemporaryDirectory(dir=tmp) as workdir:  # warm-up: the web builds
                site_run(ROOT, web.address, seeds, Path(workdir))
            for round_no in range(1, args.rounds + 1):
                names = list(trees) if round_no % 2 else list(trees)[::-1]
                for name in names:
                    with tempfile.TemporaryDirectory(dir=tmp) as workdir:
                        stats = site_run(trees[name], web.address, seeds, Path(workdir))
                    runs[name].append(stats)
                    print(f"round {round_no} {name:6s}: {stats.get('response_received_count')} "
                          f"responses, {stats.get('tianwang/storage/records')} stored, "
                          f"{rate(stats):.1f} pages/s, {cpu_per_1000(stats):.2f} cpu s/1000",
                          flush=True)
    med = statistics.median
    pages = {name: med(rate(s) for s in runs[name]) for name in trees}
    cpu = {name: med(cpu_per_1000(s) for s in runs[name]) for name in trees}
    print(f"{args.commit}: {pages['commit']:.1f} pages/s, {cpu['commit']:.2f} cpu s/1000 pages")
    print(f"this tree: {pages['this']:.1f} pages/s, {cpu['this']:.2f} cpu s/1000 pages")
    print(f"this / {args.commit}: pages/s {pages['this'] / pages['commit']:.3f}, "
          f"cpu {cpu['commit'] / cpu['this']:.3f} (above 1: faster, cheaper)")
    print(f"machine: {os.cpu_count()} cores, python {sys.version.split()[0]}, "
          f"load {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
