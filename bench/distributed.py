"""The distributed crawl (issues 7, 22): Redis mode against local, N nodes against one, on a
redis-server and on a Redis Cluster, Bloom memory.

    python bench/distributed.py [--hosts 300] [--pages 20] [--rounds 5] [--latency 0]
                                [--latency-spread 0]
                                [--scale-hosts 1000] [--scale-pages 4] [--scale-delay 0.5]
                                [--scale-latency 0] [--scale-concurrency 16] [--scale-per-node]
                                [--nodes 1,2] [--cluster]
                                [--bloom-urls 200000] [--only ratio|cluster|scale|bloom]

1. One node in Redis mode against a local crawl of the same test web, in the same run, rounds
   alternating which goes first; the ratio of median pages/s (goal >= 1.0), the ratio of
   each round's pair (the machine's drift cancels in it), and of median CPU seconds a page
   of the crawl process. --latency has the test web answer each request that
   long after it came (by default at once: the crawl is bound by its own CPU), each within
   --latency x (1 +- --latency-spread).
   With --cluster also (``cluster``): one node on a Redis Cluster (3 masters, 3 replicas, on
   this machine) against one node on a redis-server, rounds alternating (goal >= 0.9).
2. N nodes against one node (all Redis mode) on a polite crawl (--scale-delay between a
   host's requests, one at a time a host) of a bigger web: pages/s over the span from the
   first request served to the last (the nodes' start-up and close left out), and over the
   middle 80% of the requests, for each count in --nodes; with --cluster on the cluster too.
   --scale-latency has the test web answer each request that long after it came, as a real
   server does (a crawl of the real web waits on its servers, not on its own CPU: without it,
   eight nodes on two cores measure the cores). --scale-per-node gives N nodes N x
   --scale-hosts hosts, so every crawl lasts about as long and its ramp-up and tail (a host's
   chain of pages, --scale-delay apart, which no number of nodes shortens) weigh the same.
3. Bloom memory per url for 10 million urls at 1e-6: Redis's own MEMORY USAGE of the bitmap
   sized for them (the whole bitmap is allocated once its high bits are set), filled with
   --bloom-urls urls through the frontier's push script, against scrapy-redis's set of 40-hex
   fingerprints measured the same way.

A redis-server (Debian's, installed if missing, as the tests do) runs on a free loopback port.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import itertools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import redis  # noqa: E402
import redis.asyncio  # noqa: E402

from bench.crawl import COMMON, cpu_per_1000, rate, run_crawl  # noqa: E402
from tests.redis_cluster import RedisCluster  # noqa: E402
from tests.redis_server import RedisServer  # noqa: E402
from tianwang.distributed.bloom import BloomShape  # noqa: E402
from tianwang.distributed.redisfrontier import Push, RedisFrontier  # noqa: E402
from tianwang.testweb.launcher import TestWebProcess, write_seeds  # noqa: E402
from tianwang.testweb.model import SyntheticWeb  # noqa: E402

_jobs = itertools.count()


def redis_settings(server: RedisServer | RedisCluster, node: str = "node0") -> dict[str, str]:
    """A new job's settings on a redis-server or a cluster."""
    settings = {
        "TIANWANG_REDIS_URL": server.url,
        "TIANWANG_REDIS_JOB": f"bench{os.getpid()}-{next(_jobs)}",
        "TIANWANG_NODE_NAME": node,
    }
    if isinstance(server, RedisCluster):
        settings["TIANWANG_REDIS_CLUSTER"] = "True"
    return settings


def one_node_vs_local(server: RedisServer, hosts: int, pages: int, rounds: int,
                      latency: float = 0.0, spread: float = 0.0) -> tuple[float, dict[str, float]]:
    """The ratio of median pages/s, one Redis node over a local crawl, and the medians."""
    return one_node_vs("local", {"local": None, "redis": server}, hosts, pages, rounds,
                       latency, spread)


