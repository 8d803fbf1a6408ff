"""Redis memory of the shared crawl: bytes per pending request and per seen url.

    python bench/redis_memory.py [--pending 1000000] [--expected 10000000] [--hosts 10000]

Pushes --pending requests of the `site` spider's shape (a url of about 50 bytes, its parent
url, its link count and depth: encoded as the Redis scheduler encodes them, each with its
link's share) through the frontier's own push script, in batches of 1,000 as a node sends
them, into a redis-server of its own; then takes and acks them all, as a crawl that fetched
them would.
Prints Redis's used_memory per pending request (the Bloom filter apart), the share of each
key, and what stays per seen url once they are done. The Bloom filter is sized for
--expected urls at 1e-6 and counted apart: it is allocated whole, whatever the fill.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import tempfile
import time
from pathlib import Path

import redis
from scrapy import Request

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.redis_server import RedisServer  # noqa: E402
from tianwang import meta  # noqa: E402
from tianwang.distributed.bloom import BloomShape  # noqa: E402
from tianwang.distributed.mapping import bucket_of  # noqa: E402
from tianwang.distributed.redisfrontier import Push, RedisFrontier  # noqa: E402
from tianwang.frontier.codec import decode, encode  # noqa: E402
from tianwang.spiders.site import SiteSpider  # noqa: E402

BATCH = 1000
BUCKETS = 1024


def request_of(i: int, hosts: int, spider: SiteSpider) -> tuple[str, str, bytes]:
    """(host, url, encoded request) of the i-th pending request."""
    host = f"www.host{i % hosts}.edu.cn"
    url = f"http://{host}/news/{2000 + i % 20}/page{i}.html"
    request = Request(url, callback=spider.parse, meta={
        meta.PARENT: f"http://{host}/news/index{i % 50}.html", meta.OUTLINKS: 37, "depth": 3})
    return host, url, encode(request, spider)


def used(client: redis.Redis) -> int:
    return int(client.info("memory")["used_memory"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pending", type=int, default=1_000_000)
    parser.add_argument("--expected", type=int, default=10_000_000)
    parser.add_argument("--hosts", type=int, default=10_000)
    args = parser.parse_args()
    spider = SiteSpider.__new__(SiteSpider)  # only its parse method's name is encoded
    with tempfile.TemporaryDirectory() as tmp:
        server = RedisServer(Path(tmp) / "redis").start()
        try:
            client = redis.Redis.from_url(server.url)
            client.config_set("appendonly", "no")  # memory, not the disk, is measured
            shape = BloomShape.for_capacity(args.expected, 1e-6)
            frontier = RedisFrontier(client, "mem", "n", BUCKETS, shape, link_weight=0.75)
            frontier.load_scripts()
            frontier.heartbeat(3600)
            start = used(client)
            began = time.monotonic()
            pushes: list[Push] = []
            blob_bytes = 0
            for i in range(args.pending):
                host, url, blob = request_of(i, args.hosts, spider)
                blob_bytes += len(blob)
                fingerprint = hashlib.sha1(url.encode()).digest()
                pushes.append(Push(bucket_of(host, BUCKETS), 5, 0, blob, fingerprint, host,
                                   share=1 / 37))
                if len(pushes) == BATCH:
                    frontier.push(pushes)
                    pushes = []
            if pushes:
                frontier.push(pushes)
            pushed = time.monotonic() - began
            bloom = sum(client.memory_usage(frontier.key(f"bloom:{seg}"), samples=0) or 0
                        for seg in range(shape.segments))
            pending = used(client) - start - bloom
            keys = {name: client.memory_usage(frontier.key(name), samples=0) or 0
                    for name in ("req", "q:n", "turns")}
            keys["link"] = sum(client.memory_usage(key, samples=0) or 0
                               for key in client.scan_iter(frontier.key("link:*"), count=1000))
            print(f"{args.pending:,} pending requests ({blob_bytes / args.pending:.0f} bytes "
                  f"encoded each), pushed at {args.pending / pushed:,.0f}/s")
            print(f"used_memory per pending request, Bloom apart: {pending / args.pending:.1f} "
                  f"bytes")
            for name, size in keys.items():
                print(f"  {name:7s} {size / args.pending:7.1f} bytes a request")
            print(f"Bloom filter for {args.expected:,} urls at 1e-6: {bloom:,} bytes = "
                  f"{bloom / args.expected:.2f} bytes a url")
            while taken := frontier.take(BATCH, 0):  # acked as a node does, with link keys
                urls = [decode(t.blob, spider).url for t in taken]
                keys = [frontier.link_key(hashlib.sha1(url.encode()).digest()) for url in urls]
                frontier.ack([t.member for t in taken], keys)
            seen = used(client) - start - bloom
            print(f"all taken and acked: {seen / args.pending:.1f} bytes a seen url stay "
                  f"(the Bloom filter apart)")
        finally:
            server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
