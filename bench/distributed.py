"""The distributed crawl (issue 7): Redis mode against local, two nodes against one, Bloom memory.

    python bench/distributed.py [--hosts 300] [--pages 20] [--rounds 5]
                                [--scale-hosts 1000] [--scale-pages 4] [--scale-delay 0.5]
                                [--bloom-urls 200000] [--only ratio|scale|bloom]

1. One node in Redis mode against a local crawl of the same test web, in the same run, rounds
   alternating which goes first; the ratio of median pages/s (goal >= 0.9).
2. Two nodes against one node (both Redis mode) on a politer crawl of a bigger web, which one
   node takes about a minute to crawl: pages/s over the wall time from the first node's start
   to the last node's end.
3. Bloom memory per url for 10 million urls at 1e-6: Redis's own MEMORY USAGE of the bitmap
   sized for them (the whole bitmap is allocated once its high bits are set), filled with
   --bloom-urls urls through the frontier's push script, against scrapy-redis's set of 40-hex
   fingerprints measured the same way.

A redis-server (Debian's, installed if missing, as the tests do) runs on a free loopback port.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
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

from bench.crawl import COMMON, rate, run_crawl  # noqa: E402
from tests.redis_server import RedisServer  # noqa: E402
from tianwang.distributed.bloom import BloomShape  # noqa: E402
from tianwang.distributed.redisfrontier import Push, RedisFrontier  # noqa: E402
from tianwang.testweb.launcher import TestWebProcess, write_seeds  # noqa: E402
from tianwang.testweb.model import SyntheticWeb  # noqa: E402

_jobs = itertools.count()


def redis_settings(server: RedisServer, node: str = "node0") -> dict[str, str]:
    return {
        "TIANWANG_REDIS_URL": server.url,
        "TIANWANG_REDIS_JOB": f"bench{os.getpid()}-{next(_jobs)}",
        "TIANWANG_NODE_NAME": node,
    }


def one_node_vs_local(server: RedisServer, hosts: int, pages: int,
                      rounds: int) -> tuple[float, dict[str, float]]:
    """The ratio of median pages/s, one Redis node over a local crawl, and the medians."""
    runs: dict[str, list[float]] = {"local": [], "redis": []}
    with tempfile.TemporaryDirectory() as tmp, TestWebProcess(1, hosts, pages) as web:
        seeds = write_seeds(Path(tmp) / "seeds.txt", SyntheticWeb(1, hosts, pages).homepages())
        run_crawl("site", web.address, seeds, Path(tmp))  # warm-up: the server builds its hosts
        for round_no in range(1, rounds + 1):
            kinds = ("local", "redis") if round_no % 2 else ("redis", "local")
            for kind in kinds:
                extra = redis_settings(server) if kind == "redis" else {}
                with tempfile.TemporaryDirectory(dir=tmp) as workdir:
                    stats = run_crawl("site", web.address, seeds, Path(workdir), extra)
                runs[kind].append(rate(stats))
                print(
                    f"round {round_no} {kind:5s}: {stats['response_received_count']} responses, "
                    f"{stats.get('tianwang/storage/records')} stored, "
                    f"{stats['elapsed_time_seconds']:.1f} s, {rate(stats):.1f} pages/s",
                    flush=True,
                )
    medians = {kind: statistics.median(values) for kind, values in runs.items()}
    ratio = medians["redis"] / medians["local"]
    print(
        f"median local {medians['local']:.1f} pages/s, one Redis node {medians['redis']:.1f}"
        f" pages/s: ratio {ratio:.3f} (goal >= 0.9)"
    )
    return ratio, medians


def nodes_crawl(
    server: RedisServer, web: TestWebProcess, seeds: Path, workdir: Path, nodes: int, polite: dict
) -> tuple[int, float]:
    """Responses of all nodes and the wall time from the first start to the last end."""
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
    import json

    responses = sum(
        json.loads(path.read_text())["response_received_count"] for path in stats_files
    )
    return responses, wall


def two_nodes_vs_one(server: RedisServer, hosts: int, pages: int, delay: float) -> float:
    polite = {
        "CONCURRENT_REQUESTS": "16",
        "CONCURRENT_REQUESTS_PER_DOMAIN": "1",
        "DOWNLOAD_DELAY": str(delay),
    }
    rates = {}
    with tempfile.TemporaryDirectory() as tmp, TestWebProcess(2, hosts, pages) as web:
        seeds = write_seeds(Path(tmp) / "seeds.txt", SyntheticWeb(2, hosts, pages).homepages())
        for nodes in (1, 2):
            with tempfile.TemporaryDirectory(dir=tmp) as workdir:
                responses, wall = nodes_crawl(server, web, seeds, Path(workdir), nodes, polite)
            rates[nodes] = responses / wall
            print(
                f"{nodes} node(s): {responses} responses in {wall:.1f} s wall, "
                f"{rates[nodes]:.1f} pages/s",
                flush=True,
            )
    ratio = rates[2] / rates[1]
    print(f"two nodes / one node: {ratio:.2f} ({polite}, {hosts} hosts x {pages} pages)")
    return ratio


def bloom_memory(server: RedisServer, fill: int) -> None:
    client = redis.Redis.from_url(server.url)
    expected = 10_000_000
    shape = BloomShape.for_capacity(expected, 1e-6)
    frontier = RedisFrontier(client, f"bloom{os.getpid()}", "n", 1024, shape)
    frontier.heartbeat(60)
    started = time.monotonic()
    batch: list[Push] = []
    for i in range(fill):
        fingerprint = hashlib.sha1(f"http://h{i % 5000}.example.com/p{i}".encode()).digest()
        batch.append(Push(0, 5, 0, b"", fingerprint))
        if len(batch) == 1000:
            frontier.push(batch)
            batch = []
    frontier.push(batch)
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
    parser.add_argument("--scale-hosts", type=int, default=1000)
    parser.add_argument("--scale-pages", type=int, default=4)
    parser.add_argument("--scale-delay", type=float, default=0.5)
    parser.add_argument("--bloom-urls", type=int, default=200_000)
    parser.add_argument("--only", choices=("ratio", "scale", "bloom"))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        server = RedisServer(Path(tmp) / "redis").start()
        try:
            if args.only in (None, "ratio"):
                one_node_vs_local(server, args.hosts, args.pages, args.rounds)
            if args.only in (None, "scale"):
                two_nodes_vs_one(server, args.scale_hosts, args.scale_pages, args.scale_delay)
            if args.only in (None, "bloom"):
                bloom_memory(server, args.bloom_urls)
        finally:
            server.stop()
    print(f"machine: {os.cpu_count()} cores, python {sys.version.split()[0]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