def one_node_vs(base: str, backends: dict[str, RedisServer | RedisCluster | None], hosts: int,
                pages: int, rounds: int, latency: float = 0.0,
                spread: float = 0.0) -> tuple[float, dict[str, float]]:
    """Median pages/s of one node on each backend (None: local), rounds alternating the
    order; the ratio of the other one over `base`, and the same of CPU a page."""
    runs: dict[str, list[float]] = {kind: [] for kind in backends}
    cpu: dict[str, list[float]] = {kind: [] for kind in backends}
    web_args = ("--latency", str(latency), "--latency-spread", str(spread)) if latency else ()
    with tempfile.TemporaryDirectory() as tmp, \
            TestWebProcess(1, hosts, pages, extra_args=web_args) as web:
        seeds = write_seeds(Path(tmp) / "seeds.txt", SyntheticWeb(1, hosts, pages).homepages())
        run_crawl("site", web.address, seeds, Path(tmp))  # warm-up: the server builds its hosts
        for round_no in range(1, rounds + 1):
            kinds = list(backends) if round_no % 2 else list(backends)[::-1]
            for kind in kinds:
                server = backends[kind]
                extra = redis_settings(server) if server is not None else {}
                with tempfile.TemporaryDirectory(dir=tmp) as workdir:
                    stats = run_crawl("site", web.address, seeds, Path(workdir), extra)
                runs[kind].append(rate(stats))
                cpu[kind].append(cpu_per_1000(stats))
                print(
                    f"round {round_no} {kind:7s}: {stats['response_received_count']} responses, "
                    f"{stats.get('tianwang/storage/records')} stored, "
                    f"{stats['elapsed_time_seconds']:.1f} s, {rate(stats):.1f} pages/s, "
                    f"{cpu_per_1000(stats):.2f} CPU s a 1000 pages",
                    flush=True,
                )
    medians = {kind: statistics.median(values) for kind, values in runs.items()}
    other = next(kind for kind in backends if kind != base)
    ratio = medians[other] / medians[base]
    goal = 1.0 if base == "local" else 0.9  # a cluster's node against a server's: 0.9
    print(
        f"median {base} {medians[base]:.1f} pages/s, one node on {other} {medians[other]:.1f}"
        f" pages/s: ratio {ratio:.3f} (goal >= {goal})"
    )
    # Each round's pair, run one after the other: the machine's drift over a run cancels.
    paired = [node / local for node, local in zip(runs[other], runs[base], strict=True)]
    print(f"each round's {other} / {base}: median {statistics.median(paired):.3f}, mean "
          f"{statistics.mean(paired):.3f}, {sum(r >= goal for r in paired)} of {len(paired)} "
          f">= {goal}")
    cpus = {kind: statistics.median(values) for kind, values in cpu.items()}
    print(f"median CPU s a 1000 pages: {base} {cpus[base]:.2f}, {other} {cpus[other]:.2f}: "
          f"{other} / {base} {cpus[other] / cpus[base]:.3f}")
    return ratio, medians


def nodes_crawl(
    server: RedisServer | RedisCluster, web: TestWebProcess, seeds: Path, workdir: Path,
    nodes: int, polite: dict,
) -> tuple[list[int], float]:
    """Responses of each node and the wall time from the first start to the last end."""
    shared = redis_settings(server)
    procs, stats_files = [], []
    started = time.monotonic()
    for i in range(nodes):
        settings = {
            **COMMON,
            **polite,
            **shared,
            "TIANWANG_NODE_NAME": f"node{i}",
            "TIANWANG_PROXY": web.address,
            "TIANWANG_DATA_DIR": str(workdir / f"data{i}"),
            "BENCH_STATS_FILE": str(workdir / f"stats{i}.json"),
            # No node takes a request before all have joined: no bucket moves mid-crawl.
            "TIANWANG_REDIS_QUORUM": str(nodes),
        }
        command = [sys.executable, "-m", "scrapy", "crawl", "site"]
        if i == nodes - 1:
            command += ["-a", f"seeds={seeds}"]
        for key, value in settings.items():
            command += ["-s", f"{key}={value}"]
        env = {**os.environ, "PYTHONPATH": str(ROOT), "SCRAPY_SETTINGS_MODULE": "tianwang.settings"}
        env.pop("http_proxy", None)
        procs.append(subprocess.Popen(command, cwd=workdir, env=env))
        stats_files.append(workdir / f"stats{i}.json")
    for proc in procs:
        if proc.wait() != 0:
            raise SystemExit(f"a node failed: exit {proc.returncode}")
    wall = time.monotonic() - started
    responses = [
        json.loads(path.read_text())["response_received_count"] for path in stats_files
    ]
    return responses, wall


