"""`tianwang partition plan | simulate | stats`: site partition on a link graph (the
site-partition paper).

DIR is a crawl's data directory (data_*/<host>/links.tsv) or a recorded graph directory
(pages.tsv + edges.tsv); tianwang.analysis.sitegraph says how a site's graph and homepage
are read from either.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any, TextIO

from tianwang.analysis.partition_experiment import (
    FINDINGS,
    MEASURES,
    SCHEMES,
    TREND_LABELS,
    SiteRun,
    Statistics,
    Trend,
    finding_share,
    run_site,
    site_stats,
    spread,
    statistics_of,
    trend_crawlers,
    trends,
    values_of,
)
from tianwang.analysis.sitegraph import GraphDirError, SiteGraph, read_sites
from tianwang.analysis.sitepartition import DELTA, EPS, KEY_PATH_SHARE, in_degrees, make_plan
from tianwang.formats.atomic import write_atomic
from tianwang.formats.partitionplan import PlanFile, SitePlan, dump_plan

PAPER_SAME_KEY = 0.7436  # the paper's mean share of a page's links within its own path
PAPER_KEY_PATH_SHARE = 0.1915  # the paper's mean share of paths holding 90% of the urls
MAX_CRAWLERS = 1000  # a bound for a typo in --crawlers, far above any real use


class UsageError(ValueError):
    """Bad input: the command prints the message on one line and exits with status 2."""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "partition", help="site partition for vertical crawling (the site-partition paper)",
        description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="partition_command", required=True)
    plan = commands.add_parser(
        "plan", help="write the partition plan of each site for N crawlers")
    _common(plan)
    plan.add_argument("--crawlers", required=True, metavar="N", help="crawlers per site (>= 1)")
    plan.add_argument("--out", required=True, metavar="FILE", help="the plan file (JSON)")
    plan.set_defaults(func=_run(cmd_plan))
    simulate = commands.add_parser(
        "simulate", help="simulate the shares, and url-hash and site-hash, for a range of N")
    _common(simulate)
    simulate.add_argument("--crawlers", default="1-10", metavar="RANGE",
                          help="N values: 3, 1-10 or 2,3,5 (default 1-10)")
    simulate.add_argument("--plots", metavar="OUTDIR",
                          help="write the cumulative distributions over sites as PNGs here")
    simulate.add_argument("--json", metavar="FILE", help="write every site's measures here")
    simulate.set_defaults(func=_run(cmd_simulate))
    stats = commands.add_parser(
        "stats", help="the paper's two statistics: same-path links and key path share")
    _common(stats)
    stats.set_defaults(func=_run(cmd_stats))


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("dir", metavar="DIR",
                        help="a crawl's data directory or a recorded graph (pages.tsv, edges.tsv)")
    parser.add_argument("--site", metavar="HOST", help="only this site (default: every site)")
    parser.add_argument("--min-pages", type=int, default=1, metavar="K",
                        help="only sites of at least K pages (default 1)")
    parser.add_argument("--share", type=float, default=KEY_PATH_SHARE,
                        help="key paths hold this share of a site's urls "
                        f"(default {KEY_PATH_SHARE:g}, the paper's)")


def _run(command: Any) -> Any:
    """Bad input and unreadable graphs: one line on stderr and status 2, nothing written."""
    def run(args: argparse.Namespace) -> int:
        try:
            return command(args)
        except (UsageError, GraphDirError) as exc:
            print(f"tianwang partition {args.partition_command}: {exc}", file=sys.stderr)
            return 2
    return run


def parse_crawlers(text: str) -> list[int]:
    """"3" -> [3], "1-10" -> [1..10], "2,3,5" -> [2, 3, 5]; UsageError unless all >= 1."""
    try:
        if "-" in text:
            low, high = (int(part) for part in text.split("-", 1))
            values = list(range(low, high + 1))
        else:
            values = [int(part) for part in text.split(",")]
    except ValueError:
        raise UsageError(f"--crawlers {text!r} is not N, A-B or N,N,...") from None
    if not values or min(values) < 1:
        raise UsageError(f"--crawlers {text!r}: crawler counts must be >= 1")
    if max(values) > MAX_CRAWLERS:
        raise UsageError(f"--crawlers {text!r}: at most {MAX_CRAWLERS} crawlers")
    return sorted(set(values))


def load_sites(args: argparse.Namespace) -> dict[str, SiteGraph]:
    if not 0 < args.share <= 1:
        raise UsageError(f"--share {args.share:g} must be in (0, 1]")
    if args.min_pages < 1:
        raise UsageError(f"--min-pages {args.min_pages} must be >= 1")
    sites = read_sites(args.dir, args.site, args.min_pages)
    if not sites:
        raise UsageError(f"no site of {args.dir} has {args.min_pages} or more pages")
    return sites


# --- plan ----------------------------------------------------------------------------------


def cmd_plan(args: argparse.Namespace) -> int:
    crawlers = parse_crawlers(args.crawlers)
    if len(crawlers) != 1:
        raise UsageError(f"--crawlers {args.crawlers!r}: plan takes one N")
    out = Path(args.out)
    if not out.parent.is_dir():
        raise UsageError(f"--out {out}: directory {out.parent} does not exist")
    sites = load_sites(args)
    plan_file = plan_sites(sites, crawlers[0], args.share)
    for host, site in plan_file.sites.items():
        print(plan_line(host, site, sites[host]))
    try:
        dump_plan(out, plan_file)
    except OSError as exc:
        raise UsageError(f"cannot write {out}: {exc.strerror}") from None
    print(f"plan: {len(sites)} site(s), {crawlers[0]} crawler(s), key paths holding "
          f"{args.share:g} of each site's urls -> {out}")
    return 0


def plan_sites(sites: dict[str, SiteGraph], crawlers: int, share: float) -> PlanFile:
    plans = {}
    for host, site in sites.items():
        _pages, in_degree = in_degrees(site.links)  # the site's pages are site.links
        plan = make_plan(site.links, in_degree, site.depth, crawlers, share)
        plans[host] = SitePlan(site.homepage, site.pages, plan)
    return PlanFile(crawlers, share, plans)


def plan_line(host: str, site: SitePlan, graph: SiteGraph) -> str:
    """host, pages, key paths per crawler and seeds per crawler."""
    owned = Counter(site.plan.owner.values())
    left = f" ({graph.unreached} the homepage does not reach left out)" if graph.unreached else ""
    return (f"{host}: {site.pages} pages{left}, homepage {site.homepage}, "
            f"{len(site.plan.owner)} key paths, per crawler "
            f"{'/'.join(str(owned[i]) for i in range(site.plan.crawlers))}")


# --- simulate ------------------------------------------------------------------------------


def cmd_simulate(args: argparse.Namespace) -> int:
    crawlers = parse_crawlers(args.crawlers)
    for option in (args.plots, args.json):
        if option and not Path(option).resolve().parent.is_dir():
            raise UsageError(f"{option}: directory {Path(option).resolve().parent} does not exist")
    sites = load_sites(args)
    runs = [run_site(site, crawlers, args.share) for site in sites.values()]
    stats = statistics_of([site_stats(site, args.share) for site in sites.values()])
    write_table(sys.stdout, list(sites.values()), runs, crawlers, stats)
    if args.json:
        write_json(Path(args.json), list(sites.values()), runs, stats)
        print(f"json: {args.json}")
    if args.plots:
        for path in cdf_plots(Path(args.plots), runs, crawlers):
            print(f"plot: {path}")
    return 0


def write_table(out: TextIO, sites: Sequence[SiteGraph], runs: Sequence[SiteRun],
                crawlers: Sequence[int], stats: Statistics) -> None:
    sizes = spread([site.pages for site in sites])
    out.write(f"{len(sites)} sites, {sum(s.pages for s in sites)} pages (per site: median "
              f"{sizes.median:g}, quartiles {sizes.q1:g}-{sizes.q3:g}, largest "
              f"{max(s.pages for s in sites)}); pages the homepage does not reach, left out: "
              f"{sum(s.unreached for s in sites)}\n")
    out.write(f"eps {EPS:g}, delta {DELTA:g}; each cell: median [quartiles] over sites\n")
    for scheme in SCHEMES:
        out.write(f"\n{scheme}\n{'N':>3}  " + "".join(f"{m:<24}" for m in MEASURES) + "\n")
        for n in crawlers:
            cells = [_cell(values_of(runs, scheme, n, m)) for m in MEASURES]
            out.write(f"{n:>3}  " + "".join(f"{c:<24}" for c in cells) + "\n")
    out.write(f"\n{'share of sites where':<30}{'paper':<20}"
              + "".join(f"{s:>10}" for s in SCHEMES) + "\n")
    for finding in FINDINGS:
        shares = [finding_share(runs, scheme, finding) for scheme in SCHEMES]
        out.write(f"{finding.label:<30}{finding.paper:<20}"
                  + "".join(f"{_percent(s):>10}" for s in shares) + "\n")
    out.write(trends_text(runs, crawlers))
    out.write("\n" + statistics_text(stats))


def trends_text(runs: Sequence[SiteRun], crawlers: Sequence[int]) -> str:
    """The site-partition paper's two trends over N, per scheme, then the key-path values
    they rest on."""
    by_scheme = {scheme: trends(runs, scheme, crawlers) for scheme in SCHEMES}
    ns = trend_crawlers(crawlers)
    consecutive = len(ns) > 1 and ns == tuple(range(ns[0], ns[-1] + 1))
    shown = f"{ns[0]}-{ns[-1]}" if consecutive else ",".join(map(str, ns))
    lines = [f"\n{'trend over N = ' + shown:<29} {'paper':<20}"
             + "".join(f"{s:>10}" for s in SCHEMES)]
    for k, (label, paper) in enumerate(TREND_LABELS):
        cells = [_verdict(by_scheme[scheme][k]) for scheme in SCHEMES]
        lines.append(f"{label:<30}{paper:<20}" + "".join(f"{c:>10}" for c in cells))
    failing, scores = by_scheme["key-path"]
    lines.append("key-path per N: failing sites "
                 + " ".join(f"{v:g}" for v in failing.values)
                 + "; median score of passing sites "
                 + " ".join("-" if v is None else f"{v:.3f}" for v in scores.values))
    return "\n".join(lines) + "\n"


def _verdict(trend: Trend) -> str:
    if trend.holds is None:
        return "-"
    if trend.peak is not None:
        return f"yes N={trend.peak}"
    return "yes" if trend.holds else "no"


def _cell(values: Sequence[float]) -> str:
    if not values:
        return "-"
    s = spread(values)
    return f"{s.median:.3f} [{s.q1:.3f}-{s.q3:.3f}]"


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.0f}%"


def statistics_text(stats: Statistics) -> str:
    largest = stats.largest_share
    return (
        f"links within the page's own path key: {100 * stats.same_key_share:.2f}% "
        f"(mean over {stats.linking_pages} pages with in-site links; mean of site means "
        f"{100 * stats.same_key_site_mean:.2f}%; paper {100 * PAPER_SAME_KEY:.2f}%)\n"
        f"path keys holding 90% of a site's urls: {100 * stats.key_path_share:.2f}% "
        f"(mean over {stats.sites} sites; paper {100 * PAPER_KEY_PATH_SHARE:.2f}%)\n"
        f"the biggest path key's share of a site's urls: median "
        f"{100 * largest.median:.1f}% [{100 * largest.q1:.1f}-{100 * largest.q3:.1f}%] "
        f"(a key path is never split: with full coverage, acceleration <= 1 / that share)\n")


def write_json(path: Path, sites: Sequence[SiteGraph], runs: Sequence[SiteRun],
               stats: Statistics) -> None:
    document = {
        "eps": EPS,
        "delta": DELTA,
        "statistics": asdict(stats),
        "sites": [
            {"host": site.host, "homepage": site.homepage, "pages": site.pages,
             "unreached": site.unreached,
             "runs": [{"scheme": scheme, "crawlers": n, **vars(m)}
                      for (scheme, n), m in run.runs.items()]}
            for site, run in zip(sites, runs, strict=True)
        ],
    }
    write_atomic(path, (json.dumps(document, indent=1) + "\n").encode("utf-8"))


FIGURES = (("overlap", "Overlap", 1), ("coverage", "Coverage", 2),
           ("acceleration", "Acceleration", 3), ("score", "Score", 4))


def cdf_plots(outdir: Path, runs: Sequence[SiteRun], crawlers: Sequence[int],
              scheme: str = "key-path") -> list[Path]:
    """The paper's Figures 1-4: per measure, the share of sites at or below each value, one
    curve per N. N = 1 is left out as in the paper (the same value for every site) unless it
    is the only N."""
    import matplotlib

    matplotlib.use("Agg")  # no display: files only
    from matplotlib import pyplot

    outdir.mkdir(parents=True, exist_ok=True)
    shown = [n for n in crawlers if n > 1] or list(crawlers)
    paths = []
    for measure, title, number in FIGURES:
        figure, axes = pyplot.subplots(figsize=(6, 4))
        for n in shown:
            values = sorted(values_of(runs, scheme, n, measure))
            shares = [(k + 1) / len(values) for k in range(len(values))]
            axes.step(values, shares, where="post", label=f"N={n}")
        axes.set_xlabel(title)
        axes.set_ylabel("share of sites at or below")
        axes.set_ylim(0, 1.02)
        axes.set_title(f"Figure {number}: {title} ({scheme}, {len(runs)} sites)")
        axes.legend(fontsize="small", ncol=2)
        figure.tight_layout()
        path = outdir / f"{measure}.png"
        tmp = path.with_name(path.name + ".tmp")
        figure.savefig(tmp, format="png")
        pyplot.close(figure)
        tmp.replace(path)
        paths.append(path)
    return paths


# --- stats ---------------------------------------------------------------------------------


def cmd_stats(args: argparse.Namespace) -> int:
    sites = load_sites(args)
    per_site = [site_stats(site, args.share) for site in sites.values()]
    print(f"{'site':<40}{'pages':>8}{'same key':>10}{'path keys':>11}{'key paths':>11}"
          f"{'biggest':>9}")
    for s in per_site:
        same = f"{100 * s.same_key_sum / s.linking_pages:.1f}%" if s.linking_pages else "-"
        print(f"{s.host:<40}{s.pages:>8}{same:>10}{s.path_keys:>11}{s.key_paths:>11}"
              f"{100 * s.largest_share:>8.1f}%")
    print()
    print(statistics_text(statistics_of(per_site)), end="")
    return 0
