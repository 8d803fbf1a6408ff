"""Simulation against reality on real site structures: crawl the N shares of recorded sites
for real (`scrapy crawl site -a partition= -a share=`) through `testweb serve --graph`, and
compare the four measures of the stored records with `tianwang partition simulate`'s.

    python bench/partition_crawl.py [--graph ../shared/data/uci-ics-dev-crawl]
                                    [--crawlers 3] HOST [HOST ...]
    python bench/partition_crawl.py --web SEED,HOSTS [--crawlers 3] HOST [HOST ...]

Per host: the plan and the simulation by the partition commands on the recorded graph (the
plan's homepages and seeds moved to where the graph web serves them, https as http:
tianwang.testweb.graph.served_plan), then one crawl per share, each into its own data dir,
unlimited levels. With --web, the hosts are the synthetic test web's (redirects, robots.txt,
dead links, resources and all) and the graph is a whole crawl of the host first, read from its
data dir as the partition commands read a crawl. U is the simulation's (the pages the
homepage reaches). Prints one line per host: N, I, U, M of both, and whether all four
measures are equal.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tianwang.analysis.sitepartition import measures  # noqa: E402
from tianwang.formats.partitionplan import dump_plan, load_plan  # noqa: E402
from tianwang.formats.store import iter_tree  # noqa: E402
from tianwang.testweb.graph import served_plan  # noqa: E402
from tianwang.testweb.launcher import TestWebProcess  # noqa: E402

UCI = ROOT.parent / "shared" / "data" / "uci-ics-dev-crawl"
CRAWL = {"DOWNLOAD_DELAY": "0", "CONCURRENT_REQUESTS": "32",
         "CONCURRENT_REQUESTS_PER_DOMAIN": "8", "LOG_LEVEL": "WARNING",
         "TIANWANG_MAX_LEVELS": "0"}
FIELDS = ("n", "i", "u", "m", "overlap", "coverage", "acceleration", "score")


def tianwang(*args: str) -> None:
    subprocess.run([sys.executable, "-m", "tianwang", *args], check=True, cwd=ROOT,
                   capture_output=True, text=True)


def simulated(graph: Path, host: str, crawlers: int, work: Path) -> dict:
    tianwang("partition", "plan", str(graph), "--site", host, "--crawlers", str(crawlers),
             "--out", str(work / "plan.json"))
    if (graph / "edges.tsv").exists():  # a recorded graph: its https pages are served as http
        dump_plan(work / "plan.json", served_plan(load_plan(work / "plan.json")))
    tianwang("partition", "simulate", str(graph), "--site", host, "--crawlers",
             str(crawlers), "--json", str(work / "sim.json"))
    runs = json.loads((work / "sim.json").read_text())["sites"][0]["runs"]
    return next(r for r in runs if r["scheme"] == "key-path" and r["crawlers"] == crawlers)


def crawl(proxy: str, args: dict[str, str], data: Path) -> list[str]:
    """One `scrapy crawl site` (unlimited levels) into data; the urls it stored."""
    data.parent.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", "scrapy", "crawl", "site"]
    for name, value in args.items():
        command += ["-a", f"{name}={value}"]
    settings = {**CRAWL, "TIANWANG_PROXY": proxy, "TIANWANG_DATA_DIR": str(data)}
    for name, value in settings.items():
        command += ["-s", f"{name}={value}"]
    env = {**os.environ, "SCRAPY_SETTINGS_MODULE": "tianwang.settings", "PYTHONPATH": str(ROOT)}
    env.pop("http_proxy", None)
    subprocess.run(command, check=True, cwd=data.parent, env=env, capture_output=True)
    return [record.url for _, record in iter_tree(data)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("hosts", nargs="+")
    parser.add_argument("--graph", type=Path, default=UCI)
    parser.add_argument("--crawlers", type=int, default=3)
    parser.add_argument("--web", metavar="SEED,HOSTS", help="the synthetic test web's hosts")
    args = parser.parse_args()
    agreed = True
    if args.web:
        seed, hosts = (int(part) for part in args.web.split(","))
        server = TestWebProcess(seed, hosts)
    else:
        server = TestWebProcess.for_graph(args.graph)
    with tempfile.TemporaryDirectory() as tmp, server as web:
        for host in args.hosts:
            work = Path(tmp) / host
            graph = args.graph
            if args.web:  # the graph is what a whole crawl of the host stored
                graph = work / "whole"
                crawl(web.address, {"seeds": f"http://{host}/"}, graph)
            work.mkdir(exist_ok=True)
            sim = simulated(graph, host, args.crawlers, work)
            started = time.monotonic()
            plan = str(work / "plan.json")
            stored = [crawl(web.address, {"partition": plan, "share": str(share)},
                            work / f"d{share}") for share in range(args.crawlers)]
            real = measures([len(s) for s in stored], len(set().union(*stored)), sim["u"])
            same = all(getattr(real, name) == sim[name] for name in FIELDS)
            agreed &= same
            print(f"{host}: simulated N={sim['n']} I={sim['i']} U={sim['u']} M={sim['m']} | "
                  f"crawled N={real.n} I={real.i} U={real.u} M={real.m} | "
                  f"O={real.overlap:.3f} C={real.coverage:.3f} A={real.acceleration:.3f} "
                  f"S={real.score:.3f} | equal: {same} | {time.monotonic() - started:.0f} s",
                  flush=True)
    return 0 if agreed else 1


if __name__ == "__main__":
    sys.exit(main())
