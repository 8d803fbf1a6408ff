"""Cost of robots.txt in full and back-off: the `site` spider with tianwang's RobotsMiddleware
and BackoffMiddleware (the project's settings) against the same spider with Scrapy's own
RobotsTxtMiddleware and no back-off, same web, same run.

    python bench/protocols.py [--hosts 200] [--seed 1] [--rounds 3]

The test web's hosts answer robots.txt 200 (no Crawl-delay, no 429), so both crawls fetch the
same pages and what differs is only the middlewares' per-request work. Rounds alternate which
runs first; the ratio of medians is reported (pages/s and CPU per 1,000 pages).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import tianwang.default_settings as defaults  # noqa: E402
from bench import crawl  # noqa: E402

# The project's downloader middlewares less tianwang's two: Scrapy's RobotsTxtMiddleware (in
# its base list) runs again. Given whole on the command line, as the add-on expects.
SCRAPY_ROBOTS = {path: order for path, order in defaults.DOWNLOADER_MIDDLEWARES.items()
                 if order is not None and path not in (
                     "tianwang.middlewares.robots.RobotsMiddleware",
                     "tianwang.middlewares.backoff.BackoffMiddleware")}
KINDS = ("scrapy-robots", "tianwang-robots")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=200)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    crawl.KIND_SETTINGS["scrapy-robots"] = {"DOWNLOADER_MIDDLEWARES": json.dumps(SCRAPY_ROBOTS)}
    crawl.KIND_SETTINGS["tianwang-robots"] = {}
    runs = crawl.measure(args.hosts, args.seed, args.rounds, KINDS)
    rates = {kind: statistics.median(crawl.rate(s) for s in runs[kind]) for kind in KINDS}
    cpus = {kind: statistics.median(crawl.cpu_per_1000(s) for s in runs[kind]) for kind in KINDS}
    for kind in KINDS:
        print(f"median {kind}: {rates[kind]:.1f} pages/s, {cpus[kind]:.2f} cpu s/1000 pages")
    print(f"ratio tianwang/scrapy: {rates[KINDS[1]] / rates[KINDS[0]]:.3f} pages/s, "
          f"{cpus[KINDS[0]] / cpus[KINDS[1]]:.3f} by cpu time")
    print(f"machine: {os.cpu_count()} cores, python {sys.version.split()[0]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
