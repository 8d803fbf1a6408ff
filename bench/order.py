"""Crawl order quality (issues 3 and 20): how soon each ordering fetches the graph's PageRank,
its most linked pages and its homepages, read from the test web's access log.

    python bench/order.py [--seed 1] [--hosts 300] [--max-pages 1200] [--rounds 1]
                          [--seed-share 1.0] [--keep-logs DIR] [--plot FILE.png]
                          [--orders "tianwang default,depth only 1:1,breadth first,..."]
    python bench/order.py --graph DIR [--seed-url http://www.ics.uci.edu/] [--per-host 2]
    python bench/order.py --graph DIR --redis --orders "tianwang default,tianwang shared"

With --graph, the test web serves a recorded link graph (`testweb serve --graph DIR`: any
graph in that format) and each crawl starts from --seed-url alone; the marks are shares of
the graph's pages, and the measures (bench/order_graph.py) are PageRank mass (damping 0.85),
the top 1% by in-degree and the hosts' homepages, at 1, 2, 5 and 10%. Without it, the
synthetic web as below, and the same three measures over its reachable text pages.

One test web (its own process, with an access log) serves every crawl. Each ordering is a
real `scrapy crawl site` seeded with every homepage (the CWT200g setup), or with a random
--seed-share of them so the other hosts must be found through links; it crawls across
hosts: no level limit and links to other hosts followed (TIANWANG_MAX_LEVELS=0,
TIANWANG_STAY_IN_HOST=False), with one connection per host, 32 at once and no delay. A crawl
stops once it has stored a bit more than --stop (10%) of the reachable text pages.

At the moments 0.5%, 1%, 2%, 5% and 10% of the reachable text pages have been fetched (in
the server's serving order), it reports the share of hosts whose homepage has been fetched
and the share of the top 1% of reachable text pages by in-degree that have been fetched.
With --rounds > 1 the orderings run in alternating order and each figure is the median.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.crawl import SITE_EXTENSIONS  # noqa: E402
from bench.order_graph import MARKS as GRAPH_MARKS  # noqa: E402
from bench.order_graph import MEASURES, Graph  # noqa: E402
from tests.redis_server import RedisServer  # noqa: E402
from tests.truth import host_of, reach  # noqa: E402
from tianwang.testweb.launcher import TestWebProcess, write_seeds  # noqa: E402
from tianwang.testweb.model import SyntheticWeb  # noqa: E402

MARKS = (0.005, 0.01, 0.02, 0.05, 0.10)
TOP_SHARE = 0.01
TEXT_TYPES = {"text/html", "text/plain"}

SCRAPY_SCHEDULER = {
    "SCHEDULER": "scrapy.core.scheduler.Scheduler",
    "DUPEFILTER_CLASS": "scrapy.dupefilters.RFPDupeFilter",
}
FRONTIER = {"SCHEDULER": "tianwang.frontier.scheduler.FrontierScheduler"}
# The weights alone decide: no host's first requests ahead of them.
NO_FIRSTS = {"TIANWANG_HOST_FIRST": "0", "TIANWANG_SEED_HOST_FIRST": "0"}
# the Tianwang paper's alternation: sorted and random picks only.
NO_HOST_PICKS = {"TIANWANG_HOST_PICKS": "0", "TIANWANG_RANDOM_PICKS": "1"}
SORTED_RANDOM_31_1 = {**NO_HOST_PICKS, "TIANWANG_SORTED_PICKS": "31"}
DEPTH_ONLY = {**FRONTIER, **NO_FIRSTS, **NO_HOST_PICKS, "TIANWANG_LINK_WEIGHT": "0"}
# Each ordering is only settings on top of COMMON; the project's own are the defaults.
ORDERINGS: dict[str, dict[str, str]] = {
    # The project's defaults as they ship: a host's first requests in turn, then depth and
    # link relations, N sorted, H host and M random picks.
    "tianwang default": {**FRONTIER},
    # The same, one node of a crawl shared through Redis (--redis: a redis-server of the
    # bench's own, a new job each crawl).
    "tianwang shared": {},
    # Seed 000 as the paper states it: the vertical "paper" (tianwang/verticals.py), whose
    # settings replace the stack's defaults; the bench's own below still beat it.
    "paper": {**FRONTIER, "TIANWANG_VERTICAL": "paper"},
    # The same weights with 31 sorted picks and 1 random, no host picks (the default before).
    "31:1 random picks": {**FRONTIER, **SORTED_RANDOM_31_1},
    # the Tianwang paper's depth-only weight at its 1:1 and the earlier 3:1 (issues 3 to 19).
    "depth only 1:1": {**DEPTH_ONLY, "TIANWANG_SORTED_PICKS": "1", "TIANWANG_RANDOM_PICKS": "1"},
    "depth only 3:1": {**DEPTH_ONLY, "TIANWANG_SORTED_PICKS": "3", "TIANWANG_RANDOM_PICKS": "1"},
    # OPIC alone (Abiteboul et al. 2003): cash decides (16 weight per doubling: a directory
    # level only breaks ties), no bonus across hosts, no random picks to speak of.
    "OPIC": {**FRONTIER, **NO_FIRSTS, **NO_HOST_PICKS, "TIANWANG_LINK_WEIGHT": "16",
             "TIANWANG_LINK_OTHER_HOST": "1",
             "TIANWANG_LINK_RELATIVE": "0",
             "TIANWANG_SORTED_PICKS": "1000000", "TIANWANG_RANDOM_PICKS": "1"},
    # Baeza-Yates et al. 2005: the host with the most pending requests first, breadth first
    # within a host.
    "larger sites first": {
        **SCRAPY_SCHEDULER,
        "DEPTH_PRIORITY": "1",
        "SCHEDULER_DISK_QUEUE": "scrapy.squeues.PickleFifoDiskQueue",
        "SCHEDULER_MEMORY_QUEUE": "scrapy.squeues.FifoMemoryQueue",
        "SCHEDULER_PRIORITY_QUEUE": "bench.larger_sites.LargerSitesFirstQueue",
    },
    # Scrapy's own defaults, undoing the project's breadth-first settings.
    "scrapy default": {
        **SCRAPY_SCHEDULER,
        "DEPTH_PRIORITY": "0",
        "SCHEDULER_DISK_QUEUE": "scrapy.squeues.PickleLifoDiskQueue",
        "SCHEDULER_MEMORY_QUEUE": "scrapy.squeues.LifoMemoryQueue",
        "SCHEDULER_PRIORITY_QUEUE": "scrapy.pqueues.DownloaderAwarePriorityQueue",
    },
    "breadth first": {
        **SCRAPY_SCHEDULER,
        "DEPTH_PRIORITY": "1",
        "SCHEDULER_DISK_QUEUE": "scrapy.squeues.PickleFifoDiskQueue",
        "SCHEDULER_MEMORY_QUEUE": "scrapy.squeues.FifoMemoryQueue",
        "SCHEDULER_PRIORITY_QUEUE": "scrapy.pqueues.DownloaderAwarePriorityQueue",
    },
    # One priority for all (no depth, redirect or retry adjustment), start requests in the
    # same queue, each pop uniform over everything pending.
    "random": {
        **SCRAPY_SCHEDULER,
        "DEPTH_PRIORITY": "0",
        "REDIRECT_PRIORITY_ADJUST": "0",
        "RETRY_PRIORITY_ADJUST": "0",
        "SCHEDULER_PRIORITY_QUEUE": "scrapy.pqueues.ScrapyPriorityQueue",
        "SCHEDULER_MEMORY_QUEUE": "bench.random_queue.RandomMemoryQueue",
        "SCHEDULER_START_MEMORY_QUEUE": "",
    },
}
COMMON = {
    "TIANWANG_MAX_LEVELS": "0",
    "TIANWANG_STAY_IN_HOST": "False",
    "ROBOTSTXT_OBEY": "True",
    "CONCURRENT_REQUESTS": "32",
    "CONCURRENT_REQUESTS_PER_DOMAIN": "1",
    "DOWNLOAD_DELAY": "0",
    # Order is measured here, not storage: no pipelines, so the crawl is cheaper to run.
    "ITEM_PIPELINES": "{}",
    "LOG_LEVEL": "INFO",
    "EXTENSIONS": SITE_EXTENSIONS,
}
class Web:
    """The truth the figures are measured against: reachable text pages, homepages, top 1%."""

    def __init__(self, seed: int, hosts: int, max_pages: int, seed_share: float = 1.0) -> None:
        synthetic = SyntheticWeb(seed, hosts, max_pages)
        self.truth = {page["url"]: page for page in synthetic.truth(bodies=False)}
        homepages = synthetic.homepages()
        count = max(1, round(seed_share * len(homepages)))
        self.seeds = sorted(random.Random(seed).sample(homepages, count))
        levels = reach(self.truth, self.seeds, max_levels=0, stay_in_host=False).levels
        self.reachable = {url for url in levels if _is_text_page(self.truth.get(url))}
        self.homepages = [url for url in homepages if url in self.reachable]
        self.indegree = self._indegree(levels)
        count = math.ceil(TOP_SHARE * len(self.reachable))
        ranked = sorted(self.reachable, key=lambda url: (-self.indegree[url], url))
        self.top = set(ranked[:count])

    def _indegree(self, levels: dict[str, int]) -> Counter[str]:
        """Distinct reachable pages linking to each reachable text page; a link to a
        redirect counts for the page it leads to."""
        indegree: Counter[str] = Counter()
        for source in levels:
            page = self.truth.get(source)
            if not page or page["status"] != 200:
                continue
            targets = {self._final(link) for link in page["links"]}
            for target in targets - {source}:
                if target in self.reachable:
                    indegree[target] += 1
        return indegree

    def _final(self, url: str) -> str:
        for _ in range(5):
            page = self.truth.get(url)
            if not page or not page["location"]:
                break
            url = page["location"]
        return url

    def site_sizes(self) -> list[int]:
        """Text pages per host (status 200, text/html or text/plain), smallest first."""
        sizes = Counter(page["host"] for page in self.truth.values() if _is_text_page(page))
        return sorted(sizes.values())

    def describe(self) -> str:
        sizes = self.site_sizes()
        threshold = min(self.indegree[url] for url in self.top)
        homes = len(self.top & set(self.homepages))
        return (
            f"{len(self.seeds)} seeds, {len(self.homepages)} hosts reachable from them, "
            f"{len(self.truth)} urls; text pages per site: median "
            f"{statistics.median(sizes):g}, max {sizes[-1]}, {sum(s >= 1000 for s in sizes)} "
            f"sites of 1,000+\n{len(self.reachable)} reachable text pages; top 1% by in-degree:"
            f" {len(self.top)} pages (in-degree >= {threshold}), {homes} of them homepages"
        )


def _is_text_page(page: dict | None) -> bool:
    return bool(page) and page["status"] == 200 and page["content_type"] in TEXT_TYPES


def warm_up(address: str, homepages: list[str]) -> None:
    """Fetch each homepage once, so the server has built every site before any crawl."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({"http": address}))
    for url in homepages:
        with opener.open(url, timeout=30) as response:
            response.read()


