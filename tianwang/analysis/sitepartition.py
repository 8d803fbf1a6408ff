"""Site partition for vertical crawling (seed 002, docs/design.md section 9). Pure python.

A site's urls are grouped by path key; the key paths are the fewest largest groups holding at
least `share` of the urls. Key paths go largest first to the crawler with the fewest urls so
far, each with two supplementary seeds. Crawler i starts from the homepage and its seeds and
may fetch any url except those in key paths assigned to other crawlers. `simulate` runs those
crawls breadth first on a link graph and computes the paper's four measures.
"""

from __future__ import annotations

import heapq
import math
from collections import Counter, deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from tianwang.formats.partitionplan import Plan
from tianwang.urls import path_key

KEY_PATH_SHARE = 0.9  # the paper's 90% of a site's urls
SEEDS_PER_KEY_PATH = 2
EPS = 0.8  # the least coverage a partition may have (the paper's epsilon)
DELTA = 0.2  # overlap below this does not lower the score (the paper's delta)


@dataclass(frozen=True)
class Measures:
    """The paper's measures: n fetches in all, i distinct, u the site's pages, m the largest
    single crawler's fetch count."""

    n: int
    i: int
    u: int
    m: int
    overlap: float
    coverage: float
    acceleration: float
    score: float


def path_counts(urls: Iterable[str]) -> Counter[str]:
    """Url count per path key (each distinct url counted once)."""
    return Counter(path_key(url) for url in set(urls))


def key_paths(counts: Mapping[str, int], share: float = KEY_PATH_SHARE) -> list[tuple[str, int]]:
    """The shortest prefix of path keys, sorted by url count (ties by key, for a stable plan),
    holding at least `share` of the urls, as (key, count) largest first."""
    if not 0 < share <= 1:
        raise ValueError(f"key path share must be in (0, 1], got {share!r}")
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    total = sum(counts.values())
    kept: list[tuple[str, int]] = []
    held = 0
    for key, count in ranked:
        if held >= share * total:
            break
        kept.append((key, count))
        held += count
    return kept


def assign(ranked: Sequence[tuple[str, int]], crawlers: int) -> dict[str, int]:
    """Each key path, in the given (largest first) order, to the crawler with the fewest urls
    so far; ties to the lowest crawler index (the paper's averaging algorithm)."""
    if crawlers < 1:
        raise ValueError(f"crawlers must be >= 1, got {crawlers!r}")
    load = [0] * crawlers
    owner: dict[str, int] = {}
    for key, count in ranked:
        least = min(range(crawlers), key=load.__getitem__)  # min keeps the first of equals
        owner[key] = least
        load[least] += count
    return owner


def supplementary_seeds(
    urls: Iterable[str],
    key: str,
    in_degree: Mapping[str, int],
    depth: Mapping[str, int],
    count: int = SEEDS_PER_KEY_PATH,
) -> list[str]:
    """The key path's `count` urls of highest in-degree; ties to the smallest link depth, then
    to the smaller url so the plan is the same on every run. A url with no known depth (not
    reached from the homepage) ranks after every reached one."""
    members = {url for url in urls if path_key(url) == key}
    return _best(members, in_degree, depth, count)


def _best(
    members: Iterable[str], in_degree: Mapping[str, int], depth: Mapping[str, int], count: int
) -> list[str]:
    def rank(url: str) -> tuple[int, float, str]:
        return (-in_degree.get(url, 0), depth.get(url, math.inf), url)

    members = list(members)
    if len(members) > 4 * count:
        # Only urls with one of the `count` highest in-degrees can be chosen: rank those
        # alone (a key path of a large site holds hundreds of thousands of urls).
        degrees = [in_degree.get(url, 0) for url in members]
        least = heapq.nlargest(count, degrees)[-1]
        members = [url for url, d in zip(members, degrees, strict=True) if d >= least]
    return heapq.nsmallest(count, members, key=rank)


def make_plan(
    urls: Iterable[str],
    in_degree: Mapping[str, int],
    depth: Mapping[str, int],
    crawlers: int,
    share: float = KEY_PATH_SHARE,
) -> Plan:
    """The partition of one site's urls among `crawlers` crawlers."""
    keys = {url: path_key(url) for url in set(urls)}  # each url's key computed once
    owner = assign(key_paths(Counter(keys.values()), share), crawlers)
    by_key: dict[str, list[str]] = {key: [] for key in owner}
    for url, key in keys.items():
        members = by_key.get(key)
        if members is not None:
            members.append(url)
    seeds: list[list[str]] = [[] for _ in range(crawlers)]
    for key, crawler in owner.items():
        seeds[crawler].extend(_best(by_key[key], in_degree, depth, SEEDS_PER_KEY_PATH))
    return Plan(crawlers, owner, tuple(tuple(s) for s in seeds))


