"""The headline figures in one go, written over the "## Headline" section of bench/RESULTS.md.

    python bench/headline.py [--rounds 5] [--quick] [--only NAME ...] [--no-write]

Each entry runs one comparison against its baseline in the same run, rounds alternating
which goes first (this machine is shared: only same-run ratios mean anything), and gives
table rows, written in the order below whatever the order of --only: like for like first.
The section (from its "## Headline" heading to the next "## " heading, the first section of
the file) is rewritten with the date, the commit and this command; every other section of
RESULTS.md is left byte for byte. Run it at the end of every change to the crawl path, so
the table never describes code that is gone.

Entries (add one: a function (rounds) -> list of rows, and a line in ENTRIES):
  crawl-same-items  the full default stack (`site` + storage) against a plain Scrapy
            spider, both with the stack's CONCURRENT_ITEMS: like for like
  crawl     the same, each crawler with its own settings (plain Scrapy's defaults)
  frontier  the frontier's push+pop (default and depth-only) against Scrapy's default
            scheduler, in memory and under JOBDIR
  redis     one Redis shared-crawl node against a local crawl
  processes the full stack as 2 processes (TIANWANG_PROCESSES) against 1, CPU-bound
"""

from __future__ import annotations

import argparse
import datetime
import os
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

RESULTS = ROOT / "bench" / "RESULTS.md"
HEADING = "## Headline"
Row = tuple[str, str, str, str]  # (what, baseline, tianwang, ratio)


def spread(values: list[float]) -> str:
    return f"{min(values):.2f} to {max(values):.2f}"


def crawl_rows(rounds: int) -> list[Row]:
    """Each crawler with its own settings: the stack's tuned ones against Scrapy's defaults."""
    from tianwang import default_settings

    own = (f", each its own settings: CONCURRENT_ITEMS {default_settings.CONCURRENT_ITEMS} "
           "against Scrapy's 100")
    return _crawl_rows(rounds, own, None)


def same_items_rows(rounds: int) -> list[Row]:
    """Like for like: plain Scrapy given the stack's CONCURRENT_ITEMS too (the stack's
    largest gain over plain Scrapy is that one setting)."""
    from tianwang import default_settings

    items = default_settings.CONCURRENT_ITEMS
    return _crawl_rows(rounds, f", both CONCURRENT_ITEMS={items}",
                       {"CONCURRENT_ITEMS": str(items)})


def _crawl_rows(rounds: int, label: str, extra: dict[str, str] | None) -> list[Row]:
    from bench.crawl import cpu_per_1000, measure, rate

    runs = measure(hosts=200, seed=1, rounds=rounds, extra=extra)
    plain, site = runs["plain"], runs["site"]
    rates = [rate(s) / rate(p) for p, s in zip(plain, site, strict=True)]
    cpus = [cpu_per_1000(p) / cpu_per_1000(s) for p, s in zip(plain, site, strict=True)]
    med = statistics.median
    return [
        (f"full stack / plain Scrapy, pages/s (200-host web{label})",
         f"{med(rate(s) for s in plain):.1f}", f"{med(rate(s) for s in site):.1f}",
         f"**{med(rate(s) for s in site) / med(rate(s) for s in plain):.3f}** "
         f"(rounds {spread(rates)})"),
        (f"full stack / plain Scrapy, CPU s per 1000 pages{label}",
         f"{med(cpu_per_1000(s) for s in plain):.2f}", f"{med(cpu_per_1000(s) for s in site):.2f}",
         f"**{med(cpu_per_1000(s) for s in plain) / med(cpu_per_1000(s) for s in site):.3f}** "
         f"(rounds {spread(cpus)})"),
    ]


def frontier_rows(rounds: int) -> list[Row]:
    from bench.frontier import measure

    rates = measure(200_000, rounds)
    rows = []
    # "links": the default, with link relations (each push weighs its url's cash, a fifth of
    # the links re-find a pending url); "frontier": depth weight alone.
    for store in ("memory", "jobdir"):
        scrapy = statistics.median(wall for wall, _ in rates[f"scheduler {store}"])
        for kind, what in (("links", "default, link relations"), ("frontier", "depth only")):
            ours = statistics.median(wall for wall, _ in rates[f"{kind} {store}"])
            rows.append((f"frontier ({what}) / Scrapy's scheduler, push+pop per s "
                         f"(200k requests, {store})",
                         f"{scrapy:,.0f}", f"{ours:,.0f}", f"**{ours / scrapy:.2f}**"))
    return rows


