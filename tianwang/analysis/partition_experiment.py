"""Seed 002's experiment on site graphs: the key-path partition against two baselines, the
spread of the four measures over sites, and the paper's two statistics. Pure python.

Schemes, each run per site on its in-site link graph (tianwang.analysis.sitegraph):
- key-path: the plan of tianwang.analysis.sitepartition, its shares crawled breadth first.
- url-hash: url u belongs to crawler md5(u) mod N. Every crawler starts at the homepage and
  fetches only its own urls: a link to another crawler's url is dropped, never passed
  through nor handed over (Cho and Garcia-Molina's firewall mode; the key-path rule does not
  hand urls over either). With an exchange of urls it would get coverage 1 and acceleration
  about N, at the price of one message per cross link.
- site-hash: the whole site is one crawler's, whatever N is, so per site it measures as
  N = 1 does (overlap 0, coverage 1, acceleration 1, score 0.447): its gain is only across
  sites, and it gives none to a big site.
"""

from __future__ import annotations

import hashlib
import statistics
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise

from tianwang.analysis.sitegraph import SiteGraph
from tianwang.analysis.sitepartition import (
    DELTA,
    EPS,
    KEY_PATH_SHARE,
    Measures,
    crawl_share,
    in_degrees,
    key_paths,
    make_plan,
    measures,
    path_counts,
)
from tianwang.urls import path_key

SCHEMES = ("key-path", "url-hash", "site-hash")
MEASURES = ("overlap", "coverage", "acceleration", "score")


@dataclass(frozen=True)
class Finding:
    """One of the paper's statements, as a test on one site's measures at N crawlers."""

    label: str
    crawlers: int
    measure: str
    low: float
    high: float
    paper: str  # what the paper says about it

    def holds(self, value: float) -> bool:
        return self.low <= value <= self.high


INF = float("inf")
ONE_CRAWLER_SCORE = measures([1], 1, 1).score  # 0.447
FINDINGS = (
    Finding("overlap <= 10% at N=2", 2, "overlap", 0.0, 0.10, "most sites"),
    Finding("coverage > 90% at N=2", 2, "coverage", 0.9 + 1e-12, INF, "mostly"),
    Finding("coverage > 90% at N=3", 3, "coverage", 0.9 + 1e-12, INF, "mostly"),
    Finding("acceleration 1.5-2 at N=2", 2, "acceleration", 1.5, 2.0, "concentrated there"),
    Finding("acceleration 2.2-2.6 at N=3", 3, "acceleration", 2.2, 2.6, "concentrated there"),
    Finding("score > 0.447 at N=2", 2, "score", ONE_CRAWLER_SCORE + 1e-9, INF, "most sites"),
    Finding("score > 0.447 at N=3", 3, "score", ONE_CRAWLER_SCORE + 1e-9, INF, "most sites"),
    Finding("overlap <= 50% at N=10", 10, "overlap", 0.0, 0.50, "only 20% of sites"),
)


@dataclass(frozen=True)
class SiteRun:
    """One site's measures for every (scheme, N) that was run."""

    host: str
    pages: int
    runs: dict[tuple[str, int], Measures]


def run_site(
    site: SiteGraph, crawler_counts: Sequence[int], share: float = KEY_PATH_SHARE,
    eps: float = EPS, delta: float = DELTA,
) -> SiteRun:
    """Every scheme at every N on one site."""
    pages, in_degree = in_degrees(site.links)  # the same pages as site.links
    depth = site.depth
    hashes = {url: _url_hash(url) for url in pages}
    runs: dict[tuple[str, int], Measures] = {}
    for n in crawler_counts:
        plan = make_plan(pages, in_degree, depth, n, share)
        shares = [crawl_share(site.links, site.homepage, plan, i) for i in range(n)]
        runs["key-path", n] = _measure(shares, len(pages), eps, delta)
        owners = {url: value % n for url, value in hashes.items()}
        shares = [hash_share(site.links, site.homepage, owners, i) for i in range(n)]
        runs["url-hash", n] = _measure(shares, len(pages), eps, delta)
        runs["site-hash", n] = measures([len(pages)], len(pages), len(pages), eps, delta)
    return SiteRun(site.host, len(pages), runs)


def _measure(shares: list[set[str]], pages: int, eps: float, delta: float) -> Measures:
    distinct = len(set().union(*shares))
    return measures([len(s) for s in shares], distinct, pages, eps, delta)


def _url_hash(url: str) -> int:
    """A stable hash (Python's hash() is salted per process)."""
    return int.from_bytes(hashlib.md5(url.encode("utf-8", "surrogateescape")).digest()[:8], "big")


def hash_share(
    links: Mapping[str, Iterable[str]], homepage: str, owners: Mapping[str, int], crawler: int
) -> set[str]:
    """url-hash's crawler: the homepage, then breadth first through its own urls only."""
    fetched = {homepage}
    queue = deque([homepage])
    while queue:
        for target in links.get(queue.popleft(), ()):
            if target not in fetched and owners.get(target) == crawler:
                fetched.add(target)
                queue.append(target)
    return fetched


# --- the paper's two trends over N ---------------------------------------------------------
#
# Seed 002, on its Figure 4: "the larger N, the more sites fail (a score of 0 means the
# partition fails); the score of the sites that pass first rises, then falls: a larger N is
# not always a better partition." Both are statements across N, not at one N, so they are
# checked on the whole run of N >= 2 (the paper's figure leaves N = 1 out: every site scores
# 0.447 there), and need three such N to say anything.


