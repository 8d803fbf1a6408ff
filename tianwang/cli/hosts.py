"""`tianwang hosts count | clean | dealias | filter | homepage`: the CWT200g thesis's host
lists, D0 to D4, and the page-types paper's homepage finding.

The steps' logic is in tianwang.collection (hostcount, hostnames, dealias, spamfilter,
homepage); this module is their command line: arguments, messages, exit status.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

from tianwang.collection import dealias as dealiasing
from tianwang.collection import homepage as homepages
from tianwang.collection import hostcount, hostnames, spamfilter
from tianwang.collection.hosttable import TableError, removal_line
from tianwang.collection.sitelist import SiteListError, check_out_dir, write_lines
from tianwang.formats.record import RecordError
from tianwang.progress import terminal_progress


def register(subparsers: Any) -> None:
    hosts = subparsers.add_parser("hosts", help="host lists for a collection: D0 to D4")
    steps = hosts.add_subparsers(dest="hosts_command", required=True)
    for step in (register_count, register_clean, register_dealias, register_filter,
                 register_homepage):
        step(steps)


def register_count(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "count", help="pages per site from url lists: D0",
        description="Count pages per site (the CWT200g thesis's D0) in url lists, summed over the "
                    "lists, on every core; lines that are not http(s) urls are counted by "
                    "reason and skipped. D0 lines are <site>\\t<pages>, the site written "
                    "scheme://host:port/, sorted (see `pydoc tianwang.collection.hostcount`).",
    )
    parser.add_argument("lists", nargs="+", metavar="URL_LIST",
                        help="one url a line, plain or gzip; several lists are summed")
    parser.add_argument("-o", "--out", required=True, metavar="D0",
                        help="the site list to write: <site>\\t<pages>, sorted")
    parser.add_argument("--workers", type=_positive, default=os.cpu_count() or 1,
                        help="processes counting (default: one per core; 1 counts in this "
                             "process)")
    parser.add_argument("--merge", action="store_true",
                        help="the inputs are D0 files counted on other machines: sum them")
    parser.set_defaults(func=cmd_count)


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def cmd_count(args: argparse.Namespace) -> int:
    started = time.monotonic()
    try:
        check_out_dir(args.out)
        if args.merge:
            result = hostcount.merge_site_lists(args.lists)
        else:
            with terminal_progress() as progress:
                result = hostcount.count_lists(args.lists, args.workers, progress)
        rows = sorted(result.sites.items())
        write_lines(args.out, (f"{site}\t{pages}\n" for site, pages in rows))
    # ValueError: a D0 to merge is not one
    except (hostcount.CountError, OSError, ValueError) as exc:
        print(f"tianwang hosts count: {exc}; {args.out} not written", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"tianwang hosts count: interrupted; {args.out} not written", file=sys.stderr)
        return 130
    for line in hostcount.count_lines(result, len(args.lists), time.monotonic() - started):
        print(line)
    return 0


def register_clean(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "clean", help="drop malformed host names: D0 -> D1",
        description="Drop the sites whose host name is malformed, each with its reason "
                    "(see `pydoc tianwang.collection.hostnames`).",
    )
    parser.add_argument("d0", metavar="D0", help="site list written by `hosts count`")
    parser.add_argument("-o", "--out", required=True, metavar="D1",
                        help="the well-formed sites, same format")
    parser.add_argument("--removed", metavar="FILE",
                        help="removed sites with their reason (default: D1.removed)")
    parser.add_argument("--tlds", metavar="FILE", default=hostnames.TLD_FILE,
                        help="top-level domains, one a line, IANA format (default: the "
                             "bundled IANA list)")
    parser.set_defaults(func=cmd_clean)


def cmd_clean(args: argparse.Namespace) -> int:
    removed_path = args.removed or f"{args.out}.removed"
    try:
        check_out_dir(args.out)
        check_out_dir(removed_path)
        kept, removed = hostnames.clean(args.d0, hostnames.load_tlds(args.tlds))
        write_lines(removed_path, removed)
        write_lines(args.out, kept)
    except (SiteListError, OSError, ValueError) as exc:
        print(f"tianwang hosts clean: {exc}; {args.out} not written", file=sys.stderr)
        return 1
    print(hostnames.count_line(len(kept), removed))
    return 0


def register_dealias(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "dealias", help="one name per homepage MD5: D2 -> D3",
        description=dealiasing.__doc__.split("\n\n")[0].split(": ", 1)[1])
    parser.add_argument("d2", metavar="D2", help="the validate spider's output")
    parser.add_argument("-o", "--out", required=True, metavar="D3", help="the site list to write")
    parser.add_argument("--aliases", metavar="FILE",
                        help="where the aliases go (default: D3.aliases)")
    parser.set_defaults(func=cmd_dealias)


def cmd_dealias(args: argparse.Namespace) -> int:
    aliases_path = args.aliases or f"{args.out}.aliases"
    try:
        with terminal_progress() as progress:
            rows = dealiasing.read_unique(args.d2, progress)
        kept, aliases = dealiasing.dealias(rows)
        _check_dirs(args.out, aliases_path)
        write_lines(aliases_path, (f"{a.site}\t{a.pages}\t{site}\n" for a, site in aliases))
        write_lines(args.out, (row.d3_line() for row in kept))
    except (TableError, OSError) as exc:
        print(f"tianwang hosts dealias: {exc}; {args.out} not written", file=sys.stderr)
        return 1
    groups = sum(1 for row in kept if row.aliases)
    print(f"D3: {len(kept)} sites of {len(rows)} in D2; {len(aliases)} aliases removed "
          f"({groups} sites had more than one name)")
    return 0


def _check_dirs(*paths: str) -> None:
    for path in paths:
        if not Path(path).parent.is_dir():
            raise OSError(f"no directory for {path}")


def register_filter(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "filter", help="drop informal and spam sites: D3 -> D4",
        description="Drop sites on other ports, IP hosts, spam-list domains, digit-led "
        "names, outlier host families and sites with few pages: D3 -> D4.")
    parser.add_argument("d3", metavar="D3", help="hosts dealias's output (any site list)")
    parser.add_argument("-o", "--out", required=True, metavar="D4", help="the site list to write")
    parser.add_argument("--removed", metavar="FILE",
                        help="where removals go (default: D4.removed)")
    parser.add_argument("--spam-list", metavar="FILE",
                        help="spam domains (with subdomains) and host regexes, one a line")
    parser.add_argument("--min-pages", type=_at_least(1), default=spamfilter.MIN_PAGES,
                        help=f"drop sites with fewer pages (default {spamfilter.MIN_PAGES})")
    parser.add_argument("--family-min", type=_at_least(2), default=spamfilter.FAMILY_MIN,
                        help="hosts of similar size a family needs at least "
                             f"(default {spamfilter.FAMILY_MIN})")
    parser.add_argument("--family-p", type=_probability, default=spamfilter.FAMILY_P,
                        help="the tail bound below which a domain is a family "
                             f"(default {spamfilter.FAMILY_P:g})")
    parser.set_defaults(func=cmd_filter)


def _at_least(minimum: int) -> Any:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}, not {value}")
        return value

    return parse


def _probability(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1, not {value}")
    return value


def cmd_filter(args: argparse.Namespace) -> int:
    removed_path = args.removed or f"{args.out}.removed"
    try:
        spam = spamfilter.load_spam(args.spam_list)
        with terminal_progress() as progress:
            rows = spamfilter.read_sites(args.d3, progress)
        result = spamfilter.filter_sites(rows, spam, args.min_pages, args.family_min, args.family_p)
        for path in (args.out, removed_path):
            if not Path(path).parent.is_dir():
                raise OSError(f"no directory for {path}")
        write_lines(removed_path, (removal_line(*row) for row in result.removed))
        write_lines(args.out, (f"{site}\t{pages}\n" for site, pages in result.kept))
    except (TableError, OSError) as exc:
        print(f"tianwang hosts filter: {exc}; {args.out} not written", file=sys.stderr)
        return 1
    print(spamfilter.count_line(result, len(rows)))
    for family in sorted(result.families.values(), key=lambda f: f.domain):
        print(family.line())
    return 0


def register_homepage(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "homepage",
        help="each site's homepage found from its sub-pages (the page-types paper's PERS)",
        description=homepages.__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dir", metavar="DIR", help="a crawl's record tree")
    parser.add_argument("--out", metavar="FILE", help="write the list here (default: stdout)")
    parser.add_argument("--missing-only", action="store_true",
                        help="only the sites whose / was not stored")
    parser.add_argument("--lambda", dest="lam", type=float, default=homepages.LAMBDA,
                        help="the document model's weight in the mix "
                             f"(default {homepages.LAMBDA})")
    parser.add_argument("--without", action="append", default=[], choices=homepages.SIGNALS,
                        metavar="SIGNAL", help="leave a signal out, to measure what it brings "
                        f"(repeatable; one of {', '.join(homepages.SIGNALS)})")
    parser.set_defaults(func=cmd_homepage)


def cmd_homepage(args: argparse.Namespace) -> int:
    tree = Path(args.dir)
    if not 0 < args.lam < 1:  # 1 would give log 0 to a page without a query word
        print(f"tianwang hosts homepage: --lambda {args.lam:g} must be in (0, 1)",
              file=sys.stderr)
        return 2
    if not tree.is_dir():
        print(f"tianwang hosts homepage: {tree}: no such directory", file=sys.stderr)
        return 1
    try:
        found = homepages.find_all(tree, args.lam, args.without)
    except RecordError as exc:
        print(f"tianwang hosts homepage: damaged record file: {exc}", file=sys.stderr)
        return 1
    text = "".join(homepages.lines(found, args.missing_only))
    if args.out is None:
        sys.stdout.write(text)
    else:
        out = Path(args.out)
        tmp = out.with_name(out.name + ".tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(out)
    missing = sum(1 for f in found if not f.root_stored)
    print(f"homepage: {len(found)} sites, {missing} without their / stored", file=sys.stderr)
    return 0
