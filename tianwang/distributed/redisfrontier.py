"""The shared frontier in Redis: per-node queues, leases, the bucket table, the end condition.

One RedisFrontier is one shard of a job (shards.py; shardedfrontier.py puts the shards
together), its keys under the shard's prefix: ``tianwang:{<job>}:`` for a job of one shard,
which is then also the job's home. The keys (``nodes``, ``alive:``, ``starting``, ``seeded``,
``feed``, ``table:nodes``: the home's when the job has several shards; the others each
shard's, for its own buckets):

    seq            counter: request ids, in arrival order; ops: takes that took any
    req            hash member -> encoded request
    q:<node>       zset member -> score: the node's pending requests
    lease:<node>   hash member -> score: requests the node has taken and not finished
    pack:<node>    zset chunk -> its best score: the node's queue past its window, packed
    chunks         hash chunk -> its requests, compressed (see PACK); badchunks: those that
                   did not decode, set aside
    bloom:<seg>    the Bloom filter's bitmaps (bloom.py)
    link:<n>       hashes url key -> "<cash> <member>": the cash links brought a url not
                   done yet, and its member (link relations, see PUSH)
    table          hash bucket -> node; table:nodes the sorted live nodes it was made for
    nodes          set of the nodes taking part; alive:<node> a key that expires with the lease
    stored         hash of the leased members whose page is stored (until their ack): a
                   node killed between storing a page and its ack does not get it stored twice
    starting       set of the nodes whose spider start() is not yet fully pushed
    seeded         set once any request was pushed
    feed           list of urls pushed from outside (`tianwang feed`, redis-cli rpush): any
                   node takes them and pushes them as seeds, through the Bloom filter and
                   to their host's node

A member is "<bucket>:<id>". Its score orders the queue as the local frontier does: the
higher (weight, priority) first; among equals hosts take turns (a host's k-th request of that
key before any host's k+1-th, for its first TIANWANG_HOST_TURNS, at most 31 here; counted in
the hash ``turns``); then the older id (first come, first served). All in one double,
``-(key * 32 + 31 - turn) * 2**31 + id`` with key = (weight + 256) * 128 + priority + 64
(weights clipped to [-256, 255], priorities to [-64, 63], ids below 2**31: 52 bits, exact).
A host's first requests (TIANWANG_HOST_FIRST, TIANWANG_SEED_HOST_FIRST for a seed's host,
counted in the hashes ``first`` and ``seedhost``) go before all that, turn by turn, the
higher key first within a turn: their rank is ``2**21 + (15 - turn) * 2**16 + key``, above
any other (below 2**21 + 2**20: the score stays below 2**53, exact).
A sorted take is ZPOPMIN, a random take ZRANDMEMBER (uniform over the node's queue).

Every change that must be atomic is one Lua script, and every script works on a batch, so a
node makes one round trip per batch of pushes, takes or acks. Scripts are idempotent where a
retry after a lost reply could repeat them (a push of a url already pushed is filtered by the
Bloom filter; an ack of an acked member does nothing). No Scrapy import here.
"""

from __future__ import annotations

import itertools
import math
import struct
import time
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from redis import Connection, Redis, WatchError
from redis.backoff import NoBackoff
from redis.commands.core import Script
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import NoScriptError, RedisError
from redis.exceptions import TimeoutError as RedisTimeoutError
from redis.retry import Retry

from tianwang import order
from tianwang.distributed import scripts
from tianwang.distributed.bloom import BloomShape
from tianwang.distributed.chunks import ChunkError, pack_chunk, unpack_chunk
from tianwang.distributed.mapping import rebalance
from tianwang.distributed.shards import prefix_of

# With replicas to wait for (a Redis Cluster): the longest a sync waits for them, and after
# one that did not come (a replica down, or none configured: WAIT then blocks its whole
# timeout), seconds before a sync waits again, doubled at each miss in a row up to the last.
WAIT_MS = 1000
WAIT_PAUSE = 30.0
WAIT_PAUSE_MAX = 600.0
# Redis away: the errors a call raises once the client's retries are spent (BusyLoadingError,
# a Redis loading its data, is a ConnectionError), and the longest a probe waits.
REDIS_DOWN = (RedisConnectionError, RedisTimeoutError)
PROBE_TIMEOUT = 2.0


def job_prefix(job: str) -> str:
    """The prefix of a job's home in Redis (and of its one shard, if it has one: shards.py)."""
    return prefix_of(job)