@dataclass(frozen=True)
class Trend:
    """One trend over N: its values per N (None where no site passes) and whether it holds;
    `peak` is the N where the passing sites' score is highest."""

    label: str
    paper: str
    crawlers: tuple[int, ...]
    values: tuple[float | None, ...]
    holds: bool | None  # None: fewer than three N >= 2 were run
    peak: int | None = None


TREND_LABELS = (("failing sites grow with N", "more fail as N grows"),
                ("passing score rises, falls", "rises, then falls"))


def trend_crawlers(crawlers: Iterable[int]) -> tuple[int, ...]:
    return tuple(sorted({n for n in crawlers if n >= 2}))


def failing_counts(runs: Sequence[SiteRun], scheme: str, crawlers: Sequence[int]) -> list[int]:
    """Per N, the sites whose score is 0 (the paper's failed partitions)."""
    return [sum(v <= 0 for v in values_of(runs, scheme, n, "score")) for n in crawlers]


def passing_scores(runs: Sequence[SiteRun], scheme: str,
                   crawlers: Sequence[int]) -> list[float | None]:
    """Per N, the median score of the sites that pass (score > 0)."""
    medians: list[float | None] = []
    for n in crawlers:
        passing = [v for v in values_of(runs, scheme, n, "score") if v > 0]
        medians.append(statistics.median(passing) if passing else None)
    return medians


def grows(values: Sequence[float]) -> bool:
    """Never falls from one N to the next, and ends higher than it starts."""
    return all(a <= b for a, b in pairwise(values)) and values[-1] > values[0]


def inner_peak(values: Sequence[float | None]) -> int | None:
    """The index of the highest value when it lies strictly inside the run, above both ends
    (rises, then falls); None otherwise or when some N has no passing site."""
    if any(v is None for v in values):
        return None
    top = max(range(len(values)), key=lambda k: (values[k], -k))
    inside = 0 < top < len(values) - 1
    return top if inside and values[0] < values[top] > values[-1] else None


def trends(runs: Sequence[SiteRun], scheme: str, crawlers: Iterable[int]) -> list[Trend]:
    ns = trend_crawlers(crawlers)
    failing = failing_counts(runs, scheme, ns)
    scores = passing_scores(runs, scheme, ns)
    enough = len(ns) >= 3
    peak = inner_peak(scores) if enough else None
    (fail_label, fail_paper), (score_label, score_paper) = TREND_LABELS
    return [
        Trend(fail_label, fail_paper, ns, tuple(map(float, failing)),
              grows(failing) if enough else None),
        Trend(score_label, score_paper, ns, tuple(scores), (peak is not None) if enough else None,
              ns[peak] if peak is not None else None),
    ]


# --- the spread over sites -----------------------------------------------------------------


@dataclass(frozen=True)
class Spread:
    q1: float
    median: float
    q3: float


def spread(values: Sequence[float]) -> Spread:
    if len(values) == 1:
        return Spread(values[0], values[0], values[0])
    q1, median, q3 = statistics.quantiles(values, n=4, method="inclusive")
    return Spread(q1, median, q3)


def values_of(runs: Iterable[SiteRun], scheme: str, n: int, measure: str) -> list[float]:
    return [getattr(run.runs[scheme, n], measure) for run in runs if (scheme, n) in run.runs]


def finding_share(runs: Sequence[SiteRun], scheme: str, finding: Finding) -> float | None:
    """The share of sites where the finding holds (None if N was not run)."""
    values = values_of(runs, scheme, finding.crawlers, finding.measure)
    if not values:
        return None
    return sum(finding.holds(v) for v in values) / len(values)


# --- the paper's two statistics ------------------------------------------------------------


@dataclass(frozen=True)
class SiteStats:
    host: str
    pages: int
    linking_pages: int  # pages with at least one in-site link
    same_key_sum: float  # sum over those pages of (links to their own path key / links)
    path_keys: int
    key_paths: int
    largest: int  # urls of the biggest path key: a key path is never split, so no N makes
    # acceleration exceed pages / largest

    @property
    def key_path_share(self) -> float:
        return self.key_paths / self.path_keys

    @property
    def largest_share(self) -> float:
        return self.largest / self.pages


def site_stats(site: SiteGraph, share: float = KEY_PATH_SHARE) -> SiteStats:
    keys = {url: path_key(url) for url in site.links}
    ratio_sum, linking = 0.0, 0
    for url, links in site.links.items():
        if links:
            own = keys[url]
            ratio_sum += sum(keys[link] == own for link in links) / len(links)
            linking += 1
    counts = path_counts(site.links)
    return SiteStats(site.host, site.pages, linking, ratio_sum, len(counts),
                     len(key_paths(counts, share)), max(counts.values()))


@dataclass(frozen=True)
class Statistics:
    sites: int
    linking_pages: int
    same_key_share: float  # mean over every linking page of every site (the paper's 74.36%)
    same_key_site_mean: float  # the mean of the sites' own means
    key_path_share: float  # mean over sites of key paths / path keys (the paper's 19.15%)
    largest_share: Spread  # over sites, the biggest path key's share of the site's urls


def statistics_of(stats: Sequence[SiteStats]) -> Statistics:
    linking = sum(s.linking_pages for s in stats)
    site_means = [s.same_key_sum / s.linking_pages for s in stats if s.linking_pages]
    return Statistics(
        len(stats),
        linking,
        sum(s.same_key_sum for s in stats) / linking if linking else 0.0,
        statistics.fmean(site_means) if site_means else 0.0,
        statistics.fmean(s.key_path_share for s in stats) if stats else 0.0,
        spread([s.largest_share for s in stats]) if stats else Spread(0.0, 0.0, 0.0),
    )
