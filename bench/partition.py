"""Site partition (issue 8): the plan's speed on a 1-million-page site, and seed 002's
experiment on a synthetic test web and on the real UCI graph.

    python bench/partition.py speed [--pages 1000000] [--seed 8] [--crawlers 4]
    python bench/partition.py synthetic [--seed 8] [--hosts 300] [--max-pages 3000]
                                        [--min-pages 1] [--plots DIR]
    python bench/partition.py real [--dir ../shared/data/uci-ics-dev-crawl] [--min-pages 50]

speed: one site graph is generated (seeded, so the same every run): first-level directories
whose sizes fall as a power law (k^-1.2, as a few directories hold most of a real site), each
a tree of pages of fanout 6-14 inside its own subdirectories; every page links its tree
parent and children, a few random pages of its own directory (about three quarters of the
links stay in the directory, as the paper measured) and a few index pages of other
directories. Timed: the plan with the graph already in memory (graph_stats + make_plan), and
`tianwang partition plan` end to end on the graph written as a recorded graph directory.

synthetic: the test web model's truth (no server): each host's stored pages are its 200
text pages (kinds home, html, text) that robots.txt allows; a link to a redirect counts as a
link to where it leads (at most 5 hops); only links between two such pages of one host are
kept. Written as a recorded graph directory and run through `tianwang partition simulate`
(N = 1..10).

real: `tianwang partition simulate` on the recorded UCI graph (N = 1..10).
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tianwang.analysis.sitegraph import EDGES_FILE, PAGES_FILE  # noqa: E402
from tianwang.analysis.sitepartition import graph_stats, make_plan  # noqa: E402

STORED_KINDS = {"home", "html", "text"}
DIR_EXPONENT = 1.2
DIRECTORIES = 3000


# --- speed ---------------------------------------------------------------------------------


def big_site(pages: int, seed: int) -> tuple[list[str], list[list[int]]]:
    """urls and out-links (as url indexes) of one site of `pages` pages; url 0 is the root."""
    rng = random.Random(seed)
    weights = [k ** -DIR_EXPONENT for k in range(1, DIRECTORIES + 1)]
    scale = (pages - 1 - DIRECTORIES) / sum(weights)
    sizes = [1 + int(w * scale) for w in weights]
    sizes[0] += pages - 1 - sum(sizes)  # the rounding remainder to the largest
    urls = ["http://big.test/"]
    links: list[list[int]] = [[]]
    starts = []
    for d, size in enumerate(sizes):
        start = len(urls)
        starts.append(start)
        fanout = rng.randint(6, 14)
        subs = [f"s{k}/" for k in range(rng.randint(0, 4))] or [""]
        for k in range(size):
            sub = "" if k == 0 else subs[k % len(subs)]
            urls.append(f"http://big.test/d{d}/{sub}p{k}.html" if k else f"http://big.test/d{d}/")
            links.append([])
            if k:
                parent = start + (k - 1) // fanout
                links[parent].append(start + k)
                links[start + k].append(parent)
    for d, (start, size) in enumerate(zip(starts, sizes, strict=True)):
        # every directory is linked from the homepage or from a page of an earlier directory
        earlier = rng.randrange(d) if d >= 40 else -1
        linker = 0 if earlier < 0 else starts[earlier] + rng.randrange(sizes[earlier])
        links[linker].append(start)
        for page in range(start, start + size):
            out = links[page]
            for _ in range(rng.randint(2, 8)):
                out.append(start + rng.randrange(size))
            if rng.random() < 0.5:
                other = rng.randrange(DIRECTORIES)
                out.append(starts[other])
            if rng.random() < 0.3:
                out.append(0)
    return urls, [list(dict.fromkeys(t for t in out if t != s)) for s, out in enumerate(links)]


def write_recorded(directory: Path, urls: list[str], links: Iterable[Iterable[int]]) -> int:
    """The graph as pages.tsv and edges.tsv; returns the edge count."""
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / PAGES_FILE, "w", encoding="utf-8") as out:
        out.write("id\turl\thost\n")
        out.writelines(f"{k}\t{url}\t{_host(url)}\n" for k, url in enumerate(urls))
    edges = 0
    with open(directory / EDGES_FILE, "w", encoding="utf-8") as out:
        out.write("src_id\tdst_id\n")
        for source, targets in enumerate(links):
            for target in targets:
                out.write(f"{source}\t{target}\n")
                edges += 1
    return edges


def _host(url: str) -> str:
    return url.split("/", 3)[2]


def speed(args: argparse.Namespace) -> None:
    started = time.perf_counter()
    urls, links = big_site(args.pages, args.seed)
    print(f"generated {len(urls):,} pages, {sum(map(len, links)):,} links "
          f"in {time.perf_counter() - started:.1f} s")
    graph = {urls[s]: [urls[t] for t in out] for s, out in enumerate(links)}
    started = time.perf_counter()
    pages, in_degree, depth = graph_stats(graph, urls[0])
    stats_at = time.perf_counter()
    plan = make_plan(pages, in_degree, depth, args.crawlers)
    done = time.perf_counter()
    print(f"in memory: graph_stats {stats_at - started:.2f} s + make_plan {done - stats_at:.2f} s"
          f" = {done - started:.2f} s ({len(plan.owner)} key paths, {args.crawlers} crawlers)")
    del graph, pages, in_degree, depth
    with tempfile.TemporaryDirectory() as tmp:
        write_recorded(Path(tmp) / "graph", urls, links)
        del urls, links
        out = Path(tmp) / "plan.json"
        command = [sys.executable, "-m", "tianwang.cli", "partition", "plan",
                   str(Path(tmp) / "graph"), "--crawlers", str(args.crawlers), "--out", str(out)]
        started = time.perf_counter()
        result = subprocess.run(command, capture_output=True, text=True, cwd=ROOT)
        elapsed = time.perf_counter() - started
        if result.returncode:
            sys.exit(result.stderr)
        print(result.stdout, end="")
        print(f"end to end (read pages.tsv + edges.tsv, homepage reach, plan, write): "
              f"{elapsed:.2f} s; plan file {out.stat().st_size:,} bytes")


# --- the experiments -----------------------------------------------------------------------


def truth_graph(seed: int, hosts: int, max_pages: int) -> tuple[list[str], list[list[int]]]:
    """urls and in-site links of the test web's stored pages (see the module docstring)."""
    from tianwang.testweb.model import SyntheticWeb

    records = {r["url"]: r for r in SyntheticWeb(seed, hosts, max_pages).truth(bodies=False)}
    stored = [url for url, r in records.items() if _stored(r)]
    index = {url: k for k, url in enumerate(stored)}
    links = []
    for url in stored:
        host = records[url]["host"]
        targets = (_landing(records, link) for link in records[url]["links"])
        links.append(list(dict.fromkeys(
            index[t] for t in targets
            if t in index and t != url and records[t]["host"] == host)))
    return stored, links