def n_nodes_vs_one(backends: dict[str, RedisServer | RedisCluster], hosts: int, pages: int,
                   delay: float, counts: list[int], latency: float = 0.0,
                   concurrency: int = 16, per_node: bool = False) -> dict[str, dict[int, float]]:
    """pages/s of each count of nodes on each backend, and its ratio to one node's.

    per_node: N nodes crawl N x `hosts` hosts (the first of one web of max(counts) x hosts),
    so that every crawl lasts about as long and its ramp-up and tail weigh the same; else
    every count crawls the same `hosts`.
    """
    polite = {
        "CONCURRENT_REQUESTS": str(concurrency),
        "CONCURRENT_REQUESTS_PER_DOMAIN": "1",
        "DOWNLOAD_DELAY": str(delay),
    }
    rates: dict[str, dict[int, float]] = {kind: {} for kind in backends}
    steady: dict[str, dict[int, float]] = {kind: {} for kind in backends}
    served_hosts = hosts * max(counts) if per_node else hosts
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "access.jsonl"
        log.touch()
        web = TestWebProcess(2, served_hosts, pages, access_log=log,
                             extra_args=("--latency", str(latency)))
        homepages = SyntheticWeb(2, served_hosts, pages).homepages()
        with web:
            for nodes in counts:
                crawled = homepages[: hosts * nodes] if per_node else homepages
                seeds = write_seeds(Path(tmp) / f"seeds{nodes}.txt", crawled)
                for kind, server in backends.items():
                    served = len(log.read_text().splitlines())
                    with tempfile.TemporaryDirectory(dir=tmp) as workdir:
                        each, wall = nodes_crawl(server, web, seeds, Path(workdir), nodes,
                                                 polite)
                    count, span, middle = serving_span(log, served)
                    rates[kind][nodes] = count / span
                    steady[kind][nodes] = middle
                    responses = sum(each)
                    # The crawl ends with its busiest node: a hash partition is even only
                    # on average.
                    busiest = max(each) / (responses / nodes)
                    print(
                        f"{kind}, {nodes} node(s), {len(crawled)} hosts: {responses} responses "
                        f"(the busiest node {busiest:.3f} x the mean) "
                        f"in {wall:.1f} s wall ({responses / wall:.1f} pages/s); served {count} "
                        f"in {span:.1f} s from the first request to the last: "
                        f"{count / span:.1f} pages/s; the middle 80% at {middle:.1f} pages/s",
                        flush=True,
                    )
    for name, table in (("whole span", rates), ("middle 80%", steady)):
        for kind, by_count in table.items():
            one = by_count.get(1)
            if one:
                print(f"{kind}, {name}: " + ", ".join(
                    f"{n} nodes / one {r / one:.2f} (goal >= {0.9 * n:.1f})"
                    for n, r in by_count.items() if n > 1))
    web_size = f"{hosts} hosts a node" if per_node else f"{hosts} hosts"
    print(f"({polite}, {web_size}, up to {pages} pages a host, answers {latency} s after the "
          "request; ratios of the serving-span rates)")
    return rates


def serving_span(log: Path, start: int) -> tuple[int, float, float]:
    """Requests the web served since line `start` of its access log, the seconds from the
    first to the last (the crawl without the nodes' start-up and close), and the rate of the
    middle 80% of them (without the ramp-up and the last hosts' tail either)."""
    times = sorted(json.loads(line)["time"] for line in log.read_text().splitlines()[start:])
    low, high = len(times) // 10, len(times) * 9 // 10
    middle = (high - low) / max(times[high] - times[low], 1e-9)
    return len(times), times[-1] - times[0], middle


def bloom_memory(server: RedisServer, fill: int) -> None:
    asyncio.run(_bloom_memory(server, fill))