SHARED = {"redis": ""}  # the url of the bench's redis-server, with --redis


def run_crawl(name: str, pages: int, address: str, seeds: Path, workdir: Path, stop: float,
              seed: int, per_host: int) -> dict:
    stats_file = workdir / "stats.json"
    shared = {}
    if name.startswith("tianwang shared"):
        if not SHARED["redis"]:
            raise SystemExit("the 'tianwang shared' order needs --redis")
        shared = {"TIANWANG_REDIS_URL": SHARED["redis"],
                  "TIANWANG_REDIS_JOB": f"order-{os.getpid()}-{workdir.name}"}
    settings = {
        **COMMON,
        **ORDERINGS[name],
        **shared,
        "CONCURRENT_REQUESTS_PER_DOMAIN": str(per_host),
        "TIANWANG_PROXY": address,
        "TIANWANG_DATA_DIR": str(workdir / "data"),
        "TIANWANG_FRONTIER_SEED": str(seed),
        "BENCH_RANDOM_SEED": str(seed),
        "BENCH_STATS_FILE": str(stats_file),
        # A little past the last mark: the close takes effect once the in-flight finish.
        "CLOSESPIDER_ITEMCOUNT": str(math.ceil(stop * pages * 1.02) + 32),
    }
    command = [sys.executable, "-m", "scrapy", "crawl", "site", "-a", f"seeds={seeds}"]
    for key, value in settings.items():
        command += ["-s", f"{key}={value}"]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "SCRAPY_SETTINGS_MODULE": "tianwang.settings"}
    env.pop("http_proxy", None)
    with open(workdir / "crawl.log", "w", encoding="utf-8") as log:
        result = subprocess.run(command, cwd=workdir, env=env, stderr=log, stdout=log)
    if result.returncode != 0:
        tail = (workdir / "crawl.log").read_text(encoding="utf-8")[-3000:]
        raise SystemExit(f"{name}: scrapy crawl failed ({result.returncode}):\n{tail}")
    return json.loads(stats_file.read_text(encoding="utf-8"))