def redis_rows(rounds: int) -> list[Row]:
    from bench.distributed import one_node_vs_local
    from tests.redis_server import RedisServer

    with tempfile.TemporaryDirectory() as tmp:
        server = RedisServer(Path(tmp) / "redis").start()
        try:
            ratio, medians = one_node_vs_local(server, 300, 20, rounds)
        finally:
            server.stop()
    return [("one Redis node / local crawl, pages/s (300 hosts x 20 pages)",
             f"{medians['local']:.1f}", f"{medians['redis']:.1f}", f"**{ratio:.3f}**")]


def processes_rows(rounds: int) -> list[Row]:
    from bench.processes import measure, summary

    found = summary(measure(2, PROCESS_HOSTS, 1, rounds), 2)
    same = "same pages stored" if found["same_urls"] and found["same_bodies"] else \
        "STORED SETS DIFFER"
    rows = []
    for what, label in (("wall", "whole command"), ("crawl", "first open to last close")):
        one = found[what]
        rows.append((f"2 processes / 1 process, pages/s, {label} ({PROCESS_HOSTS}-host web, "
                     f"no delay; {same})", f"{one['one']:.1f}", f"{one['many']:.1f}",
                     f"**{one['ratio']:.3f}** (rounds {spread(one['rounds'])})"))
    return rows


PROCESS_HOSTS = 1200  # about 33,000 pages: a process's start-up is 2% of the crawl


ENTRIES: dict[str, Callable[[int], list[Row]]] = {  # the table's order: like for like first
    "crawl-same-items": same_items_rows,
    "crawl": crawl_rows,
    "frontier": frontier_rows,
    "redis": redis_rows,
    "processes": processes_rows,
}


def section(rows: list[Row], when: str, commit: str, command: str) -> str:
    lines = [f"{HEADING}, as the code is now ({when}, commit {commit})", "",
             f"    {command}", "",
             "Written by bench/headline.py; each ratio is tianwang over its baseline, medians of "
             "the same run's alternating rounds. Like for like first: both crawlers with the "
             "same settings, CONCURRENT_ITEMS included (the stack's largest gain over plain "
             "Scrapy's defaults is that one setting).", "",
             "| figure | baseline | tianwang | ratio |", "|---|---|---|---|"]
    lines += [f"| {what} | {base} | {ours} | {ratio} |" for what, base, ours, ratio in rows]
    return "\n".join(lines) + "\n"


def replace_section(text: str, new: str) -> str:
    """`text` with its headline section (from its heading to the next "## ") replaced by
    `new`, or `new` put before the first "## " section when there is none."""
    start = text.find(f"\n{HEADING}")
    if start < 0:
        first = text.find("\n## ")
        at = len(text) if first < 0 else first + 1
        return text[:at] + new + "\n" + text[at:]
    start += 1
    end = text.find("\n## ", start + len(HEADING))
    end = len(text) if end < 0 else end + 1
    return text[:start] + new + "\n" + text[end:]


def commit_name() -> str:
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, check=True,
                             capture_output=True, text=True).stdout.strip()
        # RESULTS.md itself is left out: it is what this writes.
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--",
                                ".", ":!bench/RESULTS.md"],
                               cwd=ROOT, capture_output=True, text=True).stdout.strip()
        return out + (" + uncommitted changes" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="1 round each, to try the script")
    parser.add_argument("--only", nargs="+", choices=list(ENTRIES),
                        help="run these entries alone (the table holds their rows only)")
    parser.add_argument("--no-write", action="store_true", help="print the section only")
    args = parser.parse_args()
    rounds = 1 if args.quick else args.rounds
    rows: list[Row] = []
    for name in [name for name in ENTRIES if name in (args.only or ENTRIES)]:
        print(f"--- {name}", flush=True)
        rows += ENTRIES[name](rounds)
    when = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    command = "python bench/headline.py " + " ".join(sys.argv[1:])
    new = section(rows, when, commit_name(), command.strip()) + (
        f"\nMachine: {os.cpu_count()} cores, Python {sys.version.split()[0]}; "
        f"{os.getloadavg()[0]:.1f} load average at the end.\n")
    print(new)
    if not args.no_write:
        from tianwang.formats.atomic import write_atomic

        write_atomic(RESULTS, replace_section(RESULTS.read_text(encoding="utf-8"), new)
                     .encode("utf-8"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
