"""`tianwang report DATA [-o report.html]`: one static HTML page about a crawl, with plots.

Pages and bytes over time, status codes, media types, the largest hosts, the directory depth
of what was stored, refusals and failures by reason, dedup and mirrors: read from the
records, mirrors.tsv and the stats each run leaves in DATA/stats/. Nothing in the page is
fetched from elsewhere; it opens in any browser, offline.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "report", help="an HTML report of a crawl's data directory, with plots",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dir", metavar="DATA", help="the crawl's data directory")
    parser.add_argument("-o", "--out", metavar="FILE", help="default: DATA/report.html")
    parser.set_defaults(func=cmd_report)


def cmd_report(args: argparse.Namespace) -> int:
    from tianwang.analysis.crawlreport import read_report
    from tianwang.analysis.reportpage import render
    from tianwang.formats.atomic import write_atomic

    data = Path(args.dir)
    if not data.is_dir():
        print(f"tianwang report: {data}: no such directory", file=sys.stderr)
        return 2
    out = Path(args.out) if args.out else data / "report.html"
    report = read_report(data)
    write_atomic(out, render(report, f"Crawl report: {data.resolve().name}").encode("utf-8"))
    damaged = f", {report.damaged} damaged records skipped" if report.damaged else ""
    print(f"report of {report.pages:,} pages from {len(report.hosts):,} hosts{damaged}: {out}")
    return 0