async def _bloom_memory(server: RedisServer, fill: int) -> None:
    client = redis.Redis.from_url(server.url)  # the bench's own reads
    expected = 10_000_000
    shape = BloomShape.for_capacity(expected, 1e-6)
    frontier = RedisFrontier(redis.asyncio.Redis.from_url(server.url), f"bloom{os.getpid()}",
                             "n", 1024, shape)
    await frontier.heartbeat(60)
    started = time.monotonic()
    batch: list[Push] = []
    for i in range(fill):
        fingerprint = hashlib.sha1(f"http://h{i % 5000}.example.com/p{i}".encode()).digest()
        batch.append(Push(0, 5, 0, b"", fingerprint))
        if len(batch) == 1000:
            await frontier.push(batch)
            batch = []
    await frontier.push(batch)
    await frontier.close()
    pushed = time.monotonic() - started
    bloom_bytes = sum(
        client.memory_usage(frontier.key(f"bloom:{seg}")) or 0 for seg in range(shape.segments)
    )
    client.delete(frontier.key("req"), frontier.key("q:n"))
    print(
        f"Bloom for {expected:,} urls at 1e-6: m = {shape.bits:,} bits, k = {shape.hashes}; "
        f"Redis MEMORY USAGE {bloom_bytes:,} bytes = {bloom_bytes / expected:.2f} bytes/url "
        f"(filled with {fill:,} urls through the push script: {fill / pushed:,.0f} urls/s)"
    )
    key = f"bench:fingerprints:{os.getpid()}"
    with client.pipeline(transaction=False) as pipe:
        for i in range(fill):
            pipe.sadd(key, hashlib.sha1(f"u{i}".encode()).hexdigest())
            if i % 10_000 == 9_999:
                pipe.execute()
        pipe.execute()
    set_bytes = client.memory_usage(key) or 0
    client.delete(key)
    print(
        f"scrapy-redis's fingerprint set: {set_bytes:,} bytes for {fill:,} = "
        f"{set_bytes / fill:.1f} bytes/url ({set_bytes / fill * expected / 1e6:,.0f} MB at "
        f"{expected:,})"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=300)
    parser.add_argument("--pages", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--latency", type=float, default=0.0,
                        help="the ratio's test web answers this long after each request")
    parser.add_argument("--latency-spread", type=float, default=0.0,
                        help="each answer's wait drawn within --latency x (1 +- this)")
    parser.add_argument("--scale-hosts", type=int, default=1000)
    parser.add_argument("--scale-pages", type=int, default=4)
    parser.add_argument("--scale-delay", type=float, default=0.5)
    parser.add_argument("--scale-latency", type=float, default=0.0,
                        help="the test web answers this long after each request")
    parser.add_argument("--scale-concurrency", type=int, default=16,
                        help="CONCURRENT_REQUESTS of each node")
    parser.add_argument("--scale-per-node", action="store_true",
                        help="N nodes crawl N x --scale-hosts hosts (else all the same hosts)")
    parser.add_argument("--nodes", default="1,2", help="node counts of the scaling runs")
    parser.add_argument("--cluster", action="store_true",
                        help="also on a Redis Cluster of 3 masters and 3 replicas")
    parser.add_argument("--bloom-urls", type=int, default=200_000)
    parser.add_argument("--only", choices=("ratio", "cluster", "scale", "bloom"))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        server = RedisServer(Path(tmp) / "redis").start()
        cluster = RedisCluster(Path(tmp) / "cluster").start() if args.cluster else None
        backends: dict[str, RedisServer | RedisCluster] = {"server": server}
        if cluster is not None:
            backends["cluster"] = cluster
        try:
            if args.only in (None, "ratio"):
                one_node_vs_local(server, args.hosts, args.pages, args.rounds, args.latency,
                                  args.latency_spread)
            if args.only in (None, "cluster") and cluster is not None:
                one_node_vs("server", backends, args.hosts, args.pages, args.rounds,
                            args.latency, args.latency_spread)
            if args.only in (None, "scale"):
                counts = [int(n) for n in args.nodes.split(",")]
                n_nodes_vs_one(backends, args.scale_hosts, args.scale_pages, args.scale_delay,
                               counts, args.scale_latency, args.scale_concurrency,
                               args.scale_per_node)
            if args.only in (None, "bloom"):
                bloom_memory(server, args.bloom_urls)
        finally:
            server.stop()
            if cluster is not None:
                cluster.stop()
    print(f"machine: {os.cpu_count()} cores, python {sys.version.split()[0]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
