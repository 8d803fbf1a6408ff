"""Pages/s of one crawl in N processes (TIANWANG_PROCESSES) against the same crawl in one.

    python bench/processes.py [--processes 2] [--hosts 600] [--seed 1] [--rounds 5]

A CPU-bound crawl: bench/crawl.py's settings (no delay, 32 requests a process, robots.txt
obeyed), the `site` spider with the whole default stack, on the test web in its own process.
Each round runs the one-process crawl and the N-process crawl, alternating which goes first,
and prints for each: responses, pages stored, the wall time of the whole command (start-up,
the redis-server and the N processes included) and the crawl time (first spider open to last
close). The summary gives the ratio of medians and whether the N-process crawl stored the
same pages (urls and bodies) as the one-process crawl.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.crawl import COMMON, site_command  # noqa: E402
from tianwang.formats import iter_tree  # noqa: E402
from tianwang.testweb.launcher import TestWebProcess, write_seeds  # noqa: E402
from tianwang.testweb.model import SyntheticWeb  # noqa: E402


def run(processes: int, proxy: str, seeds: Path, workdir: Path) -> dict:
    # The stack's own extensions only (COMMON's adds the stats dump, one file for all the
    # processes): each process writes its stats file, which this reads.
    common = {key: value for key, value in COMMON.items() if key != "EXTENSIONS"}
    settings = {**common, "TIANWANG_PROXY": proxy,
                "TIANWANG_DATA_DIR": str(workdir / "data"), "TIANWANG_PROCESSES": str(processes)}
    command, env = site_command(seeds, settings)
    before = _cpu_children()
    started = time.monotonic()
    subprocess.run(command, cwd=workdir, env=env, check=True)
    wall = time.monotonic() - started
    cpu = _cpu_children() - before  # the crawl processes, the supervisor, the redis-server
    stats = [json.loads(p.read_text()) for p in (workdir / "data" / "stats").glob("*.json")]
    opened = min(datetime.fromisoformat(s["start_time"]) for s in stats)
    closed = max(datetime.fromisoformat(s["finish_time"]) for s in stats)
    stored = {record.url: hashlib.md5(record.http.body).hexdigest()
              for _path, record in iter_tree(workdir / "data")}
    return {"responses": sum(s.get("response_received_count", 0) for s in stats),
            "wall": wall, "crawl": (closed - opened).total_seconds(), "stored": stored,
            "cpu": cpu}


def _cpu_children() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def line(round_no: int, processes: int, result: dict) -> str:
    return (f"round {round_no} {processes} process{'es' if processes > 1 else ''}: "
            f"{result['responses']} responses, {len(result['stored'])} stored, "
            f"wall {result['wall']:.1f} s ({result['responses'] / result['wall']:.1f} pages/s), "
            f"crawl {result['crawl']:.1f} s ({result['responses'] / result['crawl']:.1f} pages/s), "
            f"{1000 * result['cpu'] / result['responses']:.2f} cpu s/1000 pages")


def measure(count: int, hosts: int, seed: int, rounds: int) -> dict[int, list[dict]]:
    """Each round's result for 1 and for `count` processes, alternating which goes first."""
    kinds = (1, count)
    results: dict[int, list[dict]] = {kind: [] for kind in kinds}
    with tempfile.TemporaryDirectory() as tmp, TestWebProcess(seed, hosts) as web:
        seeds = write_seeds(Path(tmp) / "seeds.txt", SyntheticWeb(seed, hosts).homepages())
        with tempfile.TemporaryDirectory(dir=tmp) as warmup:  # the server builds its hosts
            run(1, web.address, seeds, Path(warmup))
        for round_no in range(1, rounds + 1):
            for kind in kinds if round_no % 2 else kinds[::-1]:
                with tempfile.TemporaryDirectory(dir=tmp) as workdir:
                    result = run(kind, web.address, seeds, Path(workdir))
                results[kind].append(result)
                print(line(round_no, kind, result), flush=True)
    return results


def summary(results: dict[int, list[dict]], count: int) -> dict:
    """Per measure (wall, crawl): median pages/s of each, their ratio, the rounds' ratios;
    and whether every run stored the same pages."""
    out: dict = {}
    for what in ("wall", "crawl"):
        rates = {kind: [r["responses"] / r[what] for r in runs] for kind, runs in results.items()}
        one, many = statistics.median(rates[1]), statistics.median(rates[count])
        rounds = [m / o for o, m in zip(rates[1], rates[count], strict=True)]
        out[what] = {"one": one, "many": many, "ratio": many / one, "rounds": rounds}
    runs = results[1] + results[count]
    first = runs[0]["stored"]
    out["same_urls"] = all(set(r["stored"]) == set(first) for r in runs)
    out["same_bodies"] = all(set(r["stored"].values()) == set(first.values()) for r in runs)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--hosts", type=int, default=600)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    found = summary(measure(args.processes, args.hosts, args.seed, args.rounds), args.processes)
    for what in ("wall", "crawl"):
        one = found[what]
        print(f"median {what} pages/s: 1 process {one['one']:.1f}, {args.processes} processes "
              f"{one['many']:.1f}: ratio {one['ratio']:.3f} (rounds {min(one['rounds']):.2f} "
              f"to {max(one['rounds']):.2f})")
    print(f"stored sets identical in every run: urls {found['same_urls']}, "
          f"bodies {found['same_bodies']}")
    print(f"machine: {os.cpu_count()} cores, python {sys.version.split()[0]}, "
          f"load average {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
