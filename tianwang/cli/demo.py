"""`tianwang demo`: serve the bundled test web and crawl it into ./demo, then say what to
run next.

The main job on the embedded default: a user sees the whole path (seeds, politeness,
records on disk) work on this machine without touching the real web. It writes into a
directory of its own, so a first crawl of the user's own (./data by default, or
`tianwang first-crawl`'s) starts empty and its report shows that crawl alone.
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from pathlib import Path
from typing import Any

from tianwang.cli.firstcrawl import program
from tianwang.cli.testweb import positive_int

# Local test web: no politeness delay is needed, the server is ours.
DEMO_SETTINGS = {
    "DOWNLOAD_DELAY": 0,
    "CONCURRENT_REQUESTS": 32,
    "CONCURRENT_REQUESTS_PER_DOMAIN": 4,
    "LOG_LEVEL": "WARNING",
}


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("demo", help="crawl the bundled test web into ./demo")
    parser.add_argument("--seed", type=int, default=1, help="test web seed (default 1)")
    parser.add_argument(
        "--hosts", type=positive_int, default=100, help="test web hosts (default 100)"
    )
    parser.add_argument("--data-dir", default="demo",
                        help="record tree to write (default ./demo)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from tianwang.testweb.launcher import TestWebProcess
    from tianwang.testweb.model import SyntheticWeb

    data_dir = Path(args.data_dir)
    if any(data_dir.glob("data_*")):
        # A second demo run would store every page again (dedup is not part of it).
        print(
            f"tianwang demo: {data_dir}/ already holds records; remove it or pass --data-dir",
            file=sys.stderr,
        )
        return 2
    seeds = SyntheticWeb(args.seed, args.hosts, suffix=".test").homepages()
    with TestWebProcess(args.seed, args.hosts, extra_args=("--dot-test",)) as web:
        print(f"test web: {args.hosts} hosts (seed {args.seed}) at {web.address}", flush=True)
        started = time.monotonic()
        stats = crawl(web.address, seeds, args.data_dir)
        elapsed = time.monotonic() - started
    print(summary(stats, elapsed, data_dir))
    if not stats.get("tianwang/storage/records"):
        return 1
    print(next_steps(data_dir))
    return 0


def crawl(proxy: str, seeds: list[str], data_dir: str) -> dict[str, Any]:
    """Run the `site` spider in this process; return its stats."""
    from scrapy.crawler import CrawlerProcess
    from scrapy.settings import Settings

    from tianwang.spiders.site import SiteSpider

    # tianwang's settings only: not those of whatever scrapy.cfg the current directory holds.
    settings = Settings()
    settings.setmodule("tianwang.settings", priority="project")
    settings.setdict(
        {**DEMO_SETTINGS, "TIANWANG_PROXY": proxy, "TIANWANG_DATA_DIR": data_dir},
        priority="cmdline",
    )
    process = CrawlerProcess(settings)
    crawler = process.create_crawler(SiteSpider)
    process.crawl(crawler, seeds=",".join(seeds))
    process.start()
    return crawler.stats.get_stats()


def next_steps(data_dir: Path) -> str:
    tianwang = program("tianwang", "tianwang")
    steps = [
        ([*tianwang, "report", str(data_dir)],
         f"an HTML report of this crawl: {data_dir / 'report.html'}"),
        ([*tianwang, "records", "ls", str(data_dir)], "the records it stored, one a line"),
        ([*tianwang, "first-crawl"], "a crawl of your own, on the test web, offline"),
    ]
    width = max(len(shlex.join(command)) for command, _what in steps)
    return "Next:\n" + "\n".join(f"  {shlex.join(command):{width}}  # {what}"
                                 for command, what in steps)


def summary(stats: dict[str, Any], elapsed: float, data_dir: Path) -> str:
    pages = stats.get("tianwang/storage/records", 0)
    hosts = stats.get("tianwang/storage/hosts", 0)
    body = stats.get("tianwang/storage/body_bytes", 0)
    on_disk = stats.get("tianwang/storage/bytes_on_disk", 0)
    return (
        f"pages {pages}, hosts {hosts}, bytes {body} ({on_disk} on disk in {data_dir}/), "
        f"{pages / max(elapsed, 1e-9):.1f} pages/s over {elapsed:.1f} s"
    )
