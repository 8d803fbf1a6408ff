"""Crawl order without a crawl (issue 3): what bounds the frontier's top-1% figure at N:M.

    python bench/order_sim.py [--seed 1] [--hosts 300] [--max-pages 1200] [--rounds 5]

The same web, seeds, marks and truth as bench/order.py (its Web class), but the crawl is
replayed on the truth's link graph: one fetch a step, each fetched page's links pushed at
once. Politeness is modelled only as what it does to the order: with one connection per
host, the real crawls take hosts in turns, so each ordering's key ends with the url's turn
among its host's urls of the same level. Five orderings:

- breadth first (link depth, then host turn): what Scrapy's breadth-first settings do under
  per-host politeness (the real bench's "breadth first" row);
- frontier N:M: sorted picks by the frontier's key (weight with TIANWANG_INDEX_PAGES, then
  host turn, capped at TIANWANG_HOST_TURNS), random picks uniform over pending, as it ships;
- breadth-first sorted picks, N:M: the frontier with breadth first's order in place of the
  weight, random picks as above: the best any url-only weight could hope to do;
- oracle sorted picks, N:M: the sorted picks take the top-1% pages first (knowing the
  truth), then breadth first: a bound no crawler can reach.

Random picks use --rounds seeds; each cell is the median. If the breadth-first-sorted row
sits below breadth first, the shortfall is the random picks' and no weight can remove it.
"""

from __future__ import annotations

import argparse
import heapq
import random
import statistics
import sys
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.order import MARKS, Web  # noqa: E402
from tianwang import default_settings as settings  # noqa: E402
from tianwang.urls import url_weight  # noqa: E402

Key = Callable[[str, int, int], tuple]  # (url, link depth, host turn) -> sort key


class Pending:
    """Pending urls: a heap for sorted picks and a list for uniform random picks, one entry
    each, taken from whichever pick comes first (the other copy is then skipped)."""

    def __init__(self, key: Key, turns: int) -> None:
        self.key, self.turns = key, turns
        self.heap: list[list] = []
        self.items: list[list] = []
        self.turn: defaultdict[tuple, int] = defaultdict(int)
        self.count = 0

    def push(self, url: str, depth: int) -> None:
        level = self.key(url, depth, 0)[:-1]  # the key without its turn
        slot = (url.split("/")[2], level)
        turn = min(self.turn[slot], self.turns)
        self.turn[slot] += 1
        self.count += 1
        entry = [self.key(url, depth, turn), self.count, url, depth, True]
        heapq.heappush(self.heap, entry)
        self.items.append(entry)

    def pop(self, sorted_pick: bool, rng: random.Random) -> tuple[str, int]:
        while True:
            if sorted_pick:
                entry = heapq.heappop(self.heap)
            else:
                i = rng.randrange(len(self.items))
                entry = self.items[i]
                self.items[i] = self.items[-1]
                self.items.pop()
            if entry[4]:
                entry[4] = False
                return entry[2], entry[3]


def replay(web: Web, key: Key, sorted_picks: int, random_picks: int, seed: int,
           turns: int) -> dict[float, tuple[float, float]]:
    """(homepage share, top-1% share) at each mark, fetching until the last mark."""
    rng = random.Random(seed)
    pending = Pending(key, turns)
    seen = set(web.homepages)
    for url in web.homepages:
        pending.push(url, 0)
    homes, tops, fetched, results = set(web.homepages), 0, 0, {}
    home_count = 0
    cycle = sorted_picks + random_picks
    while len(results) < len(MARKS) and pending.heap:
        url, depth = pending.pop(fetched % cycle < sorted_picks, rng)
        fetched += 1
        home_count += url in homes
        tops += url in web.top
        for link in links_of(web, url):
            if link not in seen and link in web.reachable:
                seen.add(link)
                pending.push(link, depth + 1)
        for mark in MARKS:
            if mark not in results and fetched >= mark * len(web.reachable):
                results[mark] = (home_count / len(homes), tops / len(web.top))
    return results


def links_of(web: Web, url: str) -> list[str]:
    page = web.truth.get(url)
    if not page or page["status"] != 200:
        return []
    return [web._final(link) for link in page["links"]]


def orderings(web: Web) -> dict[str, tuple[Key, bool]]:
    """name -> (key, whether it makes random picks)."""
    index_pages = settings.TIANWANG_INDEX_PAGES

    def weight(url: str, depth: int, turn: int) -> tuple:
        return (-url_weight(url, index_pages=index_pages), turn)

    def breadth(url: str, depth: int, turn: int) -> tuple:
        return (depth, turn)

    def oracle(url: str, depth: int, turn: int) -> tuple:
        return (url not in web.top, depth, turn)

    return {"breadth first": (breadth, False), "frontier": (weight, True),
            "breadth-first sorted picks": (breadth, True), "oracle sorted picks": (oracle, True)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--hosts", type=int, default=300)
    parser.add_argument("--max-pages", type=int, default=1200)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    web = Web(args.seed, args.hosts, args.max_pages)
    print(f"{len(web.reachable)} reachable text pages, top 1%: {len(web.top)}; "
          "cells: homepages / top 1% at " + ", ".join(f"{m:.1%}" for m in MARKS))
    turns = settings.TIANWANG_HOST_TURNS
    for name, (key, randomized) in orderings(web).items():
        ratios = [(3, 1), (1, 1)] if randomized else [(1, 0)]
        for n, m in ratios:
            runs = [replay(web, key, n, m, seed, turns if name == "frontier" else 10**9)
                    for seed in range(args.rounds if randomized else 1)]
            cells = [tuple(statistics.median(run[mark][i] for run in runs) for i in (0, 1))
                     for mark in MARKS]
            label = f"{name} {n}:{m}" if randomized else name
            print(f"{label:34}" + "  ".join(f"{h:.2f}/{t:.2f}" for h, t in cells))


if __name__ == "__main__":
    main()
