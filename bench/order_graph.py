"""A link graph and the three order measures of issue 20, shared by bench/order.py and
bench/order_replay.py.

A graph is either a recorded one (`--graph DIR`: pages.tsv `id url host`, edges.tsv
`src_id dst_id`, the format `testweb serve --graph` serves; its urls are taken as served)
or the synthetic web of bench/order.py (its reachable text pages and the links between
them). The measures, at marks of 1, 2, 5 and 10% of the graph's pages fetched:

- PageRank mass: the share of the graph's PageRank (damping 0.85, a dangling page's rank
  spread over all pages) held by the pages fetched so far;
- top 1%: the share of the 1% of pages with the most in-links (distinct linking pages)
  fetched so far;
- homepages: the share of hosts whose homepage has been fetched (a host's root url "/", or
  if the graph has none its shortest url).
"""

from __future__ import annotations

import math
import sys
from collections import defaultdict
from pathlib import Path
from urllib.parse import urlsplit

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tianwang.testweb.graph import GraphWeb  # noqa: E402

MARKS = (0.01, 0.02, 0.05, 0.10)
MEASURES = ("PageRank mass", "top 1% by in-degree", "homepages")
DAMPING = 0.85


class Graph:
    def __init__(self, urls: list[str], out: list[list[int]], seeds: list[str]) -> None:
        self.urls = urls
        self.ids = {url: page for page, url in enumerate(urls)}
        self.out = out
        self.seeds = seeds
        self.pagerank = pagerank(out)
        indegree = [0] * len(urls)
        for targets in out:
            for target in targets:
                indegree[target] += 1
        self.indegree = indegree
        count = math.ceil(0.01 * len(urls))
        self.top = set(sorted(range(len(urls)), key=lambda p: (-indegree[p], urls[p]))[:count])
        self.homepages = homepages(urls)

    @classmethod
    def from_dir(cls, directory: str | Path, seeds: list[str]) -> Graph:
        web = GraphWeb.from_dir(directory)
        out = [sorted(set(web.links(page)) - {page}) for page in range(len(web.urls))]
        return cls(web.urls, out, seeds)

    @classmethod
    def from_truth(cls, truth: dict[str, dict], pages: set[str], seeds: list[str],
                   final) -> Graph:
        """The synthetic web's pages (reachable text pages), links resolved through redirects."""
        urls = sorted(pages)
        ids = {url: page for page, url in enumerate(urls)}
        out = []
        for url in urls:
            targets = {ids.get(final(link)) for link in truth[url]["links"]}
            out.append(sorted(t for t in targets if t is not None and t != ids[url]))
        return cls(urls, out, seeds)

    def describe(self) -> str:
        hosts = len({host_of(url) for url in self.urls})
        edges = sum(len(targets) for targets in self.out)
        return (f"{len(self.urls)} pages on {hosts} hosts, {edges} links; top 1%: "
                f"{len(self.top)} pages (in-degree >= {min(self.indegree[p] for p in self.top)});"
                f" {len(self.homepages)} homepages; seeds: {len(self.seeds)}")

    def marks(self, fetched: list[str]) -> dict[float, tuple[float, float, float]]:
        """(PageRank mass, top-1% share, homepage share) at each mark of pages fetched."""
        targets = {mark: math.ceil(mark * len(self.urls)) for mark in MARKS}
        seen: set[int] = set()
        mass, tops, homes = 0.0, 0, 0
        results = {}
        for url in fetched:
            page = self.ids.get(url)
            if page is None or page in seen:
                continue
            seen.add(page)
            mass += self.pagerank[page]
            tops += page in self.top
            homes += page in self.homepages
            for mark, target in targets.items():
                if len(seen) == target:
                    results[mark] = (mass, tops / len(self.top), homes / len(self.homepages))
        return results

    def curve(self, fetched: list[str], points: int = 200) -> tuple[list[float], list[list[float]]]:
        """Each measure at `points` even steps up to the last mark, for the plot."""
        last = math.ceil(max(MARKS) * len(self.urls))
        steps = {math.ceil(last * (i + 1) / points) for i in range(points)}
        seen: set[int] = set()
        mass, tops, homes = 0.0, 0, 0
        xs: list[float] = []
        ys: list[list[float]] = [[], [], []]
        for url in fetched:
            page = self.ids.get(url)
            if page is None or page in seen:
                continue
            seen.add(page)
            mass += self.pagerank[page]
            tops += page in self.top
            homes += page in self.homepages
            if len(seen) in steps:
                xs.append(len(seen) / len(self.urls))
                for i, value in enumerate((mass, tops / len(self.top),
                                           homes / len(self.homepages))):
                    ys[i].append(value)
        return xs, ys


def host_of(url: str) -> str:
    return urlsplit(url).netloc


def homepages(urls: list[str]) -> set[int]:
    best: dict[str, tuple[int, str, int]] = {}
    for page, url in enumerate(urls):
        parts = urlsplit(url)
        rank = (0 if parts.path == "/" and not parts.query else 1, len(url), url, page)
        host = parts.netloc
        if host not in best or rank < best[host]:
            best[host] = rank
    return {rank[-1] for rank in best.values()}


def pagerank(out: list[list[int]], damping: float = DAMPING, rounds: int = 100) -> np.ndarray:
    n = len(out)
    sources = np.fromiter((s for s, targets in enumerate(out) for _ in targets), dtype=np.int64)
    targets = np.fromiter((t for targets in out for t in targets), dtype=np.int64)
    degree = np.array([len(targets) for targets in out], dtype=np.float64)
    dangling = degree == 0
    rank = np.full(n, 1.0 / n)
    for _ in range(rounds):
        share = np.where(dangling, 0.0, rank / np.maximum(degree, 1))
        new = np.bincount(targets, weights=share[sources], minlength=n) * damping
        new += (1 - damping + damping * rank[dangling].sum()) / n
        if np.abs(new - rank).sum() < 1e-10:
            rank = new
            break
        rank = new
    return rank / rank.sum()


def by_host(urls: list[str]) -> dict[str, list[int]]:
    hosts: dict[str, list[int]] = defaultdict(list)
    for page, url in enumerate(urls):
        hosts[host_of(url)].append(page)
    return hosts
