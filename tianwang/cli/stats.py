"""`tianwang stats`: the CWT200g thesis's statistics tables of a record tree
(tianwang.collection.stats)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from tianwang.collection import stats as record_stats
from tianwang.collection.provinces import ProvinceError, load_registry
from tianwang.collection.sizefit import fit_sizes
from tianwang.progress import terminal_progress


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "stats", help="the CWT200g thesis's statistics tables of a record tree (Markdown)",
        description=record_stats.__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dir", metavar="DIR", help="record tree (e.g. a tianwang sample output)")
    parser.add_argument("--out", metavar="FILE", help="write the report here (default: stdout)")
    parser.add_argument("--plot", metavar="PNG", help="draw the site-size distribution here")
    parser.add_argument("--provinces", metavar="FILE",
                        help="`<domain> <province>` lines (registrants' provinces, e.g. from "
                             "WHOIS) for the province table, before the domain's own")
    parser.add_argument("--workers", type=_positive, default=os.cpu_count() or 1,
                        help="processes reading the records (default: one per core)")
    parser.set_defaults(func=cmd_stats)


def cmd_stats(args: argparse.Namespace) -> int:
    tree = Path(args.dir)
    try:
        with terminal_progress() as progress:
            registry = load_registry(args.provinces) if args.provinces else None
            stats = record_stats.stats_of(tree, args.workers, progress, registry)
    except (record_stats.StatsError, ProvinceError) as exc:
        print(f"tianwang stats: {exc}", file=sys.stderr)
        return 1
    for span in stats.damaged:
        print(f"tianwang stats: damaged, not counted: {span}", file=sys.stderr)
    status = 1 if stats.damaged else 0  # the report is whole, of every record that reads
    fit = fit_sizes(stats.sizes)
    plot = Path(args.plot) if args.plot else None
    if plot is not None:
        record_stats.draw_plot(plot, stats.sizes, fit)
    if args.out is None:
        record_stats.write_report(sys.stdout, tree, stats, fit, plot)
        return status
    out = Path(args.out)
    tmp = out.with_name(out.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as file:
        record_stats.write_report(file, tree, stats, fit, plot)
    tmp.replace(out)
    print(f"stats: {stats.total.pages:,} pages, {stats.total.sites:,} sites, "
          f"{stats.total.bytes:,} bytes -> {out}")
    return status


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value
