"""`tianwang changes report DIR`: what the visit history says about how pages change.

Per class (the page-types paper's F1: rate >= the mean rate, F2: the rest) the urls, their
mean rate and the revisit interval the two-class policy gives them; the distribution of the
estimated rates as a table and a PNG histogram; and the entry pages at their last visit.
"""

from __future__ import annotations

import argparse
import math
import sqlite3
import sys
import time
from collections import Counter
from pathlib import Path
from typing import TextIO

from tianwang import default_settings as defaults
from tianwang.analysis.changerates import classes
from tianwang.analysis.revisits import DAY, TWO_CLASS, UrlRate, frequencies, url_rates
from tianwang.formats.history import FILE_NAME, HistoryDamaged, HistoryStore, Visit

# Upper ends of the rate table's bins, in changes a day (0 has a row of its own).
BIN_ENDS = (0.01, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0, math.inf)


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "changes", help="change rates and entry pages from a crawl's visit history")
    commands = parser.add_subparsers(dest="changes_command", required=True)
    report = commands.add_parser(
        "report", help="per-class counts, rate distribution (table and PNG), entry pages",
        description=__doc__.splitlines()[0])
    report.add_argument("dir", metavar="DIR", help=f"a data directory holding {FILE_NAME}")
    report.add_argument("--png", metavar="FILE",
                        help="histogram of the rates (default: DIR/change_rates.png)")
    report.add_argument("--urls", metavar="FILE",
                        help="also write one line a url: rate, 95%% interval, class, entry")
    report.add_argument("--min-revisit", type=float, default=defaults.TIANWANG_MIN_REVISIT,
                        help="shortest revisit interval, seconds (default: the setting's)")
    report.add_argument("--max-revisit", type=float, default=defaults.TIANWANG_MAX_REVISIT,
                        help="longest revisit interval, seconds (default: the setting's)")
    report.set_defaults(func=cmd_report)


def cmd_report(args: argparse.Namespace) -> int:
    path = Path(args.dir) / FILE_NAME
    if not path.is_file():
        print(f"tianwang changes report: no visit history at {path} "
              "(crawl with -s TIANWANG_CHANGES=1 first)", file=sys.stderr)
        return 2
    if not 0 < args.min_revisit <= args.max_revisit:
        print("tianwang changes report: need 0 < --min-revisit <= --max-revisit",
              file=sys.stderr)
        return 2
    try:
        with HistoryStore(args.dir, readonly=True) as store:
            visits = list(store.visits())
    except (sqlite3.DatabaseError, OSError, HistoryDamaged) as exc:
        print(f"tianwang changes report: {path}: {exc}", file=sys.stderr)
        return 1
    rates = url_rates(visits)
    write_report(sys.stdout, visits, rates, args.min_revisit, args.max_revisit)
    png = Path(args.png) if args.png else Path(args.dir) / "change_rates.png"
    histogram(png, [r.estimate.rate for r in rates if r.estimate is not None])
    print(f"histogram: {png}")
    if args.urls:
        write_urls(Path(args.urls), rates)
        print(f"urls: {args.urls}")
    return 0


def write_urls(path: Path, rates: list[UrlRate]) -> None:
    """A tab-separated table of every url's estimate (written whole, then renamed)."""
    rated = [r.estimate.rate for r in rates if r.estimate is not None]
    mean = sum(rated) / len(rated) if rated else 0.0
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as out:
        out.write("url\tvisits\tchanges\trate_per_day\tlow\thigh\tclass\tentry\n")
        for r in rates:
            e = r.estimate
            if e is None:
                out.write(f"{r.url}\t1\t0\t\t\t\t\t{int(r.entry)}\n")
                continue
            cls = "F1" if e.rate >= mean else "F2"
            out.write(f"{r.url}\t{e.visits}\t{e.changes}\t{e.rate:.6g}\t{e.low:.6g}\t"
                      f"{e.high:.6g}\t{cls}\t{int(r.entry)}\n")
    tmp.replace(path)


def write_report(out: TextIO, visits: list[Visit], rates: list[UrlRate], min_revisit: float,
                 max_revisit: float) -> None:
    rated = [r for r in rates if r.estimate is not None]
    values = [r.estimate.rate for r in rated]  # type: ignore[union-attr]
    statuses = Counter(v.status for v in visits)
    first, last = min(v.time for v in visits), max(v.time for v in visits)
    out.write(f"visits: {len(visits)} of {len(rates)} urls, {_date(first)} to {_date(last)}; "
              f"304 answers: {statuses.get(304, 0)}; "
              f"changed: {sum(v.changed for v in visits)}\n\n")
    out.write("class  urls  mean rate/day  revisit every (two-class)\n")
    if rated:
        chosen = frequencies(values, TWO_CLASS, 0.0, min_revisit, max_revisit)
        for cls in (1, 2):
            members = [i for i, c in enumerate(classes(values)) if c == cls]
            if members:
                mean = sum(values[i] for i in members) / len(members)
                every = _duration(DAY / chosen[members[0]])
                out.write(f"F{cls}     {len(members):4d}  {mean:13.3f}  {every}\n")
    out.write(f"unrated (one visit): {len(rates) - len(rated)}\n\n")
    out.write("rate/day        urls\n")
    for label, count in rate_table(values):
        out.write(f"{label:<14} {count:5d}\n")
    entries = sorted(r.url for r in rates if r.entry)
    out.write(f"\nentry pages at their last visit: {len(entries)}\n")
    out.writelines(f"  {url}\n" for url in entries)


def rate_table(values: list[float]) -> list[tuple[str, int]]:
    rows = [("0", sum(1 for v in values if v == 0))]
    low = 0.0
    for high in BIN_ENDS:
        count = sum(1 for v in values if low < v <= high)
        rows.append((f"> {low:g}" if high == math.inf else f"({low:g}, {high:g}]", count))
        low = high
    return rows


def histogram(path: Path, values: list[float]) -> None:
    """A PNG histogram of the rates on a log axis (rate 0 counted in the title)."""
    import matplotlib

    matplotlib.use("Agg")  # no display: a file only
    from matplotlib import pyplot

    changing = [v for v in values if v > 0]
    figure, axes = pyplot.subplots(figsize=(6, 4))
    if changing:
        low, high = math.log10(min(changing)), math.log10(max(changing))
        edges = [10 ** (low + (high - low) * k / 20) for k in range(21)] if high > low else 10
        axes.hist(changing, bins=edges)
        axes.set_xscale("log")
    axes.set_xlabel("estimated changes a day")
    axes.set_ylabel("urls")
    axes.set_title(f"{len(values)} urls rated, {len(values) - len(changing)} never changed")
    figure.tight_layout()
    tmp = path.with_name(path.name + ".tmp")
    figure.savefig(tmp, format="png")
    pyplot.close(figure)
    tmp.replace(path)


def _date(epoch: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.gmtime(epoch))


def _duration(seconds: float) -> str:
    if seconds >= DAY:
        return f"{seconds / DAY:.1f} days"
    return f"{seconds / 3600:.1f} hours"