def served_since(log: Path, offset: int) -> tuple[list[dict], int]:
    lines = log.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines[offset:]], len(lines)


def test_web(args: argparse.Namespace, access_log: Path) -> TestWebProcess:
    if args.graph:
        return TestWebProcess.for_graph(args.graph, access_log=access_log)
    return TestWebProcess(args.seed, args.hosts, args.max_pages, access_log=access_log)


def measure(args: argparse.Namespace, graph: Graph, names: list[str]) -> dict[str, list[dict]]:
    runs: dict[str, list[dict]] = {name: [] for name in names}
    with tempfile.TemporaryDirectory() as tmp:
        access_log = Path(tmp) / "access.jsonl"
        seeds = write_seeds(Path(tmp) / "seeds.txt", graph.seeds)
        with test_web(args, access_log) as srv:
            warm_up(srv.address, graph.seeds)
            _, offset = served_since(access_log, 0)
            for round_no in range(1, args.rounds + 1):
                for name in names if round_no % 2 else names[::-1]:
                    with tempfile.TemporaryDirectory(dir=tmp) as workdir:
                        started = time.monotonic()
                        stats = run_crawl(name, len(graph.urls), srv.address, seeds,
                                          Path(workdir), args.stop, args.seed + round_no,
                                          args.per_host)
                        wall = time.monotonic() - started
                    served, offset = served_since(access_log, offset)
                    if args.keep_logs:
                        keep(Path(args.keep_logs), f"{name}-{round_no}", served)
                    fetched = [e["url"] for e in served if e["method"] == "GET"
                               and e["status"] == 200]
                    run = {"marks": graph.marks(fetched), "curve": graph.curve(fetched),
                           "requests": len(served), "wall": wall,
                           "hosts": len({host_of(e["url"]) for e in served}),
                           "items": stats.get("item_scraped_count", 0)}
                    runs[name].append(run)
                    print(run_line(round_no, name, run), flush=True)
    return runs