def packed_requests(client: Redis, prefix: str, node: str) -> int:
    """Requests of a node's queue packed in chunks ("" : the chunks of no node)."""
    return sum(int(name.split(b":")[1]) for name in client.zrange(f"{prefix}pack:{node}", 0, -1))


def table_size(client: Redis, prefix: str) -> int:
    """Nodes the job's bucket table was last made for."""
    nodes = client.get(prefix + "table:nodes")
    return len(nodes.split(b",")) if nodes else 0


def link_shards(bloom: BloomShape) -> int:
    """The link hashes of a job: about 64 urls each at the Bloom filter's expected count
    (n = m ln 2 / k), few enough for Redis to keep each as a listpack."""
    expected = bloom.bits * math.log(2) / bloom.hashes
    return max(1, math.ceil(expected / 64))


def weight_of_score(member: bytes | str, score: float) -> int:
    """The weight a queued member's score holds it at (the inverse of the score's layout)."""
    return order.unrank(float(score))[0]

CASH = struct.Struct("<f")  # a link entry's first field (lua/links.lua)
CHUNK = 1000  # requests a chunk
CHUNKS_A_CALL = 100  # at most this many chunks packed or unpacked by one window() call


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
    blob: bytes
    stored: bool  # fetched before by a node that died after storing it, before its ack
    first_turn: int | None = None  # one of its host's first requests, of this turn


@dataclass(frozen=True)
class Window:
    packed: int  # requests packed into chunks by this call
    unpacked: int  # requests put back into the queues
    chunks: int  # chunks this node's queue still has packed
    damaged: tuple[str, ...] = ()  # chunks that did not decode, set aside in badchunks


@dataclass(frozen=True)
class Membership:
    added: bool  # this node was not a member: new, or taken for dead (its leases reaped)
    table: list[str] | None  # the new table if it changed, else None
    reaped: int  # requests of dead nodes put back in the queues


def unrank(member: str, score: bytes | str | float) -> tuple[int, int, int, int | None]:
    """(bucket, weight, priority, first turn or None) of a member and its score."""
    return (int(member.split(":", 1)[0]), *order.unrank(float(score)))


