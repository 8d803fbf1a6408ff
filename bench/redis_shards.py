"""A job on a Redis Cluster in one shard against the same job split into one shard per master.

    python bench/redis_shards.py [--requests 200000] [--hosts 5000] [--clients 2]
        [--shards 1,3]

Starts a Redis Cluster of 3 masters and 3 replicas on loopback ports (as the tests do), and for
each shard count runs --clients processes, each a node of one job, which push --requests
requests of --hosts hosts in batches of 64 (TIANWANG_REDIS_BATCH), and take and ack them as a
crawl does: one sync a batch (push the new, ack the last batch's, take a batch), through the
frontier the Redis scheduler opens (open_frontier, the stack's default settings), waiting
for the replica (WAIT) as a node on a cluster does.

Prints, per shard count: requests a second over all clients, syncs made,
the Redis CPU seconds of each master (INFO cpu, user + sys, before and after), and the busiest
master's share. What a job can grow to is bounded by its busiest master: the ratio of the
busiest master's CPU per request in one shard to that in N is how much more a cluster of N
masters carries of one job. The clients' own rate on this machine says what the extra round
trips cost a node.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import multiprocessing
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import redis  # noqa: E402
from scrapy.settings import Settings  # noqa: E402

from tests.redis_cluster import RedisCluster  # noqa: E402
from tianwang import default_settings  # noqa: E402
from tianwang.config.frontier import FrontierConfig  # noqa: E402
from tianwang.config.shared_crawl import RedisConfig  # noqa: E402
from tianwang.distributed.mapping import bucket_of  # noqa: E402
from tianwang.distributed.redisfrontier import Push  # noqa: E402
from tianwang.distributed.redisscheduler import open_frontier  # noqa: E402
from tianwang.distributed.shardedfrontier import ShardedFrontier  # noqa: E402

BATCH = 64  # TIANWANG_REDIS_BATCH


def frontier_of(url: str, job: str, node: str, shards: int) -> ShardedFrontier:
    """A node's frontier as the Redis scheduler opens it on a cluster, the stack's defaults
    otherwise (host turns and first requests, link relations, the Bloom filter's size)."""
    settings = Settings()
    settings.setmodule(default_settings)
    settings.setdict({"TIANWANG_REDIS_URL": url, "TIANWANG_REDIS_JOB": job,
                      "TIANWANG_NODE_NAME": node, "TIANWANG_REDIS_CLUSTER": True,
                      "TIANWANG_REDIS_SHARDS": shards})
    return open_frontier(RedisConfig.from_settings(settings),
                         FrontierConfig.from_settings(settings))


def client(url: str, job: str, shards: int, index: int, requests: int, hosts: int,
           start: float, out: multiprocessing.Queue) -> None:
    out.put(asyncio.run(drive(url, job, shards, index, requests, hosts, start)))


async def drive(url: str, job: str, shards: int, index: int, requests: int, hosts: int,
                start: float) -> tuple[float, int]:
    """One client's pushes, takes and acks, as a node's round trips make them."""
    frontier = frontier_of(url, job, f"node{index}", shards)
    await frontier.load_scripts()
    await frontier.heartbeat(600)
    while time.time() < start:  # every client's heartbeat in before any push
        await asyncio.sleep(0.01)
    await frontier.heartbeat(600)
    syncs = 0
    done: list[tuple[str, str]] = []
    began = time.perf_counter()
    for first in range(0, requests, BATCH):
        pushes = []
        for i in range(first, min(first + BATCH, requests)):
            host = f"www.h{(i * 7919 + index) % hosts}.example.com"
            url_ = f"http://{host}/c{index}/p{i}.html"
            fingerprint = hashlib.sha1(url_.encode()).digest()
            pushes.append(Push(bucket_of(host, frontier.buckets), 5, 0, url_.encode(), fingerprint,
                               host, False, host))
        _flags, taken = await frontier.sync(pushes, done, BATCH, 0)
        done = [(t.member, "") for t in taken]
        syncs += 1
    while done:
        _flags, taken = await frontier.sync((), done, BATCH, 0)
        done = [(t.member, "") for t in taken]
        syncs += 1
    elapsed = time.perf_counter() - began
    await frontier.close()
    return elapsed, syncs


def master_cpu(cluster: RedisCluster) -> dict[int, float]:
    seconds = {}
    for port in cluster.live_ports():
        with redis.Redis(port=port) as node:
            if node.info("replication")["role"] != "master":
                continue
            cpu = node.info("cpu")
            seconds[port] = cpu["used_cpu_user"] + cpu["used_cpu_sys"]
    return seconds


def run(cluster: RedisCluster, shards: int, args: argparse.Namespace) -> dict[str, float]:
    job = f"bench{int(time.time())}s{shards}"
    out: multiprocessing.Queue = multiprocessing.Queue()
    before = master_cpu(cluster)
    start = time.time() + 3
    procs = [multiprocessing.Process(target=client, args=(cluster.url, job, shards, i,
                                                          args.requests, args.hosts, start, out))
             for i in range(args.clients)]
    wall = time.perf_counter()
    for proc in procs:
        proc.start()
    results = [out.get() for _ in procs]
    for proc in procs:
        proc.join()
    wall = time.perf_counter() - wall - 3
    after = master_cpu(cluster)
    cpu = {port: after[port] - before.get(port, 0.0) for port in after}
    total = args.requests * args.clients
    slowest = max(seconds for seconds, _syncs in results)
    busiest = max(cpu.values())
    print(f"{shards} shard(s): {total:,} requests pushed, taken and acked by {args.clients} "
          f"clients in {slowest:.1f} s: {total / slowest:,.0f} requests/s; "
          f"{sum(s for _t, s in results):,} syncs", flush=True)
    print("  master CPU s: " + ", ".join(f"{port} {seconds:.2f}" for port, seconds in cpu.items())
          + f"; busiest {busiest:.2f} ({busiest / sum(cpu.values()):.0%} of "
          f"{sum(cpu.values()):.2f}); {busiest / total * 1e6:.1f} us a request", flush=True)
    return {"rate": total / slowest, "busiest_us": busiest / total * 1e6}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=200_000, help="per client")
    parser.add_argument("--hosts", type=int, default=5_000)
    parser.add_argument("--clients", type=int, default=2)
    parser.add_argument("--shards", default="1,3")
    args = parser.parse_args()
    counts = [int(n) for n in args.shards.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        cluster = RedisCluster(Path(tmp) / "cluster").start()
        try:
            results = {n: run(cluster, n, args) for n in counts}
        finally:
            cluster.stop()
    base = results[counts[0]]
    for n in counts[1:]:
        print(f"{n} shards / {counts[0]}: busiest master's CPU a request "
              f"{base['busiest_us'] / results[n]['busiest_us']:.2f}x less (what one job can "
              f"grow to); clients' rate {results[n]['rate'] / base['rate']:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
