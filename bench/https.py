"""Pages/s and CPU per page of the `site` spider over https against over http, same web.

    python bench/https.py [--hosts 200] [--max-pages 60] [--seed 1] [--rounds 5]

Two test web processes serve the same sites: one plain (`testweb serve`), one with every
host https only (`testweb serve --https all`, certificates from its test CA, which the crawl
trusts through TIANWANG_CA_FILE, so the certificate check runs in full). Each round crawls
both, alternating which goes first; the crawl's own CPU seconds (the child process's rusage)
and its pages/s are reported with the ratio of medians https/http (goal >= 0.85), since the
machine is shared and noisy.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.crawl import cpu_per_1000, rate, run_crawl, run_line  # noqa: E402
from tianwang.testweb.launcher import TestWebProcess, write_seeds  # noqa: E402
from tianwang.testweb.model import SyntheticWeb  # noqa: E402

SIDES = ("http", "https")
TICKS = os.sysconf("SC_CLK_TCK")


def server_cpu(process: TestWebProcess) -> float:
    """CPU seconds the test web process has used so far (Linux /proc)."""
    assert process.proc is not None
    fields = Path(f"/proc/{process.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime, stime


def measure(args: argparse.Namespace) -> dict[str, list[dict]]:
    runs: dict[str, list[dict]] = {side: [] for side in SIDES}
    with tempfile.TemporaryDirectory() as tmp:
        ca = Path(tmp) / "ca.pem"
        plain = TestWebProcess(args.seed, args.hosts, args.max_pages)
        tls = TestWebProcess(args.seed, args.hosts, args.max_pages,
                             extra_args=("--https", "all", "--ca-file", str(ca)))
        with plain, tls:
            webs = {"http": plain.address, "https": tls.address}
            servers = {"http": plain, "https": tls}
            seeds = {
                "http": SyntheticWeb(args.seed, args.hosts, args.max_pages).homepages(),
                "https": SyntheticWeb(args.seed, args.hosts, args.max_pages,
                                      https="all").homepages(),
            }
            files = {side: write_seeds(Path(tmp) / f"{side}.txt", seeds[side]) for side in SIDES}
            extra = {"TIANWANG_CA_FILE": str(ca), "CONCURRENT_REQUESTS": str(args.concurrency)}
            for side in SIDES:  # warm-up: each server builds its hosts (and certificates)
                with tempfile.TemporaryDirectory(dir=tmp) as workdir:
                    run_crawl("site", webs[side], files[side], Path(workdir), extra)
            for round_no in range(1, args.rounds + 1):
                for side in SIDES if round_no % 2 else SIDES[::-1]:
                    before = server_cpu(servers[side])
                    with tempfile.TemporaryDirectory(dir=tmp) as workdir:
                        stats = run_crawl("site", webs[side], files[side], Path(workdir), extra)
                    stats["server_cpu"] = server_cpu(servers[side]) - before
                    runs[side].append(stats)
                    print(f"{run_line(round_no, side, stats)}, server "
                          f"{server_per_1000(stats):.2f} cpu s/1000 pages", flush=True)
    return runs


def server_per_1000(stats: dict) -> float:
    return 1000 * stats["server_cpu"] / max(stats.get("response_received_count", 0), 1)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=200)
    parser.add_argument("--max-pages", type=int, default=60)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--concurrency", type=int, default=32, help="CONCURRENT_REQUESTS")
    args = parser.parse_args()
    runs = measure(args)
    medians = {side: statistics.median(rate(s) for s in runs[side]) for side in SIDES}
    cpu = {side: statistics.median(cpu_per_1000(s) for s in runs[side]) for side in SIDES}
    server = {side: statistics.median(server_per_1000(s) for s in runs[side]) for side in SIDES}
    for side in SIDES:
        print(f"median {side}: {medians[side]:.1f} pages/s, {cpu[side]:.2f} cpu s/1000 pages, "
              f"server {server[side]:.2f} cpu s/1000 pages")
    print(f"ratio https/http: {medians['https'] / medians['http']:.3f} pages/s (goal >= 0.85), "
          f"{cpu['http'] / cpu['https']:.3f} by cpu time")
    paired = [rate(s) / rate(h) for h, s in zip(runs["http"], runs["https"], strict=True)]
    print(f"median of the rounds' own https/http ratios: {statistics.median(paired):.3f} "
          f"({', '.join(f'{r:.2f}' for r in paired)})")
    print(f"machine: {os.cpu_count()} cores, python {sys.version.split()[0]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