def keep(directory: Path, label: str, served: list[dict]) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / (label.replace(" ", "_").replace(":", "-") + ".jsonl")
    with open(path, "w", encoding="utf-8") as out:
        out.writelines(json.dumps(entry) + "\n" for entry in served)


def run_line(round_no: int, name: str, run: dict) -> str:
    cells = " ".join(_cell(run["marks"].get(mark)) for mark in GRAPH_MARKS)
    return (f"round {round_no} {name:18s} {run['requests']:6d} requests to {run['hosts']} hosts,"
            f" {run['items']} pages, {run['wall']:.0f} s | {cells}")


def _cell(figures: tuple[float, ...] | None) -> str:
    return "not reached" if figures is None else "/".join(f"{f:.3f}" for f in figures)


def median_marks(runs: list[dict]) -> dict[float, tuple[float, float, float] | None]:
    result: dict[float, tuple[float, float, float] | None] = {}
    for mark in GRAPH_MARKS:
        values = [run["marks"][mark] for run in runs if mark in run["marks"]]
        if len(values) < len(runs):
            result[mark] = None  # a run that never reached the mark: no figure
        else:
            result[mark] = tuple(statistics.median(v[i] for v in values) for i in range(3))
    return result


def tables(runs: dict[str, list[dict]]) -> str:
    """One table per measure: orders down, marks across."""
    out = []
    for i, measure_name in enumerate(MEASURES):
        out.append(f"{measure_name}:\n")
        out.append("| order | " + " | ".join(f"{mark:.0%}" for mark in GRAPH_MARKS) + " |")
        out.append("|---" * (len(GRAPH_MARKS) + 1) + "|")
        for name, name_runs in runs.items():
            figures = median_marks(name_runs)
            cells = ["not reached" if figures[m] is None else f"{figures[m][i]:.3f}"
                     for m in GRAPH_MARKS]
            out.append(f"| {name} | " + " | ".join(cells) + " |")
        out.append("")
    return "\n".join(out)


