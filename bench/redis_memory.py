"""Redis memory of the shared crawl: bytes per pending request and per seen url.

    python bench/redis_memory.py [--pending 1000000] [--expected 10000000] [--hosts 10000]
        [--window 100000] [--pairs DIR]

Pushes --pending requests of the `site` spider's shape (a url, its parent url, its link count
and depth: encoded as the Redis scheduler encodes them, each with its link's share) through
the frontier's own push script, in batches of 1,000 as a node sends them, into a
redis-server of its own, keeping the node's queue within --window as its heartbeat would
(every 100 batches: about every 6 s of pushing); then takes and acks them all, as a crawl
that fetched them would. Prints Redis's used_memory per pending request (the Bloom filter
apart), the share of each key, and what stays per seen url once they are done. The Bloom
filter is sized for --expected urls at 1e-6 and counted apart: it is allocated whole,
whatever the fill.

The urls: by default made up (10,000 hosts, a path with a random part, a parent in the same
host); with --pairs, the real (page, link) pairs of a crawl's link graph in the format of
the UCI graph (pages.tsv and outlinks_all.tsv.gz): each url linked once, shuffled, a
pending request whose parent is a page linking it, and made new with a "?v=<round>" once
they run out. Packed
requests are compressed, so their size depends on the urls: say which were used.
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import hashlib
import random
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import redis
import redis.asyncio
from scrapy import Request

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.redis_server import RedisServer  # noqa: E402
from tianwang import default_settings, meta  # noqa: E402
from tianwang.distributed.bloom import BloomShape  # noqa: E402
from tianwang.distributed.mapping import bucket_of  # noqa: E402
from tianwang.distributed.redisfrontier import Push, RedisFrontier  # noqa: E402
from tianwang.distributed.schema import decode, encode  # noqa: E402
from tianwang.spiders.site import SiteSpider  # noqa: E402

BATCH = 1000
BUCKETS = 1024
HEARTBEAT = 100  # batches between two window() calls


def made_up_pairs(hosts: int) -> Iterator[tuple[str, str]]:
    """(parent, url) pairs: a host, a section, a random directory, a numbered page."""
    rng = random.Random(1)
    for i in range(10**12):
        host = f"www.host{rng.randrange(hosts)}.edu.cn"
        section = ("news", "about", "research", "people", "events")[rng.randrange(5)]
        url = f"http://{host}/{section}/{rng.getrandbits(32):08x}/page{i}.html"
        yield f"http://{host}/{section}/index{rng.randrange(50)}.html", url


def real_pairs(folder: Path) -> Iterator[tuple[str, str]]:
    """(page url, link url) pairs of a crawl's graph, shuffled, over and over."""
    pages = {}
    with open(folder / "pages.tsv", encoding="utf-8") as lines:
        next(lines)
        for line in lines:
            ident, url, _host = line.rstrip("\n").split("\t")
            pages[ident] = url
    with gzip.open(folder / "outlinks_all.tsv.gz", "rt", encoding="utf-8") as lines:
        next(lines)
        links = dict((dst, pages.get(src, "")) for src, dst in
                     (line.rstrip("\n").split("\t", 1) for line in lines))
    pairs = [(parent, url) for url, parent in links.items()]  # each url once a round
    random.Random(1).shuffle(pairs)
    for round_ in range(10**9):
        for parent, url in pairs:
            if round_:
                url += f"{'&' if '?' in url else '?'}v={round_}"
            yield parent, url


def request_of(pairs: Iterator[tuple[str, str]], spider: SiteSpider) -> Request:
    """The next pair's link as the site spider requests it (links that are no url skipped,
    as the spider skips them)."""
    for parent, url in pairs:
        if not url.startswith(("http://", "https://")):
            continue
        try:
            return Request(url, callback=spider.parse, meta={
                meta.PARENT: parent, meta.OUTLINKS: 37, "depth": 3})
        except ValueError:
            continue
    raise AssertionError("unreachable: the pairs never end")


def push_of(request: Request, spider: SiteSpider) -> Push:
    """The request as a node pushes it (the schema's bytes): its host's bucket, weight 5
    before its cash, a share of 1/37."""
    host = urlsplit(request.url).hostname or ""
    fingerprint = hashlib.sha1(request.url.encode()).digest()
    return Push(bucket_of(host, BUCKETS), 5, 0, encode(request, spider), fingerprint, host,
                share=1 / 37)


