"""Crawl order without HTTP (issue 20): the frontier's own queue and link cash replayed over a
graph, to compare orders in seconds before confirming them with real crawls (bench/order.py).

    python bench/order_replay.py --graph DIR [--seed-url URL] [--oracle]
    python bench/order_replay.py [--seed 1] [--hosts 300] [--max-pages 1200]

A replay fetches like the real bench's crawls: 32 requests in flight, at most --per-host per
host, the oldest finishing first; a fetched page's links are pushed at once. The frontier
orders run tianwang's FrontierQueue and LinkCash with the scheduler's own arithmetic
(tianwang.frontier.scheduler.link_weight); breadth first is a FIFO by link depth. Rows:
breadth first, the default (its picks, link weights and a host's first requests), depth only
at 1:1 and 3:1, --variants; with --oracle the frontier sorting the urls found by their true
PageRank: how much any weight of a found url could gain. Cells: PageRank mass / top 1% /
homepages at each mark; random picks take the median of --rounds.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
from collections import Counter, deque
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.order_graph import MARKS, Graph, host_of  # noqa: E402
from tianwang import default_settings as settings  # noqa: E402
from tianwang.frontier.linkscore import SEED_CASH, LinkCash  # noqa: E402
from tianwang.frontier.queue import FrontierQueue  # noqa: E402
from tianwang.urls import url_weight  # noqa: E402

INDEX_PAGES = frozenset(settings.TIANWANG_INDEX_PAGES)
NEVER = 10**9  # sorted picks per random pick that never come round: no random picks


def replay_frontier(graph: Graph, sorted_picks: int, random_picks: int, per_doubling: float,
                    other_host: float, depth: bool, seed: int, per_host: int,
                    turns: int = settings.TIANWANG_HOST_TURNS,
                    first: int = 0, seed_first: int = 0, host_picks: int = 0,
                    oracle: Graph | None = None) -> list[str]:
    """The urls in fetch order, up to the last mark. first, seed_first: a host's first
    requests (the default's TIANWANG_HOST_FIRST, TIANWANG_SEED_HOST_FIRST). oracle: weigh a
    url by its true PageRank in that graph instead (a bound no crawler reaches: it knows the
    importance of every url it has found)."""
    queue = FrontierQueue(sorted_picks, random_picks, seed=seed, turns=turns, first=first,
                          seed_first=seed_first, host_picks=host_picks)
    cash = LinkCash(per_doubling, other_host)
    slots: dict[str, int] = {}
    item_of: dict[int, int] = {}
    page_of: list[int] = []
    depth_of: list[int] = []

    def base(url: str) -> int:
        if oracle is not None:  # PageRank in millionths of the whole: within int16 here
            return min(2**15 - 1, round(oracle.pagerank[oracle.ids[url]] * 1e6))
        return url_weight(url, index_pages=INDEX_PAGES) if depth else 0

    def push(page: int, link_depth: int, share: float) -> None:
        url = graph.urls[page]
        item = len(page_of)
        page_of.append(page)
        depth_of.append(link_depth)
        item_of[page] = item
        cash.add(item, page, share)
        weight = base(url) + (cash.bonus(share) if per_doubling else 0)
        queue.push(item, (weight, -link_depth), slots.setdefault(host_of(url), len(slots)),
                   seed=link_depth == 0)

    for url in graph.seeds:
        push(graph.ids[url], 0, SEED_CASH)
    active: Counter[int] = Counter()
    host_names = {number: name for name, number in slots.items()}
    flight: deque[int] = deque()
    order: list[str] = []
    last = max(MARKS) * len(graph.urls)
    while len(order) < last:
        while len(flight) < 32:
            item = queue.pop(lambda slot: active[slot] >= per_host)
            if item is None:
                break
            active[queue.slot(item)] += 1
            flight.append(item)
        if not flight:
            break
        item = flight.popleft()
        active[queue.slot(item)] -= 1
        page = page_of[item]
        order.append(graph.urls[page])
        links = graph.out[page]
        parent_host = host_of(graph.urls[page])
        parent_cash = cash.cash(item)
        for target in links:
            other = host_of(graph.urls[target]) != parent_host
            share = cash.share(parent_cash, len(links), other)
            known = item_of.get(target)
            if known is None:
                push(target, depth_of[item] + 1, share)
            elif queue.pending(known) and per_doubling:
                new = cash.credit(known, share)
                queue.raise_weight(known, (base(graph.urls[target]) + cash.bonus(new),
                                           -depth_of[item] - 1))
    del host_names
    return order


def replay_bfs(graph: Graph, per_host: int) -> list[str]:
    """Breadth first under per-host politeness: the oldest pending url of a free host."""
    return replay_frontier(graph, NEVER, 1, 0.0, 1.0, False, 0, per_host, turns=0)


def subsample(graph: Graph, share: float, seed: int) -> Graph:
    """A random share of the graph's pages (the seeds kept) and the links between them."""
    rng = random.Random(seed)
    kept = [page for page, url in enumerate(graph.urls)
            if url in graph.seeds or rng.random() < share]
    new_id = {page: i for i, page in enumerate(kept)}
    out = [[new_id[t] for t in graph.out[page] if t in new_id] for page in kept]
    return Graph([graph.urls[page] for page in kept], out, graph.seeds)


def cells(graph: Graph, orders: list[list[str]]) -> str:
    runs = [graph.marks(order) for order in orders]
    out = []
    for mark in MARKS:
        if any(mark not in run for run in runs):
            out.append("not reached")
            continue
        values = [statistics.median(run[mark][i] for run in runs) for i in range(3)]
        out.append("/".join(f"{v:.3f}" for v in values))
    return "  ".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--graph", metavar="DIR")
    parser.add_argument("--seed-url", default="http://www.ics.uci.edu/")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--hosts", type=int, default=300)
    parser.add_argument("--max-pages", type=int, default=1200)
    parser.add_argument("--per-host", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--sample", type=float, default=1.0,
                        help="with --graph: keep this random share of its pages (the seed always)")
    parser.add_argument("--variants", default="",
                        help="extra frontier variants: N:M:per_doubling:other_host"
                             "[:nodepth][:first][:hH],... (hH: H host picks)")
    parser.add_argument("--oracle", action="store_true",
                        help="one more row: sorted picks by the true PageRank of the urls found")
    args = parser.parse_args()
    if args.graph:
        graph = Graph.from_dir(args.graph, [args.seed_url])
        if args.sample < 1:
            graph = subsample(graph, args.sample, args.seed)
    else:
        from bench.order import Web

        web = Web(args.seed, args.hosts, args.max_pages)
        graph = Graph.from_truth(web.truth, web.reachable, web.seeds, web._final)
    print(graph.describe())
    print("cells: PageRank mass / top 1% / homepages at " + ", ".join(f"{m:.0%}" for m in MARKS))
    rows = {"breadth first": [replay_bfs(graph, args.per_host)]}
    default = (f"{settings.TIANWANG_SORTED_PICKS}:{settings.TIANWANG_RANDOM_PICKS}:"
               f"{settings.TIANWANG_LINK_WEIGHT}:{settings.TIANWANG_LINK_OTHER_HOST}:first:"
               f"h{settings.TIANWANG_HOST_PICKS}")
    variants = [default, "1:1:0:1", "3:1:0:1"]
    variants += [v for v in args.variants.split(",") if v]
    for variant in variants:
        n, m, per_doubling, other, *flags = variant.split(":")
        rounds = 1 if int(n) >= NEVER else args.rounds
        firsts = ({"first": settings.TIANWANG_HOST_FIRST,
                   "seed_first": settings.TIANWANG_SEED_HOST_FIRST} if "first" in flags else {})
        host_picks = sum(int(flag[1:]) for flag in flags if flag[:1] == "h" and flag[1:].isdigit())
        rows[variant] = [
            replay_frontier(graph, int(n), int(m), float(per_doubling), float(other),
                            "nodepth" not in flags, seed, args.per_host, host_picks=host_picks,
                            **firsts)
            for seed in range(rounds)
        ]
    if args.oracle:
        rows["oracle (true PageRank)"] = [
            replay_frontier(graph, NEVER, 1, 0.0, 1.0, True, 0, args.per_host, oracle=graph)]
    for name, orders in rows.items():
        print(f"{name:28} {cells(graph, orders)}", flush=True)


if __name__ == "__main__":
    main()