def in_scope(plan: Plan, crawler: int, url: str) -> bool:
    """The key-path half of the scope rule, on one site's plan: any url except those in key
    paths assigned to other crawlers. The simulation uses it alone (its crawlers start at the
    homepage); a real crawl goes through Share.allows, which adds the homepage and its
    redirects, every share's."""
    owner = plan.owner.get(path_key(url))
    return owner is None or owner == crawler


def graph_stats(graph: Mapping[str, Iterable[str]], homepage: str) -> tuple[
    set[str], dict[str, int], dict[str, int]
]:
    """A site graph's pages (sources and targets), in-degrees (distinct linking pages, self
    links left out) and link depths (breadth first from the homepage, which is depth 0)."""
    pages, in_degree = in_degrees(graph)
    pages.add(homepage)
    return pages, in_degree, link_depths(graph, homepage)


def in_degrees(graph: Mapping[str, Iterable[str]]) -> tuple[set[str], dict[str, int]]:
    """A graph's pages (sources and targets) and in-degrees (distinct linking pages, self
    links left out)."""
    pages = set(graph)
    in_degree: Counter[str] = Counter()
    for source, targets in graph.items():
        distinct = set(targets)
        pages.update(distinct)
        distinct.discard(source)
        in_degree.update(distinct)  # counted in C: a million-page site has ~10 million links
    return pages, dict(in_degree)


def link_depths(graph: Mapping[str, Iterable[str]], homepage: str) -> dict[str, int]:
    """Breadth first from the homepage (depth 0): the link depth of every page it reaches."""
    depths = {homepage: 0}
    level, depth = [homepage], 0
    while level:  # level by level: one depth value per level, not one lookup per link
        depth += 1
        following = []
        for url in level:
            for target in graph.get(url, ()):
                if target not in depths:
                    depths[target] = depth
                    following.append(target)
        level = following
    return depths


def crawl_share(
    graph: Mapping[str, Iterable[str]], homepage: str, plan: Plan, crawler: int
) -> set[str]:
    """The pages crawler `crawler` fetches: breadth first from the homepage and its seeds,
    following links to in-scope urls only. Every crawler fetches the homepage, the seed the
    paper gives all of them, even when its path key is another crawler's key path."""
    fetched = {homepage}
    queue = deque([homepage])
    for seed in plan.seeds[crawler]:
        if seed not in fetched:
            fetched.add(seed)
            queue.append(seed)
    while queue:
        for target in graph.get(queue.popleft(), ()):
            if target not in fetched and in_scope(plan, crawler, target):
                fetched.add(target)
                queue.append(target)
    return fetched


def measures(
    fetches: Sequence[int], distinct: int, pages: int, eps: float = EPS, delta: float = DELTA
) -> Measures:
    """Overlap = (N - I)/N, Coverage = I/U, Acceleration = U/M and
    Score = max(A^2 (C - eps)/sqrt(max(O, delta)), 0), from each crawler's fetch count,
    the distinct pages fetched (I) and the site's page count (U)."""
    if pages < 1:
        raise ValueError(f"a site has at least one page, got U = {pages!r}")
    if delta <= 0:
        raise ValueError(f"delta must be > 0 (it divides the score), got {delta!r}")
    total, largest = sum(fetches), max(fetches, default=0)
    if largest < 1:
        raise ValueError("no crawler fetched anything")
    overlap = (total - distinct) / total
    coverage = distinct / pages
    acceleration = pages / largest
    score = max(acceleration**2 * (coverage - eps) / math.sqrt(max(overlap, delta)), 0.0)
    return Measures(total, distinct, pages, largest, overlap, coverage, acceleration, score)


def simulate(
    graph: Mapping[str, Iterable[str]],
    homepage: str,
    plan: Plan,
    eps: float = EPS,
    delta: float = DELTA,
) -> Measures:
    """Run every crawler's share on the site graph (links within the site) and measure it.
    U is every page of the graph: each source and each link target, and the homepage."""
    pages, _, _ = graph_stats(graph, homepage)
    shares = [crawl_share(graph, homepage, plan, i) for i in range(plan.crawlers)]
    distinct = len(set().union(*shares))
    return measures([len(s) for s in shares], distinct, len(pages), eps, delta)
