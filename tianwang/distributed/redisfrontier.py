"""One shard of a shared crawl's frontier in Redis, as one node sees it (docs/design.md 10).

A job's keys live under ``tianwang:{<job>}:`` for a job of one shard, which is then also the
job's home; a job of several shards has one such prefix a shard (shards.py), and
shardedfrontier.py puts the shards together. What a shard holds is read in one module each,
along the seams Frontera's distributed backend draws:

- queues.py: the requests and the node's queue: push, take, ack, release, one pipeline a
  round trip; the score layout is tianwang/order.py's, the scripts lua/*.lua;
- marks.py: the stored marks, sent ahead of their acks;
- membership.py: heartbeat, bucket table, reaping the dead, leaving;
- window.py: a node's queue past its window, packed in chunks;
- this module: the job's start and end (``starting``, ``seeded``, ``feed``, the end check),
  and one object over the rest, for the scheduler (redisscheduler.py, whose state machine is
  nodestate.py).

Every change that must be atomic is one Lua script, and every script works on a batch, so a
node makes one round trip per batch. Scripts are idempotent where a retry after a lost reply
could repeat them (a push of a url already pushed is filtered by the Bloom filter; an ack of
an acked member does nothing). The client is redis.asyncio's: a Redis that stalls pauses the
frontier, never the downloads in flight. No Scrapy import here.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence
from typing import Any

from redis.asyncio.retry import Retry as AsyncRetry
from redis.backoff import NoBackoff
from redis.exceptions import RedisError

from tianwang import order
from tianwang.distributed.bloom import BloomShape
from tianwang.distributed.faults import REDIS_DOWN
from tianwang.distributed.membership import Members, Membership
from tianwang.distributed.queues import (
    Ordering,
    Push,
    ShardQueue,
    TakeCap,
    Taken,
    link_shards,
    unrank,
)
from tianwang.distributed.scripts import Scripts
from tianwang.distributed.shards import prefix_of
from tianwang.distributed.window import QueueWindow, Window

__all__ = ["REDIS_DOWN", "Membership", "Push", "RedisFrontier", "Taken", "Window",
           "job_prefix", "link_shards", "packed_requests", "table_size", "unrank",
           "weight_of_score"]

PROBE_TIMEOUT = 2.0  # the longest a probe of a Redis gone waits


def job_prefix(job: str) -> str:
    """The prefix of a job's home in Redis (and of its one shard, if it has one: shards.py)."""
    return prefix_of(job)


def packed_requests(client: Any, prefix: str, node: str) -> int:
    """Requests of a node's queue packed in chunks ("" : the chunks of no node), read with a
    blocking client (the command-line tools')."""
    return sum(int(name.split(b":")[1]) for name in client.zrange(f"{prefix}pack:{node}", 0, -1))


def table_size(client: Any, prefix: str) -> int:
    """Nodes the job's bucket table was last made for (a blocking client's read)."""
    nodes = client.get(prefix + "table:nodes")
    return len(nodes.split(b",")) if nodes else 0


def weight_of_score(member: bytes | str, score: float) -> int:
    """The weight a queued member's score holds it at (the inverse of the score's layout)."""
    return order.unrank(float(score))[0]