class RedisFrontier:
    """One node's view of the shared frontier of one job."""

    def __init__(
        self,
        client: Redis,
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
        self.client = client
        # One shard of the job's (prefix, its index and the job's shard count): its buckets
        # are those of that index modulo the count (shardedfrontier.py). Alone: the job's.
        self.shard_index, self.shard_count = shard
        self.queued = 0  # this node's queue in this shard after the last take
        # Replicas each sync's writes reach before its reply is used (WAIT): what a failover
        # loses is then only a sync whose reply never came, which is retried as after a
        # dropped connection (pushes and acks idempotent, a lost take's leases released).
        self.replicas = replicas
        self.unreplicated = 0  # syncs whose replicas did not confirm in WAIT_MS
        self._wait_after = 0.0
        self._wait_pause = WAIT_PAUSE
        self.first, self.seed_first = first, seed_first  # a host's first requests (PUSH)
        self.link_weight = link_weight  # weight per doubling of a url's cash; 0: off
        self.link_relative = link_relative  # how much of a url's first share is discounted
        self.link_shards = link_shards(bloom)
        self.raised = 0  # queued urls a link raised in the last sync
        self._marks_conn: Connection | None = None
        self._sent_marks: deque[str] = deque()  # members marked, their replies not read yet
        self._unsent_marks: list[str] = []  # the next sync sends them first, in its pipeline
        if not 0 <= turns <= order.MAX_TURNS:  # the score has room for so many
            raise ValueError(f"turns must be from 0 to {order.MAX_TURNS}")
        self.turns = turns
        self.job = job
        self.prefix = prefix or job_prefix(job)
        self.node = node
        self.buckets = buckets
        self.bloom = bloom
        self._scripts = {name: client.register_script(scripts.source(name))
                         for name in scripts.SCRIPTS}
        self._push, self._take = self._scripts["push"], self._scripts["take"]
        self._ack, self._release = self._scripts["ack"], self._scripts["release"]
        self._reap, self._finished = self._scripts["reap"], self._scripts["finished"]
        self._pack, self._unpack = self._scripts["pack"], self._scripts["unpack"]

    def load_scripts(self) -> None:
        """Load every script, so a pipeline never holds a loaded one beside a missing one:
        were it so, the loaded ones would run, their replies be lost with the error, and
        the pipeline be sent again (a take done twice)."""
        for script in self._scripts.values():
            self.client.script_load(script.script)

    def key(self, name: str) -> str:
        return self.prefix + name

    def _call(self, script: Script, args: list[object]) -> int:
        return int(script(keys=[self.slot_key], args=args))

    @property
    def slot_key(self) -> str:
        """The key every script call names: its keys, built inside from ARGV (a bucket's
        owner is read from the table), all share its hash tag, so naming one gives Redis
        Cluster the slot, and a call meets MOVED rather than running where the slot is not."""
        return self.key("seq")

    # --- requests --------------------------------------------------------------------------

    def push(self, pushes: Sequence[Push]) -> list[bool]:
        """Add requests to their owners' queues; False for each one the Bloom filter had."""
        return self.sync(pushes, (), 0, 0)[0]

    def take(self, sorted_count: int, random_count: int) -> list[Taken]:
        """Lease up to sorted_count requests by score, then random_count at random."""
        return self.sync((), (), sorted_count, random_count)[1]

    def ack(self, members: Iterable[str], keys: Iterable[str] | None = None) -> None:
        """These requests are done with: their lease, their stored request and (given their
        urls' link keys) their urls' cash go."""
        members = list(members)
        keys = [""] * len(members) if keys is None else list(keys)
        self.sync((), list(zip(members, keys, strict=True)), 0, 0)

    def link_key(self, fingerprint: bytes) -> str:
        """A url's key in the link hashes: the first of its Bloom hashes, 48 bits, which
        Redis keeps as an integer. Among 10 million urls pending at once two share one with
        a chance of 1 in 6, among a billion about 1,800 pairs do: their cash is summed, an
        error of order only."""
        return str(self.bloom.hashes_of(fingerprint)[0])

    def cash_of(self, fingerprints: Sequence[bytes]) -> list[float]:
        """The cash of these urls now (0 for a url no link brought any)."""
        if not fingerprints:
            return []
        with self.client.pipeline(transaction=False) as pipe:
            for fingerprint in fingerprints:
                pipe.hget(*self._link_place(self.bloom.hashes_of(fingerprint)[0]))
            entries = pipe.execute()
        return [CASH.unpack_from(entry)[0] if entry else 0.0 for entry in entries]

    def _link_place(self, h1: int) -> tuple[str, int]:
        """(hash, field) of a url's link entry, as lua/links.lua places it."""
        field, index = divmod(h1, self.link_shards)
        return self.key(f"link:{index}"), field

    def sync(
        self, pushes: Sequence[Push], acks: Sequence[tuple[str, str]], sorted_count: int,
        random_count: int, look: bool = False,
    ) -> tuple[list[bool], list[Taken]]:
        """Push, then ack, then take: one round trip. acks: (member, its url's link key, or ""
        for a request no link brought cash). look: take even none, to learn what this node
        has queued here (`queued`).

        The scripts go by EVALSHA in one pipeline; after a Redis restart (no scripts loaded)
        they are loaded and the pipeline is sent again, none of it having run.
        """
        self._read_marks()
        calls: list[tuple[Script, list[object]]] = []
        if pushes:
            calls.append((self._push, self._push_args(pushes)))
        if acks:
            calls.append((self._ack, [self.prefix, self.node, self.link_shards,
                                      *itertools.chain(*acks)]))
        takes = bool(sorted_count or random_count or look)
        if takes:
            calls.append((self._take, [self.prefix, self.node, sorted_count, random_count]))
        replies = self._pipelined(calls, self._unsent_marks)
        self._unsent_marks = []
        codes = replies[0] if pushes else []
        self.raised = codes.count(2)
        flags = [code == 1 for code in codes]
        taken = []
        if takes:
            taken, self.queued = self._taken(replies[-1][:-1]), int(replies[-1][-1])
        return flags, taken

    def _pipelined(self, calls: list[tuple[Script, list[object]]], marks: list[str]) -> list:
        """The scripts' replies; the marks go first (their reply dropped)."""
        if not calls and not marks:
            return []
        for attempt in (1, 2):
            try:
                with self.client.pipeline(transaction=False) as pipe:
                    if marks:
                        pipe.hset(self.key("stored"), mapping=dict.fromkeys(marks, 1))
                    for script, args in calls:
                        pipe.evalsha(script.sha, 1, self.slot_key, *args)
                    waits = self.replicas > 0 and time.monotonic() >= self._wait_after
                    if waits:  # on the same connection: WAIT counts this client's writes
                        pipe.execute_command("WAIT", self.replicas, WAIT_MS)
                    replies = pipe.execute()
                if waits:
                    self._replicated(replies.pop())
                return replies[1:] if marks else replies
            except NoScriptError:  # Redis restarted: none is loaded, so none ran
                if attempt == 2:
                    raise
                self.load_scripts()
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
        args: list[object] = [self.prefix, self.bloom.hashes, self.bloom.bits, self.turns,
                              self.first, self.seed_first, repr(self.link_weight),
                              self.link_shards, repr(self.link_relative)]
        links = self.link_weight > 0
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
    def _taken(reply: list) -> list[Taken]:
        taken = []
        for i in range(0, len(reply), 4):
            member = reply[i].decode("ascii")
            bucket, weight, priority, turn = unrank(member, reply[i + 1])
            taken.append(Taken(member, bucket, weight, priority, reply[i + 2], bool(reply[i + 3]),
                               turn))
        return taken

    def stored(self, member: str, send: bool = True) -> None:
        """The page of this leased request is stored: were it fetched again, not to store it.

        Sent without waiting for the reply (a round trip a page cost a crawl 4%): on a
        connection of its own, whose replies the next sync reads before it acks anything, so
        a mark always reaches Redis before the ack that deletes it. A mark that cannot be
        sent (Redis restarting, a failover under way) goes at the head of the next sync's
        pipeline, which retries until Redis is back: still before the ack. send=False (Redis
        known to be away) puts it there at once, not to wait out the client's retries.
        """
        if not send:
            self._unsent_marks.append(member)
            return
        try:
            self._marks_connection().send_command("HSET", self.key("stored"), member, 1)
        except REDIS_DOWN:
            self._marks_lost()
            self._unsent_marks.append(member)
            return
        self._sent_marks.append(member)

    def _marks_connection(self) -> Connection:
        if self._marks_conn is None:
            self._marks_conn = self.client.connection_pool.make_connection()
        return self._marks_conn

    def _read_marks(self) -> None:
        """The replies of the marks sent (long arrived by now: this rarely waits)."""
        try:
            while self._sent_marks:
                self._marks_connection().read_response()
                self._sent_marks.popleft()
        except REDIS_DOWN:
            self._marks_lost()

    def _marks_lost(self) -> None:
        """The marks connection broke: the marks not confirmed are sent again (HSET of the
        same field: no harm if they had arrived)."""
        self._marks_conn = None
        self._unsent_marks += self._sent_marks
        self._sent_marks.clear()

    @property
    def marks_unsent(self) -> int:
        """Stored marks not known to be in Redis (not sent, or sent with no reply yet)."""
        return len(self._unsent_marks) + len(self._sent_marks)

    def reachable(self) -> bool:
        """Whether Redis answers a PING now: one try on a connection of its own, for at most
        PROBE_TIMEOUT seconds (the client's own calls retry for about 30 s)."""
        connection = self.client.connection_pool.make_connection()
        connection.retry = Retry(NoBackoff(), 0)
        connection.socket_connect_timeout = connection.socket_timeout = PROBE_TIMEOUT
        try:
            connection.send_command("PING")
            return connection.read_response() in (True, b"PONG", "PONG")
        except RedisError:
            return False
        finally:
            connection.disconnect()

    def release(self, members: Iterable[str]) -> None:
        """Give leased requests back to their owners' queues, unfetched."""
        members = list(members)
        if members:
            self._call(self._release, [self.prefix, self.node, *members])

    def leased(self) -> set[str]:
        return {m.decode("ascii") for m in self.client.hkeys(self.key(f"lease:{self.node}"))}

    # --- the window: a node's queue in Redis kept near a size, the rest packed -------------

    def window(self, size: int) -> Window:
        """Keep this node's queue in Redis near `size` requests (0: unbounded, every chunk
        comes back): past it, the worst go into compressed chunks, down to 3/4 of it; under
        half of it, chunks come back, the best first (docs/design.md section 10)."""
        with self.client.pipeline(transaction=False) as pipe:
            pipe.zcard(self.key(f"q:{self.node}"))
            pipe.zcard(self.key(f"pack:{self.node}"))
            queued, chunks = pipe.execute()
        packed = unpacked = calls = 0
        damaged: list[str] = []  # chunks that did not decode, set aside
        while size and queued > size and calls < CHUNKS_A_CALL:
            moved = self._pack_worst(min(CHUNK, queued - size * 3 // 4))
            if not moved:  # some taken or raised meanwhile: the next call tries again
                break
            queued -= moved
            packed += moved
            chunks += 1
            calls += 1
        while chunks and (not size or queued < size // 2) and calls < CHUNKS_A_CALL:
            moved = self._unpack_best(damaged)  # (some may go to other nodes' queues)
            queued += moved
            unpacked += moved
            chunks -= 1
            calls += 1
        return Window(packed, unpacked, chunks, tuple(damaged))

    def _pack_worst(self, count: int) -> int:
        """Pack the `count` worst requests of this node's queue into one chunk."""
        worst = self.client.zrange(self.key(f"q:{self.node}"), -count, -1, withscores=True)
        members = [member for member, _score in worst]
        blobs = self.client.hmget(self.key("req"), members) if members else []
        entries = list(zip(blobs, (m.decode("ascii") for m in members),
                           (score for _m, score in worst), strict=True))
        if not entries or any(blob is None for blob, _m, _s in entries):
            return 0
        args: list[object] = [self.prefix, self.node, pack_chunk(entries)]
        for _blob, name, score in entries:
            args += [name, repr(score)]
        return self._call(self._pack, args)

    def _unpack_best(self, damaged: list[str]) -> int:
        """Put the chunk of best score back into the queues (to each request's owner); one
        that does not decode is set aside and its name added to `damaged`."""
        key = self.key(f"pack:{self.node}")
        best = self.client.zrange(key, 0, 0)
        if not best:
            return 0
        data = self.client.hget(self.key("chunks"), best[0])
        if data is None:  # unpacked by another: a name left behind
            self.client.zrem(key, best[0])
            return 0
        try:
            entries = unpack_chunk(data)
        except ChunkError:
            self._set_aside(best[0], data)
            damaged.append(best[0].decode("ascii", "replace"))
            return 0
        args: list[object] = [self.prefix, self.node, best[0]]
        for member, score, blob in entries:
            args += [member, score, blob]
        return self._call(self._unpack, args)

    def set_aside(self, member: str, blob: bytes) -> None:
        """A leased request that does not decode: to the hash ``badrequests``, its lease and
        stored request gone (it will not come back, nor hold up the crawl's end)."""
        with self.client.pipeline() as pipe:
            pipe.hset(self.key("badrequests"), member, blob)
            pipe.hdel(self.key(f"lease:{self.node}"), member)
            pipe.hdel(self.key("req"), member)
            pipe.hdel(self.key("stored"), member)
            pipe.execute()

    def _set_aside(self, name: bytes, data: bytes) -> None:
        """A chunk that does not decode (damaged in Redis) goes to the hash ``badchunks``,
        kept for a look, so it stops neither the crawl's end nor the other chunks."""
        with self.client.pipeline() as pipe:
            pipe.hset(self.key("badchunks"), name, data)
            pipe.hdel(self.key("chunks"), name)
            pipe.zrem(self.key(f"pack:{self.node}"), name)
            pipe.execute()

    # --- membership ------------------------------------------------------------------------

    def heartbeat(self, lease_seconds: int) -> Membership:
        """Say this node lives; rebalance the table if the live nodes changed; reap the dead."""
        added, live, dead = self.beat(lease_seconds)
        table = self.rebalance(live)
        reaped = self.reap(dead)
        self.forget(dead)
        return Membership(added, table, reaped)

    def beat(self, lease_seconds: int) -> tuple[bool, list[str], list[str]]:
        """Say this node lives: (whether it was not a member, the live nodes, the dead)."""
        with self.client.pipeline() as pipe:
            pipe.set(self.key(f"alive:{self.node}"), 1, ex=lease_seconds)
            pipe.sadd(self.key("nodes"), self.node)
            pipe.smembers(self.key("nodes"))
            _, added, members = pipe.execute()
        nodes = sorted(m.decode() for m in members)
        with self.client.pipeline() as pipe:
            for node in nodes:
                pipe.exists(self.key(f"alive:{node}"))
            alive = pipe.execute()
        live = [node for node, up in zip(nodes, alive, strict=True) if up]
        dead = [node for node, up in zip(nodes, alive, strict=True) if not up]
        return bool(added), live, dead

    def members(self) -> list[str]:
        """The nodes taking part (alive or not yet reaped)."""
        return sorted(m.decode() for m in self.client.smembers(self.key("nodes")))

    def reap(self, dead: Iterable[str], heir: str | None = None) -> int:
        """What these nodes held, back to the queues (their packs to the heir's, this node
        by default); with an heir, also what a node that left put in the queue of no one.
        The requests moved."""
        heir = self.node if heir is None else heir
        moved = sum(self._call(self._reap, [self.prefix, node, heir]) for node in dead)
        if heir:
            with self.client.pipeline(transaction=False) as pipe:
                pipe.zcard(self.key("q:"))
                pipe.zcard(self.key("pack:"))
                if any(pipe.execute()):  # left by a node that stopped: the heir takes them on
                    moved += self._call(self._reap, [self.prefix, "", heir])
        return moved

    def forget(self, dead: Iterable[str]) -> None:
        """These nodes take part no more (once reaped everywhere)."""
        dead = list(dead)
        if dead:
            with self.client.pipeline() as pipe:
                pipe.srem(self.key("nodes"), *dead)
                pipe.srem(self.key("starting"), *dead)
                pipe.execute()

    @property
    def own_buckets(self) -> range:
        """The buckets whose keys live in this shard."""
        return range(self.shard_index, self.buckets, self.shard_count)

    def rebalance(self, live: list[str]) -> list[str] | None:
        """The table of this shard's buckets over the live nodes, if it changed (None else).
        A shard's odd buckets go to the nodes from its index on, so that over many shards
        no node always gets one more."""
        wanted = ",".join(live)
        mine = self.own_buckets
        with self.client.pipeline() as pipe:
            try:
                pipe.watch(self.key("table:nodes"))
                current = pipe.get(self.key("table:nodes"))
                if current is not None and current.decode() == wanted:
                    return None
                raw = {int(b): n.decode() for b, n in pipe.hgetall(self.key("table")).items()}
                old = [raw.get(bucket) for bucket in mine]
                new = rebalance(old, live, self.shard_index)
                pipe.multi()
                changes = {mine[i]: n for i, (o, n) in enumerate(zip(old, new, strict=True))
                           if o != n}
                if changes:
                    pipe.hset(self.key("table"), mapping=changes)
                pipe.set(self.key("table:nodes"), wanted)
                pipe.execute()
                table = [""] * self.buckets
                for bucket, node in zip(mine, new, strict=True):
                    table[bucket] = node
                return table
            except WatchError:
                return None  # another node rebalanced first; the next heartbeat reads it

    def table(self) -> list[str]:
        """The owner of every bucket of this shard ("" for the others' buckets)."""
        raw = self.client.hgetall(self.key("table"))
        table = [""] * self.buckets
        for bucket, node in raw.items():
            table[int(bucket)] = node.decode()
        return table

    def leave(self) -> None:
        """Stop taking part. What this node still holds goes to the queue of no one (its
        buckets are still its own in the table), which the others hand on once their next
        heartbeat has rebalanced the table without it; its packed chunks to the packs of no
        one, which the next heartbeat of another node adopts."""
        self.client.delete(self.key(f"alive:{self.node}"))
        self.reap([self.node], heir="")
        self.forget([self.node])

    # --- start and end ---------------------------------------------------------------------

    def starting(self, flag: bool) -> None:
        if flag:
            self.client.sadd(self.key("starting"), self.node)
        else:
            self.client.srem(self.key("starting"), self.node)

    def take_feed(self, count: int) -> list[str]:
        """Up to `count` urls pushed into the job's feed list (`tianwang feed`, or
        `redis-cli rpush tianwang:{<job>}:feed URL`), taken off it: each goes to one node."""
        urls = self.client.lpop(self.key("feed"), count) or []
        return [url.decode("utf-8", "replace") if isinstance(url, bytes) else url
                for url in urls]

    def seeded(self) -> bool:
        """Any request was ever pushed into this job."""
        return bool(self.client.exists(self.key("seeded")))

    def finished(self) -> bool:
        """Seeded, every start pushed, every queue empty and no lease out, on every node."""
        return self.finished_mark(None, home=True) > 0

    def finished_mark(self, nodes: Sequence[str] | None, home: bool) -> int:
        """0 while this shard holds anything pending of these nodes (None: of its own nodes
        set; home: its feed and start count too); else 1 + its changes so far."""
        return self._call(self._finished, [self.prefix, int(home), *(nodes or ())])

    def table_size(self) -> int:
        """Nodes the bucket table was last made for."""
        return table_size(self.client, self.prefix)