def _stored(record: dict) -> bool:
    return (record["kind"] in STORED_KINDS and record["status"] == 200
            and record["robots_allowed"])


def _landing(records: dict[str, dict], url: str) -> str:
    for _ in range(5):
        location = records.get(url, {}).get("location")
        if not location:
            break
        url = location
    return url


def simulate(directory: Path, min_pages: int, plots: str | None) -> None:
    command = [sys.executable, "-m", "tianwang.cli", "partition", "simulate", str(directory),
               "--crawlers", "1-10", "--min-pages", str(min_pages)]
    if plots:
        command += ["--plots", plots]
    started = time.perf_counter()
    result = subprocess.run(command, capture_output=True, text=True, cwd=ROOT)
    if result.returncode:
        sys.exit(result.stderr)
    print(result.stdout, end="")
    print(f"({' '.join(command[1:])}: {time.perf_counter() - started:.1f} s)")


def synthetic(args: argparse.Namespace) -> None:
    started = time.perf_counter()
    urls, links = truth_graph(args.seed, args.hosts, args.max_pages)
    print(f"test web seed {args.seed}, {args.hosts} hosts, max pages {args.max_pages}: "
          f"{len(urls):,} stored pages, {sum(map(len, links)):,} in-site links "
          f"({time.perf_counter() - started:.1f} s)")
    with tempfile.TemporaryDirectory() as tmp:
        write_recorded(Path(tmp), urls, links)
        simulate(Path(tmp), args.min_pages, args.plots)


def real(args: argparse.Namespace) -> None:
    simulate(Path(args.dir), args.min_pages, args.plots)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="what", required=True)
    p = sub.add_parser("speed")
    p.add_argument("--pages", type=int, default=1_000_000)
    p.add_argument("--seed", type=int, default=8)
    p.add_argument("--crawlers", type=int, default=4)
    p.set_defaults(func=speed)
    p = sub.add_parser("synthetic")
    p.add_argument("--seed", type=int, default=8)
    p.add_argument("--hosts", type=int, default=300)
    p.add_argument("--max-pages", type=int, default=3000)
    p.add_argument("--min-pages", type=int, default=1)
    p.add_argument("--plots")
    p.set_defaults(func=synthetic)
    p = sub.add_parser("real")
    p.add_argument("--dir", default=str(ROOT.parent / "shared/data/uci-ics-dev-crawl"))
    p.add_argument("--min-pages", type=int, default=50)
    p.add_argument("--plots")
    p.set_defaults(func=real)
    args = parser.parse_args(argv)
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, load {os.getloadavg()[0]:.2f}, "
          f"{os.cpu_count()} cores")
    args.func(args)


if __name__ == "__main__":
    main()