class RedisFrontier:
    """One node's view of one shard of a job (alone: the job's whole frontier)."""

    def __init__(
        self,
        client: Any,
        job: str,
        node: str,
        buckets: int,
        bloom: BloomShape,
        turns: int = 0,
        link_weight: float = 0.0,
        link_relative: float = 0.0,
        first: int = 0,
        seed_first: int = 0,
        replicas: int = 0,
        prefix: str | None = None,
        shard: tuple[int, int] = (0, 1),
    ) -> None:
        self.client = client  # redis.asyncio
        self.job = job
        self.node = node
        self.buckets = buckets
        self.bloom = bloom
        self.prefix = prefix or job_prefix(job)
        self.scripts = Scripts(client)
        ordering = Ordering(turns, first, seed_first, link_weight, link_relative)
        self.queue = ShardQueue(client, self.scripts, self.prefix, node, bloom, ordering,
                                replicas)
        self.membership = Members(client, self.scripts, self.prefix, node, buckets, shard)
        self.packing = QueueWindow(client, self.scripts, self.prefix, node)

    def key(self, name: str) -> str:
        return self.prefix + name

    @property
    def slot_key(self) -> str:
        return self.queue.slot_key

    async def load_scripts(self) -> None:
        """Load the scripts, and open the stored marks' connection (as a node opens)."""
        await self.scripts.load()
        await self.queue.marks.open()

    async def close(self) -> None:
        await self.queue.marks.close()
        await self.client.aclose()

    # --- requests (queues.py, marks.py) ----------------------------------------------------

    @property
    def queued(self) -> int:
        return self.queue.queued

    @property
    def raised(self) -> int:
        return self.queue.raised

    @property
    def unreplicated(self) -> int:
        return self.queue.unreplicated

    @property
    def link_shards(self) -> int:
        return self.queue.link_shards

    async def push(self, pushes: Sequence[Push]) -> list[bool]:
        return await self.queue.push(pushes)

    async def bloom_stages(self) -> int:
        """The Bloom filter's live stages (lua/bloom.lua): more than one once it was full."""
        live = await self.client.hget(self.key("bloom:fill"), "stages")
        return int(live) if live and live.isdigit() else 1

    async def take(self, sorted_count: int, random_count: int) -> list[Taken]:
        return await self.queue.take(sorted_count, random_count)

    async def ack(self, members: Iterable[str], keys: Iterable[str] | None = None) -> None:
        await self.queue.ack(members, keys)

    async def sync(self, pushes: Sequence[Push], acks: Sequence[tuple[str, str]],
                   sorted_count: int, random_count: int, look: bool = False,
                   cap: TakeCap | None = None) -> tuple[list[bool], list[Taken]]:
        return await self.queue.sync(pushes, acks, sorted_count, random_count, look, cap)

    def link_key(self, fingerprint: bytes) -> str:
        return self.queue.link_key(fingerprint)

    async def cash_of(self, fingerprints: Sequence[bytes]) -> list[float]:
        return await self.queue.cash_of(fingerprints)

    async def release(self, members: Iterable[str]) -> None:
        await self.queue.release(members)

    async def leased(self) -> set[str]:
        return await self.queue.leased()

    async def set_aside(self, member: str, blob: bytes) -> None:
        await self.queue.set_aside(member, blob)

    def stored(self, member: str, send: bool = True) -> None:
        """The page of this leased request is stored (marks.py)."""
        self.queue.marks.add(member, send)

    @property
    def marks_unsent(self) -> int:
        return self.queue.marks.waiting

    # --- the window (window.py) ------------------------------------------------------------

    async def window(self, size: int) -> Window:
        return await self.packing.keep(size)

    # --- membership (membership.py) --------------------------------------------------------

    @property
    def shard_index(self) -> int:
        return self.membership.shard_index

    @property
    def own_buckets(self) -> range:
        return self.membership.own_buckets

    async def heartbeat(self, lease_seconds: int) -> Membership:
        return await self.membership.heartbeat(lease_seconds)

    async def beat(self, lease_seconds: int) -> tuple[bool, list[str], list[str]]:
        return await self.membership.beat(lease_seconds)

    async def members(self) -> list[str]:
        return await self.membership.members()

    async def reap(self, dead: Iterable[str], heir: str | None = None) -> int:
        return await self.membership.reap(dead, heir)

    async def forget(self, dead: Iterable[str]) -> None:
        await self.membership.forget(dead)

    async def rebalance(self, live: list[str]) -> list[str] | None:
        return await self.membership.rebalance(live)

    async def table(self) -> list[str]:
        return await self.membership.table()

    async def table_size(self) -> int:
        return await self.membership.table_size()

    async def leave(self) -> None:
        await self.membership.leave()

    # --- Redis there or not ----------------------------------------------------------------

    async def reachable(self, write: bool = False) -> bool:
        """Whether Redis answers now: one PING (write: one small SET, which a Redis at
        maxmemory refuses) on a connection of its own, for at most PROBE_TIMEOUT seconds
        (the client's own calls retry for about 30 s)."""
        connection = self.client.connection_pool.make_connection()
        connection.retry = AsyncRetry(NoBackoff(), 0)
        connection.socket_connect_timeout = connection.socket_timeout = PROBE_TIMEOUT
        command = ("SET", self.key("probe"), 1, "EX", 60) if write else ("PING",)
        try:
            async with asyncio.timeout(PROBE_TIMEOUT + 1):
                await connection.send_command(*command)
                return await connection.read_response() in (True, b"OK", b"PONG", "PONG", "OK")
        except (RedisError, OSError, TimeoutError):
            return False
        finally:
            await connection.disconnect()

    # --- start and end ---------------------------------------------------------------------

    async def starting(self, flag: bool) -> None:
        if flag:
            await self.client.sadd(self.key("starting"), self.node)
        else:
            await self.client.srem(self.key("starting"), self.node)

    async def take_feed(self, count: int) -> list[str]:
        """Up to `count` urls pushed into the job's feed list (`tianwang feed`, or
        `redis-cli rpush tianwang:{<job>}:feed URL`), taken off it: each goes to one node."""
        urls = await self.client.lpop(self.key("feed"), count) or []
        return [url.decode("utf-8", "replace") if isinstance(url, bytes) else url
                for url in urls]

    async def seeded(self) -> bool:
        """Any request was ever pushed into this job."""
        return bool(await self.client.exists(self.key("seeded")))

    async def finished(self) -> bool:
        """Seeded, every start pushed, every queue empty and no lease out, on every node."""
        return await self.finished_mark(None, home=True) > 0

    async def finished_mark(self, nodes: Sequence[str] | None, home: bool) -> int:
        """0 while this shard holds anything pending of these nodes (None: of its own nodes
        set; home: its feed and start count too); else 1 + its changes so far."""
        return int(await self.scripts.call("finished", self.slot_key,
                                           [self.prefix, int(home), *(nodes or ())]))
