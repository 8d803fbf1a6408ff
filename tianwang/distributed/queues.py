"""The queue of one shard of a shared crawl, as one node sees it: push, take, ack, release,
in one pipeline a round trip (docs/design.md section 10).

Keys under the shard's prefix: ``seq`` (request ids and arrivals), ``req`` (member ->
request, schema.py), ``q:<node>`` (the node's queue: member -> score, tianwang/order.py),
``lease:<node>`` (taken and not done: member -> score), ``link:<n>`` (link entries:
lua/links.lua), ``turns``, ``first``, ``seedhost`` (hosts' turns and first requests),
``stored`` (marks.py), ``badrequests`` (requests that did not decode, set aside), ``ops``.
A member is "<bucket>:<id>".

A round trip (sync) is the stored marks not yet sent, then the scripts push, ack, take
(lua/*.lua), in one pipeline; on a Redis Cluster it ends with ``WAIT 1 1000`` on the same
connection, so its reply is used only once its writes are on the replica (a failover then
loses only a round trip whose reply never came, which the node sends again: pushes meet the
Bloom filter, acks find no lease, a lost take's leases are released by the next heartbeat).
A replica that does not confirm is not waited for during WAIT_PAUSE seconds, doubled at each
miss in a row. No Scrapy import here.
"""

from __future__ import annotations

import itertools
import math
import struct
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from redis.exceptions import NoScriptError

from tianwang import order
from tianwang.distributed.bloom import BloomShape
from tianwang.distributed.marks import StoredMarks
from tianwang.distributed.scripts import Scripts

WAIT_MS = 1000
WAIT_PAUSE = 30.0
WAIT_PAUSE_MAX = 600.0
CASH = struct.Struct("<f")  # a link entry's first field (lua/links.lua)
# A take's cap: at most this many requests of a bucket held by the node, and how many it
# holds of each bucket now.
TakeCap = tuple[int, Mapping[int, int]]


@dataclass(frozen=True)
class Push:
    bucket: int
    weight: int  # the url's weight with its boost: the script adds its cash's bonus
    priority: int
    blob: bytes
    fingerprint: bytes | None  # None: dont_filter, never deduplicated
    slot: str = ""  # the queue slot (the host, and its level if any), for the hosts' turns
    seed: bool = False  # no page linked to it: its host has TIANWANG_SEED_HOST_FIRST firsts
    host: str = ""  # what a host's first requests are counted by; "": the slot
    share: float = 0.0  # the cash its link brings the url (link relations)
    base: int = 0  # that share's doublings as TIANWANG_LINK_RELATIVE discounts them


@dataclass(frozen=True)
class Taken:
    member: str
    bucket: int
    weight: int
    priority: int
    blob: bytes | None  # None: its request is gone from Redis (set aside as it comes)
    stored: bool  # fetched before by a node that died after storing it, before its ack
    first_turn: int | None = None  # one of its host's first requests, of this turn
    random: bool = False  # taken by a random pick (else by the sorted take)


@dataclass(frozen=True)
class Ordering:
    """The push script's settings: a frontier's order (config/frontier.py)."""

    turns: int = 0  # a host's turns among equal keys
    first: int = 0  # a host's first requests before the weights
    seed_first: int = 0  # the same for a seed's host
    link_weight: float = 0.0  # weight per doubling of a url's cash; 0: off
    link_relative: float = 0.0  # how much of a url's first share is discounted

    def __post_init__(self) -> None:
        if not 0 <= self.turns <= order.MAX_TURNS:  # the score has room for so many
            raise ValueError(f"turns must be from 0 to {order.MAX_TURNS}")


def link_shards(bloom: BloomShape) -> int:
    """The link hashes of a shard: about 64 urls each at the Bloom filter's expected count
    (n = m ln 2 / k), few enough for Redis to keep each as a listpack."""
    expected = bloom.bits * math.log(2) / bloom.hashes
    return max(1, math.ceil(expected / 64))