def used(client: redis.Redis) -> int:
    return int(client.info("memory")["used_memory"])


def key_sizes(client: redis.Redis, frontier: RedisFrontier) -> dict[str, int]:
    """MEMORY USAGE of each key kind (a blocking client: the bench's own reads)."""
    sizes = {name: client.memory_usage(frontier.key(name), samples=0) or 0
             for name in ("req", "q:n", "chunks", "turns")}
    sizes["link"] = sum(client.memory_usage(key, samples=0) or 0
                        for key in client.scan_iter(frontier.key("link:*"), count=1000))
    return sizes


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pending", type=int, default=1_000_000)
    parser.add_argument("--expected", type=int, default=10_000_000)
    parser.add_argument("--hosts", type=int, default=10_000)
    parser.add_argument("--window", type=int, default=default_settings.TIANWANG_REDIS_WINDOW)
    parser.add_argument("--pairs", type=Path, help="a link graph's folder (UCI format)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        server = RedisServer(Path(tmp) / "redis").start()
        try:
            asyncio.run(measure(args, server))
        finally:
            server.stop()
    return 0


async def measure(args: argparse.Namespace, server: RedisServer) -> None:
    spider = SiteSpider.__new__(SiteSpider)  # only its parse method's name is encoded
    pairs = real_pairs(args.pairs) if args.pairs else made_up_pairs(args.hosts)
    client = redis.Redis.from_url(server.url)  # the bench's own reads
    client.config_set("appendonly", "no")  # memory, not the disk, is measured
    shape = BloomShape.for_capacity(args.expected, 1e-6)
    frontier = RedisFrontier(redis.asyncio.Redis.from_url(server.url), "mem", "n", BUCKETS,
                             shape, link_weight=0.75)
    await frontier.load_scripts()
    await frontier.heartbeat(3600)
    start = used(client)
    began = time.monotonic()
    new = sent = blob_bytes = url_bytes = packed = batches = 0
    while new < args.pending:  # the urls pushed twice (real links) count once
        pushes = []
        for _ in range(min(BATCH, args.pending - new)):
            request = request_of(pairs, spider)
            pushes.append(push_of(request, spider))
            url_bytes += len(request.url)
            blob_bytes += len(pushes[-1].blob)
        sent += len(pushes)
        new += sum(await frontier.push(pushes))
        batches += 1
        if batches % HEARTBEAT == 0 or new == args.pending:
            packed += (await frontier.window(args.window)).packed
    pushed = time.monotonic() - began
    bloom = sum(client.memory_usage(frontier.key(f"bloom:{seg}"), samples=0) or 0
                for seg in range(shape.segments))
    pending = used(client) - start - bloom
    n = args.pending
    source = f"urls of {args.pairs}" if args.pairs else "made-up urls"
    print(f"{n:,} pending requests ({source}: "
          f"{url_bytes / sent:.0f} bytes a url, {blob_bytes / sent:.0f} encoded), "
          f"{sent:,} pushed at {sent / pushed:,.0f}/s with the window kept; window "
          f"{args.window:,}: {packed:,} packed")
    print(f"used_memory per pending request, Bloom apart: {pending / n:.1f} bytes")
    for name, size in key_sizes(client, frontier).items():
        print(f"  {name:7s} {size / n:7.1f} bytes a request")
    print(f"Bloom filter for {args.expected:,} urls at 1e-6: {bloom:,} bytes = "
          f"{bloom / args.expected:.2f} bytes a url")
    takes = 0
    while True:  # acked as a node does, with link keys; the window kept as it does
        taken = await frontier.take(BATCH, 0)
        takes += 1
        if len(taken) < BATCH or takes % HEARTBEAT == 0:
            window = await frontier.window(args.window)
            if not taken and not window.unpacked:
                break
        urls = [decode(t.blob, spider).url for t in taken]
        keys = [frontier.link_key(hashlib.sha1(url.encode()).digest()) for url in urls]
        await frontier.ack([t.member for t in taken], keys)
    seen = used(client) - start - bloom
    print(f"all taken and acked: {seen / n:.1f} bytes a seen url stay "
          f"(the Bloom filter apart)")
    await frontier.close()


if __name__ == "__main__":
    sys.exit(main())
