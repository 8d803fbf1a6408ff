"""Who takes part in a shared crawl, and who owns which bucket (docs/design.md section 10).

A node says it lives by a key that expires with its lease (``alive:<node>``) and its name in
the set ``nodes``; the bucket table (``table``: bucket -> node, ``table:nodes``: the live
nodes it was made for) is made again by whichever node first sees the live nodes change
(WATCH: one node makes it, the others read it), moving as few buckets as it can
(mapping.rebalance); what a dead node held (its queue, its leases, its packed chunks) goes
back to the queues of the current owners (lua/reap.lua) before its name leaves ``nodes``.
A node that leaves puts what it holds in the queue of no one, which the others hand on once
their next heartbeat has rebalanced the table without it. No Scrapy import here.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from redis.exceptions import WatchError

from tianwang.distributed.mapping import rebalance
from tianwang.distributed.scripts import Scripts


@dataclass(frozen=True)
class Membership:
    added: bool  # this node was not a member: new, or taken for dead (its leases reaped)
    table: list[str] | None  # the new table if it changed, else None
    reaped: int  # requests of dead nodes put back in the queues


class Members:
    """The membership keys of one shard (the job's home holds ``nodes`` and ``alive:``)."""

    def __init__(self, client: Any, scripts: Scripts, prefix: str, node: str, buckets: int,
                 shard: tuple[int, int] = (0, 1)) -> None:
        self.client = client
        self.scripts = scripts
        self.prefix = prefix
        self.node = node
        self.buckets = buckets
        self.shard_index, self.shard_count = shard

    def key(self, name: str) -> str:
        return self.prefix + name

    async def heartbeat(self, lease_seconds: int) -> Membership:
        """Say this node lives; rebalance the table if the live nodes changed; reap the dead."""
        added, live, dead = await self.beat(lease_seconds)
        table = await self.rebalance(live)
        reaped = await self.reap(dead)
        await self.forget(dead)
        return Membership(added, table, reaped)

    async def beat(self, lease_seconds: int) -> tuple[bool, list[str], list[str]]:
        """Say this node lives: (whether it was not a member, the live nodes, the dead)."""
        async with self.client.pipeline() as pipe:
            pipe.set(self.key(f"alive:{self.node}"), 1, ex=lease_seconds)
            pipe.sadd(self.key("nodes"), self.node)
            pipe.smembers(self.key("nodes"))
            _, added, members = await pipe.execute()
        nodes = sorted(m.decode() for m in members)
        async with self.client.pipeline() as pipe:
            for node in nodes:
                pipe.exists(self.key(f"alive:{node}"))
            alive = await pipe.execute()
        live = [node for node, up in zip(nodes, alive, strict=True) if up]
        dead = [node for node, up in zip(nodes, alive, strict=True) if not up]
        return bool(added), live, dead

    async def members(self) -> list[str]:
        """The nodes taking part (alive or not yet reaped)."""
        return sorted(m.decode() for m in await self.client.smembers(self.key("nodes")))

    async def reap(self, dead: Iterable[str], heir: str | None = None) -> int:
        """What these nodes held, back to the queues (their packs to the heir's, this node
        by default); with an heir, also what a node that left put in the queue of no one.
        The requests moved."""
        heir = self.node if heir is None else heir
        moved = 0
        for node in dead:
            moved += int(await self.scripts.call("reap", self.key("seq"),
                                                 [self.prefix, node, heir]))
        if heir:
            async with self.client.pipeline(transaction=False) as pipe:
                pipe.zcard(self.key("q:"))
                pipe.zcard(self.key("pack:"))
                left = await pipe.execute()
            if any(left):  # left by a node that stopped: the heir takes them on
                moved += int(await self.scripts.call("reap", self.key("seq"),
                                                     [self.prefix, "", heir]))
        return moved

    async def forget(self, dead: Iterable[str]) -> None:
        """These nodes take part no more (once reaped everywhere)."""
        dead = list(dead)
        if dead:
            async with self.client.pipeline() as pipe:
                pipe.srem(self.key("nodes"), *dead)
                pipe.srem(self.key("starting"), *dead)
                await pipe.execute()

    @property
    def own_buckets(self) -> range:
        """The buckets whose keys live in this shard."""
        return range(self.shard_index, self.buckets, self.shard_count)

    async def rebalance(self, live: list[str]) -> list[str] | None:
        """The table of this shard's buckets over the live nodes, if it changed (None else).
        A shard's odd buckets go to the nodes from its index on, so that over many shards
        no node always gets one more."""
        wanted = ",".join(live)
        mine = self.own_buckets
        async with self.client.pipeline() as pipe:
            try:
                await pipe.watch(self.key("table:nodes"))
                current = await pipe.get(self.key("table:nodes"))
                if current is not None and current.decode() == wanted:
                    return None
                raw = {int(b): n.decode()
                       for b, n in (await pipe.hgetall(self.key("table"))).items()}
                old = [raw.get(bucket) for bucket in mine]
                new = rebalance(old, live, self.shard_index)
                pipe.multi()
                changes = {mine[i]: n for i, (o, n) in enumerate(zip(old, new, strict=True))
                           if o != n}
                if changes:
                    pipe.hset(self.key("table"), mapping=changes)
                pipe.set(self.key("table:nodes"), wanted)
                await pipe.execute()
            except WatchError:
                return None  # another node rebalanced first; the next heartbeat reads it
        table = [""] * self.buckets
        for bucket, node in zip(mine, new, strict=True):
            table[bucket] = node
        return table

    async def table(self) -> list[str]:
        """The owner of every bucket of this shard ("" for the others' buckets)."""
        raw = await self.client.hgetall(self.key("table"))
        table = [""] * self.buckets
        for bucket, node in raw.items():
            table[int(bucket)] = node.decode()
        return table

    async def table_size(self) -> int:
        """Nodes the bucket table was last made for."""
        nodes = await self.client.get(self.key("table:nodes"))
        return len(nodes.split(b",")) if nodes else 0

    async def leave(self) -> None:
        """Stop taking part. What this node still holds goes to the queue of no one (its
        buckets are still its own in the table), which the others hand on once their next
        heartbeat has rebalanced the table without it; its packed chunks to the packs of no
        one, which the next heartbeat of another node adopts."""
        await self.client.delete(self.key(f"alive:{self.node}"))
        await self.reap([self.node], heir="")
        await self.forget([self.node])
