"""One node's view of a shared frontier split into shards (shards.py): the RedisFrontier of
each shard behind the same interface, and the job's home for what is the job's as a whole.

A round trip of one shard stays one script call per kind (push, ack, take) in one pipeline,
on that shard's master; a node's sync makes one such round trip per shard it touches. Two
orders matter across shards, which no transaction holds together:

- A page's links are pushed before its ack: every shard's pushes go first, the acks after
  (a node killed in between leaves a lease, which comes back when the node is taken for
  dead, and a stored mark, so the page is not stored twice).
- The end: no one look over many shards is atomic, so the job is finished only when two
  looks in a row find every shard empty and none changed between them (FINISHED returns a
  count of each shard's new urls and takes): then at the moment between the looks every
  shard was empty at once, and an empty job with no node starting and no feed stays so.

A dead node is reaped from every shard before it leaves the home's nodes set, so that the end
check, which looks at the nodes listed, never misses a lease of a node still being reaped.
With one shard this is the RedisFrontier of the job, its home and shard in one.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence

from tianwang.distributed.queues import TakeCap
from tianwang.distributed.redisfrontier import (
    Membership,
    Push,
    RedisFrontier,
    Taken,
    Window,
)
from tianwang.distributed.shards import shard_of, split_take


class ShardedFrontier:
    """The frontier of one job over its shards, for one node."""

    def __init__(self, home: RedisFrontier, shards: Sequence[RedisFrontier]) -> None:
        self.home = home  # shards[0] itself when the job has one shard
        self.shards = list(shards)
        self.job, self.node, self.prefix = home.job, home.node, home.prefix
        self.buckets = home.buckets
        self.raised = 0  # queued urls a link raised in the last sync
        self._home_seeded = False

    @property
    def single(self) -> bool:
        return len(self.shards) == 1

    def _index_of(self, member: str) -> int:
        """The shard of a member ("<bucket>:<id>")."""
        return shard_of(int(member.split(":", 1)[0]), len(self.shards))

    def _by_shard(self, members: Iterable[str]) -> dict[int, list[str]]:
        grouped: dict[int, list[str]] = {}
        for member in members:
            grouped.setdefault(self._index_of(member), []).append(member)
        return grouped

    async def load_scripts(self) -> None:
        for frontier in self._all():
            await frontier.load_scripts()

    def _all(self) -> list[RedisFrontier]:
        """Every frontier to talk to: the shards, and the home if it is none of them."""
        return self.shards if self.single else [*self.shards, self.home]

    # --- requests --------------------------------------------------------------------------

    async def sync(
        self, pushes: Sequence[Push], acks: Sequence[tuple[str, str]], sorted_count: int,
        random_count: int, cap: TakeCap | None = None,
    ) -> tuple[list[bool], list[Taken]]:
        """Push, then ack, then take, as RedisFrontier.sync: over shards, every push before
        any ack. The takes are split by what this node has queued in each shard."""
        if self.single:
            result = await self.shards[0].sync(pushes, acks, sorted_count, random_count,
                                               cap=cap)
            self.raised = self.shards[0].raised
            return result
        count = len(self.shards)
        pushed: list[list[int]] = [[] for _ in range(count)]
        for i, push in enumerate(pushes):
            pushed[shard_of(push.bucket, count)].append(i)
        acked: list[list[tuple[str, str]]] = [[] for _ in range(count)]
        for ack in acks:
            acked[self._index_of(ack[0])].append(ack)
        queued = [shard.queued for shard in self.shards]
        sorted_counts = split_take(sorted_count, queued)
        random_counts = split_take(random_count, queued)
        flags = [False] * len(pushes)
        taken: list[Taken] = []
        self.raised = 0
        if pushes:
            await self._seed_home()
        taking = bool(sorted_count or random_count)
        for index, shard in enumerate(self.shards):
            # Acks ride with the takes only when nothing is pushed: else after every push.
            shard_acks = () if pushes else acked[index]
            if not pushed[index] and not shard_acks and not taking:
                continue
            # A take looks at every shard, even one given none: what it holds steers the next.
            shard_flags, shard_taken = await shard.sync(
                [pushes[i] for i in pushed[index]], shard_acks, sorted_counts[index],
                random_counts[index], look=taking, cap=cap)
            for i, flag in zip(pushed[index], shard_flags, strict=True):
                flags[i] = flag
            taken += shard_taken
            self.raised += shard.raised
        if pushes:
            for index, shard in enumerate(self.shards):
                if acked[index]:
                    await shard.sync((), acked[index], 0, 0)
        return flags, taken

    async def _seed_home(self) -> None:
        """The home's seed flag, which the end check asks for (a shard's own is the shard's)."""
        if not self._home_seeded:
            await self.home.client.set(self.home.key("seeded"), 1)
            self._home_seeded = True

    async def push(self, pushes: Sequence[Push]) -> list[bool]:
        return (await self.sync(pushes, (), 0, 0))[0]

    async def take(self, sorted_count: int, random_count: int) -> list[Taken]:
        return (await self.sync((), (), sorted_count, random_count))[1]

    async def ack(self, members: Iterable[str], keys: Iterable[str] | None = None) -> None:
        members = list(members)
        keys = [""] * len(members) if keys is None else list(keys)
        await self.sync((), list(zip(members, keys, strict=True)), 0, 0)

    def link_key(self, fingerprint: bytes) -> str:
        return self.shards[0].link_key(fingerprint)

    async def cash_of(self, urls: Sequence[tuple[int, bytes]]) -> list[float]:
        """The cash of these urls now, each given as (its bucket, its fingerprint)."""
        if self.single:
            return await self.shards[0].cash_of([fingerprint for _bucket, fingerprint in urls])
        cash = [0.0] * len(urls)
        grouped: dict[int, list[int]] = {}
        for i, (bucket, _fingerprint) in enumerate(urls):
            grouped.setdefault(shard_of(bucket, len(self.shards)), []).append(i)
        for index, positions in grouped.items():
            values = await self.shards[index].cash_of([urls[i][1] for i in positions])
            for i, value in zip(positions, values, strict=True):
                cash[i] = value
        return cash

    async def set_aside(self, member: str, blob: bytes) -> None:
        await self.shards[self._index_of(member)].set_aside(member, blob)

    def stored(self, member: str, send: bool = True) -> None:
        self.shards[self._index_of(member)].stored(member, send)

    @property
    def marks_unsent(self) -> int:
        return sum(shard.marks_unsent for shard in self.shards)

    async def close(self) -> None:
        """Close each client once (on one redis-server the shards share one)."""
        closed: set[int] = set()
        for frontier in self._all():
            if id(frontier.client) not in closed:
                closed.add(id(frontier.client))
                await frontier.close()

    @property
    def queued(self) -> int:
        """This node's queue in Redis (over its shards) after the last take."""
        return sum(shard.queued for shard in self.shards)

    @property
    def unreplicated(self) -> int:
        return sum(shard.unreplicated for shard in self.shards)

    async def bloom_stages(self) -> int:
        """The most stages a shard's Bloom filter has."""
        return max([await shard.bloom_stages() for shard in self.shards])

    async def reachable(self, write: bool = False) -> bool:
        for frontier in self._all():
            if not await frontier.reachable(write):
                return False
        return True

    async def release(self, members: Iterable[str]) -> None:
        for index, group in self._by_shard(members).items():
            await self.shards[index].release(group)

    async def leased(self) -> set[str]:
        leased: set[str] = set()
        for shard in self.shards:
            leased |= await shard.leased()
        return leased

    async def window(self, size: int) -> Window:
        """Each shard's part of this node's queue kept near its share of `size`."""
        if self.single:
            return await self.shards[0].window(size)
        share = -(-size // len(self.shards)) if size else 0
        windows = [await shard.window(share) for shard in self.shards]
        return Window(sum(w.packed for w in windows), sum(w.unpacked for w in windows),
                      sum(w.chunks for w in windows),
                      tuple(itertools.chain(*(w.damaged for w in windows))))

    # --- membership ------------------------------------------------------------------------

    async def heartbeat(self, lease_seconds: int) -> Membership:
        """Say this node lives (in the home); in every shard, rebalance its buckets if the
        live nodes changed and reap the dead; then the dead leave the home."""
        if self.single:
            return await self.shards[0].heartbeat(lease_seconds)
        added, live, dead = await self.home.beat(lease_seconds)
        tables = [await shard.rebalance(live) for shard in self.shards]
        reaped = 0
        for shard in self.shards:
            reaped += await shard.reap(dead)
        await self.home.forget(dead)
        # What table_size() reads (the quorum): set each beat, for the node that rebalanced
        # the shards may have died before it set it.
        await self.home.client.set(self.home.key("table:nodes"), ",".join(live))
        table = await self.table() if any(t is not None for t in tables) else None
        return Membership(added, table, reaped)

    async def table(self) -> list[str]:
        """The owner of every bucket, each from its shard's table."""
        table = [""] * self.buckets
        for shard in self.shards:
            own = await shard.table()
            for bucket in shard.own_buckets:
                table[bucket] = own[bucket]
        return table

    async def leave(self) -> None:
        """As RedisFrontier.leave, in every shard; the home last (see the module's doc)."""
        for shard in self.shards:
            if shard is not self.home:
                await shard.reap([self.node], heir="")
        await self.home.leave()

    # --- start and end ---------------------------------------------------------------------

    async def starting(self, flag: bool) -> None:
        await self.home.starting(flag)

    async def take_feed(self, count: int) -> list[str]:
        return await self.home.take_feed(count)

    async def seeded(self) -> bool:
        return await self.home.seeded()

    async def table_size(self) -> int:
        return await self.home.table_size()

    async def finished(self) -> bool:
        """Every shard empty at once, with the home's feed and start (see the module's doc)."""
        if self.single:
            return await self.shards[0].finished()
        first = await self._look()
        return first is not None and await self._look() == first

    async def _look(self) -> tuple[list[str], list[int]] | None:
        nodes = await self.home.members()
        marks = []
        if await self.home.finished_mark(nodes, home=True) == 0:
            return None
        for shard in self.shards:
            mark = await shard.finished_mark(nodes, home=False)
            if mark == 0:
                return None
            marks.append(mark)
        return nodes, marks