def unrank(member: str, score: bytes | str | float) -> tuple[int, int, int, int | None]:
    """(bucket, weight, priority, first turn or None) of a member and its score."""
    return (int(member.split(":", 1)[0]), *order.unrank(float(score)))


class ShardQueue:
    def __init__(self, client: Any, scripts: Scripts, prefix: str, node: str,
                 bloom: BloomShape, ordering: Ordering, replicas: int = 0) -> None:
        self.client = client
        self.scripts = scripts
        self.prefix = prefix
        self.node = node
        self.bloom = bloom
        self._bloom_stages = bloom.lua_stages()
        self.ordering = ordering
        self.link_shards = link_shards(bloom)
        self.marks = StoredMarks(client, prefix + "stored")
        self.queued = 0  # this node's queue in this shard after the last take
        self.raised = 0  # queued urls a link raised in the last sync
        self.replicas = replicas
        self.wait_ms = WAIT_MS  # the longest a sync waits for its replicas
        self.unreplicated = 0  # syncs whose replicas did not confirm in wait_ms
        self._wait_after = 0.0
        self._wait_pause = WAIT_PAUSE

    def key(self, name: str) -> str:
        return self.prefix + name

    @property
    def slot_key(self) -> str:
        """The key every script call names (lua files: KEYS[1])."""
        return self.key("seq")

    async def push(self, pushes: Sequence[Push]) -> list[bool]:
        """Add requests to their owners' queues; False for each one the Bloom filter had."""
        return (await self.sync(pushes, (), 0, 0))[0]

    async def take(self, sorted_count: int, random_count: int) -> list[Taken]:
        """Lease up to sorted_count requests by score, then random_count at random."""
        return (await self.sync((), (), sorted_count, random_count))[1]

    async def ack(self, members: Iterable[str], keys: Iterable[str] | None = None) -> None:
        """These requests are done with: their lease, their stored request and (given their
        urls' link keys) their urls' cash go."""
        members = list(members)
        keys = [""] * len(members) if keys is None else list(keys)
        await self.sync((), list(zip(members, keys, strict=True)), 0, 0)

    async def sync(
        self, pushes: Sequence[Push], acks: Sequence[tuple[str, str]], sorted_count: int,
        random_count: int, look: bool = False, cap: TakeCap | None = None,
    ) -> tuple[list[bool], list[Taken]]:
        """Push, then ack, then take: one round trip. acks: (member, its url's link key, or
        "" for a request no link brought cash). look: take even none, to learn what this node
        has queued here (`queued`). cap: the sorted take passes over the buckets the node
        holds that many requests of (take.lua)."""
        await self.marks.settle()
        calls: list[tuple[str, list[object]]] = []
        if pushes:
            calls.append(("push", self._push_args(pushes)))
        if acks:
            calls.append(("ack", [self.prefix, self.node, self.link_shards,
                                  *itertools.chain(*acks)]))
        takes = bool(sorted_count or random_count or look)
        if takes:
            limit, held = cap if cap is not None else (0, {})
            calls.append(("take", [self.prefix, self.node, sorted_count, random_count, limit,
                                   *itertools.chain.from_iterable(held.items())]))
        marks = self.marks.take_unsent()
        try:
            replies = await self._pipelined(calls, marks)
        except BaseException:
            self.marks.restore(marks)
            raise
        codes = replies[0] if pushes else []
        self.raised = codes.count(2)
        flags = [code == 1 for code in codes]
        taken = []
        if takes:
            *reply, sorted_taken, self.queued = replies[-1]
            taken = self._taken(reply, int(sorted_taken))
        return flags, taken

    async def _pipelined(self, calls: list[tuple[str, list[object]]], marks: list[str]) -> list:
        """The scripts' replies; the marks go first (their reply dropped)."""
        if not calls and not marks:
            return []
        for attempt in (1, 2):
            try:
                async with self.client.pipeline(transaction=False) as pipe:
                    if marks:
                        pipe.hset(self.key("stored"), mapping=dict.fromkeys(marks, 1))
                    for name, args in calls:
                        pipe.evalsha(self.scripts.sha(name), 1, self.slot_key, *args)
                    waits = self.replicas > 0 and time.monotonic() >= self._wait_after
                    if waits:  # on the same connection: WAIT counts this client's writes
                        pipe.execute_command("WAIT", self.replicas, self.wait_ms)
                    replies = await pipe.execute()
                if waits:
                    self._replicated(replies.pop())
                return replies[1:] if marks else replies
            except NoScriptError:  # Redis restarted: none is loaded, so none ran
                if attempt == 2:
                    raise
                await self.scripts.load()
        raise AssertionError("unreachable")

    def _replicated(self, replicas: int) -> None:
        if replicas >= self.replicas:
            self._wait_pause = WAIT_PAUSE
            return
        # A replica down: go on without it, and try again later.
        self.unreplicated += 1
        self._wait_after = time.monotonic() + self._wait_pause
        self._wait_pause = min(2 * self._wait_pause, WAIT_PAUSE_MAX)

    def _push_args(self, pushes: Sequence[Push]) -> list[object]:
        ordering = self.ordering
        args: list[object] = [self.prefix, self._bloom_stages, "", ordering.turns,
                              ordering.first, ordering.seed_first, repr(ordering.link_weight),
                              self.link_shards, repr(ordering.link_relative)]
        links = ordering.link_weight > 0
        for push in pushes:
            args += [push.bucket, push.weight, push.priority, push.slot, push.host or push.slot,
                     int(push.seed), push.blob, repr(push.share) if links else 0,
                     push.base if links else 0]
            if push.fingerprint is None:
                args.append(0)
            else:
                args.append(1)
                args += self.bloom.hashes_of(push.fingerprint)
        return args

    @staticmethod
    def _taken(reply: list, sorted_taken: int) -> list[Taken]:
        taken = []
        for i in range(0, len(reply), 4):
            member = reply[i].decode("ascii")
            bucket, weight, priority, turn = unrank(member, reply[i + 1])
            taken.append(Taken(member, bucket, weight, priority, reply[i + 2], bool(reply[i + 3]),
                               turn, random=i // 4 >= sorted_taken))
        return taken

    def link_key(self, fingerprint: bytes) -> str:
        """A url's key in the link hashes: the first of its Bloom hashes, 48 bits. Among 10
        million urls pending at once two share one with a chance of 1 in 6, among a billion
        about 1,800 pairs do: their cash is summed, an error of order only."""
        return str(self.bloom.hashes_of(fingerprint)[0])

    async def cash_of(self, fingerprints: Sequence[bytes]) -> list[float]:
        """The cash of these urls now (0 for a url no link brought any)."""
        if not fingerprints:
            return []
        # One script call, not an HGET each: a take of 64 requests asked 64 commands, which
        # cost the node more CPU to write and read than Redis took to answer them.
        entries = await self.scripts.call("cash", self.slot_key, [
            self.prefix, self.link_shards,
            *(self.bloom.hashes_of(fingerprint)[0] for fingerprint in fingerprints)])
        return [CASH.unpack_from(entry)[0] if entry else 0.0
                for entry in entries]  # type: ignore[attr-defined]

    async def release(self, members: Iterable[str]) -> None:
        """Give leased requests back to their owners' queues, unfetched."""
        members = list(members)
        if members:
            await self.scripts.call("release", self.slot_key, [self.prefix, self.node, *members])

    async def leased(self) -> set[str]:
        return {m.decode("ascii") for m in await self.client.hkeys(self.key(f"lease:{self.node}"))}

    async def set_aside(self, member: str, blob: bytes) -> None:
        """A leased request that does not decode: to the hash ``badrequests``, its lease and
        stored request gone (it will not come back, nor hold up the crawl's end)."""
        async with self.client.pipeline() as pipe:
            pipe.hset(self.key("badrequests"), member, blob)
            pipe.hdel(self.key(f"lease:{self.node}"), member)
            pipe.hdel(self.key("req"), member)
            pipe.hdel(self.key("stored"), member)
            await pipe.execute()
