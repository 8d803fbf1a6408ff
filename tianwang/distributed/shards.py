"""A shared crawl's keys split into shards, so that a Redis Cluster spreads one job over its
masters (docs/design.md section 10). No Scrapy import here.

A job has a home, ``tianwang:{<job>}:``, for what is the job's as a whole (its nodes and their
leases of life, the feed, the seed flag, the nodes still starting, the shard list), and one or
more shards ``tianwang:{<tag>}:``, each holding everything of its buckets: their requests,
queues, leases, Bloom filter bits, link entries, host turns and packed chunks. Bucket b's keys
are in shard b mod G. A url's bucket is its host's, so a push, a take, an ack each touch one
shard, one hash slot: one script call. The stored pages' MD5 claims are split by the MD5
itself.

One shard (the default on one redis-server) has the job's name as its tag: the shard is the
home, the layout a job had before shards. On a cluster the first node to start chooses one
shard per master, each tag searched so that its slot falls in that master's slots, and writes
the list in the home; every later node reads it from there, so the nodes of a job always agree.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from redis.crc import REDIS_CLUSTER_HASH_SLOTS, key_slot

SHARDS_KEY = "shards"  # in the home: the shards' tags, comma-separated
SEARCH_LIMIT = 1_000_000  # tags tried for a slot range before taking any slot


def prefix_of(tag: str) -> str:
    """The prefix of every key under a hash tag."""
    return f"tianwang:{{{tag}}}:"


def shard_of(bucket: int, count: int) -> int:
    return bucket % count


def md5_shard(md5: bytes, count: int) -> int:
    """The shard of a stored body's MD5 claim: its first four bytes, spread evenly."""
    return int.from_bytes(md5[:4], "big") % count


def tags_for(job: str, ranges: Sequence[tuple[int, int]]) -> list[str]:
    """One tag per slot range (a master's), whose slot falls in it: "<job>:<i>.<n>", n the
    first that does. One range or none: the job's name, its shard the home."""
    if len(ranges) <= 1:
        return [job]
    tags = []
    for i, (low, high) in enumerate(ranges):
        for n in range(SEARCH_LIMIT):
            tag = f"{job}:{i}.{n}"
            if low <= key_slot(prefix_of(tag).encode()) <= high:
                break
        tags.append(tag)
    return tags


def even_ranges(count: int) -> list[tuple[int, int]]:
    """count equal slot ranges: where shards go on a cluster that splits its slots evenly
    (redis-cli --cluster create does), or any spread on one redis-server."""
    bounds = [i * REDIS_CLUSTER_HASH_SLOTS // count for i in range(count + 1)]
    return [(bounds[i], bounds[i + 1] - 1) for i in range(count)]


def split_take(count: int, queued: Sequence[int]) -> list[int]:
    """How many of count to take from each shard: in proportion to what this node has queued
    in each (largest remainders first); evenly while none is known to hold any."""
    weights = list(queued) if any(queued) else [1] * len(queued)
    total = sum(weights)
    shares = [count * w / total for w in weights]
    counts = [int(share) for share in shares]
    by_remainder = sorted(range(len(shares)), key=lambda i: counts[i] - shares[i])
    for i in by_remainder[:count - sum(counts)]:
        counts[i] += 1
    return counts


def wanted_ranges(
    configured: int, masters: Sequence[tuple[int, int]] | None,
) -> list[tuple[int, int]]:
    """The slot range each shard's tag should fall in: configured shards (0: one per master
    on a cluster, one on a redis-server), taken round the masters' ranges (masters: None on
    a redis-server, where any spread does)."""
    if masters:
        count = configured or len(masters)
        return [masters[i % len(masters)] for i in range(count)]
    return even_ranges(configured or 1)


def stored_tags(home: Any, job: str) -> list[str] | None:
    """The job's shard tags as its home (a redis client) lists them; None if it lists none."""
    stored = home.get(prefix_of(job) + SHARDS_KEY)
    return stored.decode().split(",") if stored is not None else None


def agree_tags(home: Any, job: str, wanted: list[str]) -> list[str]:
    """The job's shard tags: those its first node wrote in its home (a redis client), else
    `wanted`, written there now. A job begun before shards has one, its home."""
    tags = stored_tags(home, job)
    if tags is None:
        if home.exists(prefix_of(job) + "seq"):  # a job begun before shards
            wanted = [job]
        home.set(prefix_of(job) + SHARDS_KEY, ",".join(wanted), nx=True)
        tags = stored_tags(home, job)
    return tags