def goal(runs: dict[str, list[dict]]) -> list[str]:
    """Issue 20's goal: the default at or above breadth first's PageRank mass at every mark
    and its homepage share at 10%."""
    if "tianwang default" not in runs or "breadth first" not in runs:
        return ["goal not checked: needs both 'tianwang default' and 'breadth first'"]
    ours, bfs = median_marks(runs["tianwang default"]), median_marks(runs["breadth first"])
    lines = []
    for mark in GRAPH_MARKS:
        o, b = ours[mark], bfs[mark]
        if o is None or b is None:
            lines.append(f"{mark:.0%}: not reached")
            continue
        checks = [("PageRank mass", 0)]
        if mark == max(GRAPH_MARKS):
            checks.append(("homepages", 2))
        for label, i in checks:
            mine, theirs = o[i], b[i]
            verdict = "at or above"
            if mine < theirs:
                p = p_below(rounds_at(runs["tianwang default"], mark, i),
                            rounds_at(runs["breadth first"], mark, i))
                verdict = f"BELOW (p = {p:.2f})"
            lines.append(f"{mark:.0%} {label}: default {mine:.3f} vs breadth first {theirs:.3f}"
                         f" ({mine / theirs:.2f}x): {verdict}")
    return lines


def rounds_at(runs: list[dict], mark: float, measure: int) -> list[float]:
    return [run["marks"][mark][measure] for run in runs if mark in run["marks"]]


def p_below(ours: list[float], theirs: list[float], draws: int = 20_000) -> float:
    """How likely two equally good orders are to leave ours this far below theirs by chance:
    of all the ways to split the pooled rounds into two groups of these sizes, the share whose
    gap in means is at least the one seen (exact up to 100,000 splits, else 20,000 seeded
    random ones). With 3 rounds a side no gap can give less than 0.05."""
    pooled, n = ours + theirs, len(ours)
    seen = statistics.mean(theirs) - statistics.mean(ours) - 1e-12
    total = sum(pooled)

    def gap(picked: float) -> float:
        return (total - picked) / len(theirs) - picked / n

    if math.comb(len(pooled), n) <= 100_000:
        splits = [sum(c) for c in itertools.combinations(pooled, n)]
    else:
        rng = random.Random(0)
        splits = [sum(rng.sample(pooled, n)) for _ in range(draws)]
    return sum(gap(picked) >= seen for picked in splits) / len(splits)


def shortfall(label: str, mark: float, measure: int, ours: list[dict], theirs: list[dict],
              other: str) -> str:
    """One shortfall: both medians, and how likely the rounds' noise is to make it."""
    mine, their = rounds_at(ours, mark, measure), rounds_at(theirs, mark, measure)
    return (f"{label} at {mark:.0%} {statistics.median(mine):.3f} < {other} "
            f"{statistics.median(their):.3f} (p = {p_below(mine, their):.2f}, {len(mine)} and "
            f"{len(their)} rounds)")


def criterion(runs: dict[str, list[dict]]) -> list[str]:
    """Issue 37's test of each order for the default: PageRank mass and homepages at or above
    breadth first's at every mark, and homepages at 10% at or above the paper's order's."""
    if "breadth first" not in runs:
        return ["criterion not checked: needs 'breadth first'"]
    bfs = median_marks(runs["breadth first"])
    paper = median_marks(runs["paper"]) if "paper" in runs else None
    last = max(GRAPH_MARKS)
    lines = []
    for name, name_runs in runs.items():
        if name in ("breadth first", "paper"):
            continue
        ours, short = median_marks(name_runs), []
        for mark in GRAPH_MARKS:
            if ours[mark] is None or bfs[mark] is None:
                short.append(f"{mark:.0%} not reached")
                continue
            for label, i in (("PageRank", 0), ("homepages", 2)):
                if ours[mark][i] < bfs[mark][i]:
                    short.append(shortfall(label, mark, i, name_runs, runs["breadth first"],
                                           "breadth first's"))
        if paper is not None and ours[last] and paper[last] and ours[last][2] < paper[last][2]:
            short.append(shortfall("homepages", last, 2, name_runs, runs["paper"], "the paper's"))
        lines.append(f"criterion {name}: " + ("met" if not short else "; ".join(short)))
    return lines


