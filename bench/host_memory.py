"""Memory the local frontier keeps for each host it ever met, once the host is done with.

    python bench/host_memory.py [--hosts 30000] [--base COMMIT]

A month-long crawl of the open web meets tens of millions of hosts, and the frontier keeps
something of each for the crawl's life (its number, its budgets, its first requests given).
The real FrontierScheduler with the project's defaults (three levels, a host's first
requests) is fed --hosts new hosts, each its own registered domain, three urls each at
depths 1 to 3, in batches of 10,000 that it hands out and finishes (politeness forgets idle
hosts, as its timer does in a crawl); then as many more. The traced memory the second half
added, over --hosts, is the bytes a host ever met, with the lines that hold most of it.
With --base, the same in that commit's tree (git archive), for the ratio. The cache of
registered domains (tianwang/domains.py, bounded at 65,536 hosts) is counted while it
fills, about 88 bytes a host at the default --hosts (which takes a few minutes a tree under
tracemalloc; more hosts take proportionally longer).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.versus import archived  # noqa: E402

# Run inside the tree measured (its own tianwang), so a commit's frontier is measured whole.
PROBE = r"""
import gc, sys, tracemalloc
from scrapy import Request
from scrapy.utils.test import get_crawler
from bench.frontier import BenchSpider, _project_settings
from tianwang.frontier.scheduler import FrontierScheduler

hosts = int(sys.argv[1])
settings = _project_settings() | {"TIANWANG_EXPECTED_URLS": 8 * hosts}
frontier = FrontierScheduler.from_crawler(get_crawler(BenchSpider, settings_dict=settings))
spider = BenchSpider()
frontier.open(spider)

def meet(start, stop):
    for batch in range(start, stop, 10_000):
        for i in range(batch, min(stop, batch + 10_000)):
            for depth in (1, 2, 3):
                frontier.enqueue_request(Request(
                    f"http://www.h{i}.com/d{depth}/p{i}.html", callback=spider.parse,
                    meta={"depth": depth}))
        while frontier.next_request() is not None:
            pass
        frontier._collect_done()  # the requests' ends, and politeness's timer
        frontier.slots.politeness.forget_idle(float("inf"))

tracemalloc.start(1)
meet(0, hosts)
gc.collect()
before = tracemalloc.take_snapshot()
meet(hosts, 2 * hosts)
gc.collect()
diff = tracemalloc.take_snapshot().compare_to(before, "lineno")
print(f"{sum(d.size_diff for d in diff) / hosts:.0f}")
for d in diff[:6]:
    frame = d.traceback[0]
    print(f"  {d.size_diff / hosts:6.1f} B  {frame.filename.rsplit('/', 3)[-3:]}:{frame.lineno}")
"""


def bytes_a_host(tree: Path, hosts: int) -> list[str]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    out = subprocess.run([sys.executable, "-c", PROBE, str(hosts)], cwd=tree, env=env,
                         check=True, text=True, capture_output=True).stdout
    return out.splitlines()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=30_000)
    parser.add_argument("--base", help="a commit to compare with")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        trees = [("this tree", ROOT)]
        if args.base:
            trees.append((args.base, archived(args.base, Path(tmp) / "base")))
        figures = {}
        for label, tree in trees:
            lines = bytes_a_host(tree, args.hosts)
            figures[label] = float(lines[0])
            print(f"{label}: {lines[0]} bytes a host ever met ({args.hosts:,} hosts after "
                  f"{args.hosts:,})", *lines[1:], sep="\n", flush=True)
        if args.base:
            print(f"this tree / {args.base}: {figures['this tree'] / figures[args.base]:.3f}")


if __name__ == "__main__":
    main()