def plot(runs: dict[str, list[dict]], path: Path, title: str) -> None:
    """The curves of the first round of each order, one panel per measure."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(1, 3, figsize=(16, 5))
    for name, name_runs in runs.items():
        xs, ys = name_runs[0]["curve"]
        for axis, values in zip(axes, ys, strict=True):
            axis.plot([x * 100 for x in xs], values, label=name,
                      linewidth=2.5 if name == "tianwang default" else 1.2)
    for axis, measure_name in zip(axes, MEASURES, strict=True):
        axis.set_title(measure_name)
        axis.set_xlabel("% of pages fetched")
        axis.grid(alpha=0.3)
    axes[0].legend(fontsize=8)
    figure.suptitle(title)
    figure.tight_layout()
    figure.savefig(path, dpi=90)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--graph", metavar="DIR",
                        help="serve this recorded link graph (pages.tsv, edges.tsv) instead")
    parser.add_argument("--seed-url", default="http://www.ics.uci.edu/",
                        help="with --graph: the one seed (default %(default)s)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--hosts", type=int, default=300)
    parser.add_argument("--max-pages", type=int, default=1200)
    parser.add_argument("--per-host", type=int, default=None,
                        help="requests at once per host (default 2 with --graph, else 1)")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--seed-share", type=float, default=1.0,
                        help="share of the homepages given as seeds (default 1: all)")
    parser.add_argument("--keep-logs", metavar="DIR",
                        help="write each crawl's access log lines to DIR")
    parser.add_argument("--plot", metavar="PNG", help="draw the curves into this file")
    parser.add_argument("--stop", type=float, default=max(GRAPH_MARKS),
                        help="stop each crawl past this share of the pages")
    parser.add_argument("--variant", action="append", default=[], metavar="NAME:K=V,K=V",
                        help="one more order: the frontier with these settings (repeatable)")
    parser.add_argument("--redis", action="store_true",
                        help="start a redis-server for the 'tianwang shared' order")
    local_orders = [name for name in ORDERINGS if name != "tianwang shared"]
    parser.add_argument("--orders", default=",".join(local_orders),
                        help="comma-separated, from: " + ", ".join(ORDERINGS))
    args = parser.parse_args()
    for variant in args.variant:
        name, _, pairs = variant.partition(":")
        base = {} if name.startswith("tianwang shared") else FRONTIER  # shared: the add-on's
        ORDERINGS[name] = {**base, **dict(pair.split("=", 1) for pair in pairs.split(","))}
        if args.orders == parser.get_default("orders"):
            args.orders = ""
        args.orders += "," + name
    if args.per_host is None:
        args.per_host = 2 if args.graph else 1
    names = [name.strip() for name in args.orders.split(",") if name.strip()]
    unknown = [name for name in names if name not in ORDERINGS]
    if unknown:
        parser.error(f"unknown orderings {unknown}; known: {list(ORDERINGS)}")
    if args.graph:
        graph = Graph.from_dir(args.graph, [args.seed_url])
        if args.seed_url not in graph.ids:
            parser.error(f"--seed-url {args.seed_url} is not a page of the graph (as served)")
    else:
        web = Web(args.seed, args.hosts, args.max_pages, args.seed_share)
        print(web.describe(), flush=True)
        graph = Graph.from_truth(web.truth, web.reachable, web.seeds, web._final)
    print(graph.describe(), flush=True)
    print("cells: PageRank mass / top 1% by in-degree / homepages", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        server = RedisServer(Path(tmp) / "redis").start() if args.redis else None
        SHARED["redis"] = server.url if server else ""
        try:
            runs = measure(args, graph, names)
        finally:
            if server is not None:
                server.stop()
    print()
    print(tables(runs))
    print("\n".join(goal(runs)))
    print("\n".join(criterion(runs)))
    if args.plot:
        title = (f"graph {Path(args.graph).name}, seed {args.seed_url}" if args.graph
                 else f"synthetic web, seed {args.seed}, {args.hosts} hosts")
        plot(runs, Path(args.plot), title)
        print(f"plot: {args.plot}")
    print(f"machine: {os.cpu_count()} cores, python {sys.version.split()[0]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
