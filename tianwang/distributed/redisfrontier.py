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
import marshal
import math
import time
import zlib
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

from tianwang.distributed.bloom import LUA_TEST_AND_SET, BloomShape
from tianwang.distributed.mapping import rebalance
from tianwang.distributed.shards import prefix_of

SHIFT = 2**31
MAX_ID = 2**31 - 1
MAX_TURNS = 31  # the score has 5 bits for a host's turn
FIRST_RANK = 2**21  # ranks from here: a host's first requests
KEYS = 2**16  # key_rank's values
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
    text = member.decode() if isinstance(member, bytes) else member
    return unrank(text, score)[1]

# Link relations (frontier/linkscore.py) ride on the push: a push of a url carries the cash its
# link brings (its share; 0 with TIANWANG_LINK_WEIGHT off). A new url queued with a share gets
# an entry "<cash> <member>" in the job's link hashes; a url seen before that has one gains
# the share, and while it is queued its weight may rise: the score's weight field grows
# (ZINCRBY of -delta * 2**43, exact in the double), its priority, turn and id stay; taken or
# packed, only its cash grows. Acked (ACK), its entry goes, so a url done costs only its Bloom
# bits: a link to a url seen with no entry is to a url done (or a false positive), and counts
# nothing.
# The raise is the difference of the bonus of the cash after and before, which is the same
# whether or not TIANWANG_LINK_RELATIVE discounts the first share (up to rounding): the node
# weighs a new url's first share itself. A host's first request, ranked above every weight,
# reads as a weight of 256 or more here and is left where it is.
# The entries are spread over `shards` small hashes ``link:<h1 mod shards>``, about 64 urls
# each at the expected count, which Redis keeps as listpacks (36 bytes a url at 10 million,
# where two plain hashes took 165). Replies: 1 a url queued, 0 one seen before, 2 one seen
# before and raised.
PUSH = LUA_TEST_AND_SET + """
local p, k, m, turns = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local first, seed_first = tonumber(ARGV[5]), tonumber(ARGV[6])
local per, shards = tonumber(ARGV[7]), tonumber(ARGV[8])
-- The rank of a host's next first request (nil past its first ones).
local function first_rank(host, seed, key)
  if first == 0 and seed_first == 0 then return nil end
  if seed == '1' and seed_first > 0 then redis.call('HSET', p .. 'seedhost', host, 1) end
  local given = tonumber(redis.call('HGET', p .. 'first', host) or '0')
  -- A host past both counts (most pushes, once the crawl is under way): one HGET only.
  if given >= math.max(first, seed_first) then return nil end
  local cap = first
  if seed_first > 0 and redis.call('HEXISTS', p .. 'seedhost', host) == 1 then
    cap = seed_first
  end
  if given >= cap then return nil end
  redis.call('HSET', p .. 'first', host, given + 1)
  return 2097152 + (15 - given) * 65536 + key
end
local function bonus(c)
  return math.floor(per * math.log(math.max(c, 2 ^ -24)) / math.log(2) + 0.5)
end
local function cash(c) return string.format('%.6g', c) end
-- A url seen before gains its share; 2 if its queue score rose, else 0.
local function credit(links, fp, share)
  local entry = redis.call('HGET', links, fp)
  if not entry then return 0 end  -- done, or a false positive of the Bloom filter
  local old, member = string.match(entry, '^(%S+) (%S+)$')
  local new = tonumber(old) + share
  redis.call('HSET', links, fp, cash(new) .. ' ' .. member)
  local bucket, id = string.match(member, '^(%d+):(%d+)$')
  local q = p .. 'q:' .. (redis.call('HGET', p .. 'table', bucket) or '')
  local score = redis.call('ZSCORE', q, member)
  if not score then return 0 end  -- taken or packed: queued again, it rises with the next
  local weight = math.floor((tonumber(id) - tonumber(score)) / 2147483648 / 4096) - 256
  local delta = math.min(bonus(new) - bonus(tonumber(old)), 255 - weight)
  if delta <= 0 then return 0 end
  redis.call('ZINCRBY', q, string.format('%.17g', -delta * 8796093022208), member)
  return 2
end
local out, i = {}, 9
while i <= #ARGV do
  local bucket, key, slot, host = ARGV[i], tonumber(ARGV[i + 1]), ARGV[i + 2], ARGV[i + 3]
  local seed, blob, nfp = ARGV[i + 4], ARGV[i + 5], ARGV[i + 6]
  local new, fp, links, share = true, nil, nil, 0
  if nfp == '1' then
    new = bloom_test_and_set(p, k, m, i + 7)
    fp = ARGV[i + 7]
    links = p .. 'link:' .. math.fmod(tonumber(ARGV[i + 7]), shards)
    share = tonumber(ARGV[i + 9])
    i = i + 10
  else
    i = i + 7
  end
  if new then
    local rank = first_rank(host, seed, key)
    if not rank then
      local turn = 0
      if turns > 0 then
        turn = math.min(turns, redis.call('HINCRBY', p .. 'turns', slot .. '|' .. key, 1) - 1)
      end
      rank = key * 32 + 31 - turn
    end
    local id = redis.call('INCR', p .. 'seq')
    local member = bucket .. ':' .. id
    local owner = redis.call('HGET', p .. 'table', bucket) or ''
    redis.call('ZADD', p .. 'q:' .. owner, string.format('%.17g', id - rank * 2147483648), member)
    redis.call('HSET', p .. 'req', member, blob)
    if share > 0 then redis.call('HSET', links, fp, cash(share) .. ' ' .. member) end
    out[#out + 1] = 1
  else
    -- A seed seen before (a link found its url first) still names its host a seed's.
    if seed == '1' and seed_first > 0 then redis.call('HSET', p .. 'seedhost', host, 1) end
    if share > 0 then
      out[#out + 1] = credit(links, fp, share)
    else
      out[#out + 1] = 0
    end
  end
end
if #out > 0 then redis.call('SET', p .. 'seeded', 1) end
return out
"""

# Move members to their owner's queue (score given); those of an owner-less bucket or of
# the node being emptied go to the queue of no one ('q:'), which the next rebalance hands on.
LUA_REQUEUE = """
local function requeue(p, member, score, away)
  local bucket = string.match(member, '^(%d+):')
  local owner = redis.call('HGET', p .. 'table', bucket) or ''
  if owner == away then owner = '' end
  redis.call('ZADD', p .. 'q:' .. owner, score, member)
end
"""

TAKE = LUA_REQUEUE + """
local p, node = ARGV[1], ARGV[2]
local q, lease = p .. 'q:' .. node, p .. 'lease:' .. node
local out = {}
local function take(member, score)
  local bucket = string.match(member, '^(%d+):')
  local owner = redis.call('HGET', p .. 'table', bucket)
  if owner and owner ~= node then  -- pushed before its bucket moved: on to the owner
    redis.call('ZADD', p .. 'q:' .. owner, score, member)
    return
  end
  redis.call('HSET', lease, member, score)
  out[#out + 1] = member
  out[#out + 1] = score
  out[#out + 1] = redis.call('HGET', p .. 'req', member)
  out[#out + 1] = redis.call('HEXISTS', p .. 'stored', member)
end
if tonumber(ARGV[3]) > 0 then
  local sorted = redis.call('ZPOPMIN', q, tonumber(ARGV[3]))
  for i = 1, #sorted, 2 do take(sorted[i], sorted[i + 1]) end
end
if tonumber(ARGV[4]) > 0 and redis.call('ZCARD', q) > 0 then
  local picked = redis.call('ZRANDMEMBER', q, tonumber(ARGV[4]), 'WITHSCORES')
  for i = 1, #picked, 2 do
    redis.call('ZREM', q, picked[i])
    take(picked[i], picked[i + 1])
  end
end
if #out > 0 then redis.call('INCR', p .. 'ops') end  -- for FINISHED over shards
out[#out + 1] = redis.call('ZCARD', q)  -- the queue left: how a node splits its next take
return out
"""

# Pairs of a member and its url's link key ('' for none): a request done with leaves nothing
# but its Bloom bits (a later link to it counts nothing).
ACK = """
local p, node, shards = ARGV[1], ARGV[2], tonumber(ARGV[3])
for i = 4, #ARGV, 2 do
  local member, fp = ARGV[i], ARGV[i + 1]
  if redis.call('HDEL', p .. 'lease:' .. node, member) == 1 then
    redis.call('HDEL', p .. 'req', member)
    redis.call('HDEL', p .. 'stored', member)
    if fp ~= '' then
      redis.call('HDEL', p .. 'link:' .. math.fmod(tonumber(fp), shards), fp)
    end
  end
end
return 0
"""

# Leased members back to the queues (given back by a live node, or taken by a dead one).
RELEASE = LUA_REQUEUE + """
local p, node = ARGV[1], ARGV[2]
local lease = p .. 'lease:' .. node
for i = 3, #ARGV do
  local score = redis.call('HGET', lease, ARGV[i])
  if score then
    redis.call('HDEL', lease, ARGV[i])
    requeue(p, ARGV[i], score, '')
  end
end
return 0
"""

# Everything a node held (its queue and its leases) to the current owners; its packed chunks
# to the heir's packs (the node reaping it; '': the packs of no one, which the next heartbeat
# of any node adopts).
REAP = LUA_REQUEUE + """
local p, node, heir = ARGV[1], ARGV[2], ARGV[3]
local packs = redis.call('ZRANGE', p .. 'pack:' .. node, 0, -1, 'WITHSCORES')
if heir ~= node then
  redis.call('DEL', p .. 'pack:' .. node)
  for i = 1, #packs, 2 do redis.call('ZADD', p .. 'pack:' .. heir, packs[i + 1], packs[i]) end
end
local queued = redis.call('ZRANGE', p .. 'q:' .. node, 0, -1, 'WITHSCORES')
redis.call('DEL', p .. 'q:' .. node)
for i = 1, #queued, 2 do requeue(p, queued[i], queued[i + 1], node) end
local leased = redis.call('HGETALL', p .. 'lease:' .. node)
redis.call('DEL', p .. 'lease:' .. node)
for i = 1, #leased, 2 do requeue(p, leased[i], leased[i + 1], node) end
return (#queued + #leased) / 2
"""

# 0 while anything is pending; else 1 + the shard's changes so far (new urls and takes), by
# which a look over many shards, not atomic, is checked (shardedfrontier.py). ARGV[2] '1': the
# job's home, whose feed, seed flag and starting nodes count too; the nodes to look at follow
# (none: the nodes set of this prefix).
FINISHED = """
local p, home = ARGV[1], ARGV[2]
if home == '1' then
  if redis.call('LLEN', p .. 'feed') > 0 then return 0 end
  if redis.call('EXISTS', p .. 'seeded') == 0 or redis.call('SCARD', p .. 'starting') > 0 then
    return 0
  end
end
if redis.call('ZCARD', p .. 'q:') > 0 or redis.call('ZCARD', p .. 'pack:') > 0 then return 0 end
local nodes = {}
for i = 3, #ARGV do nodes[#nodes + 1] = ARGV[i] end
if #ARGV < 3 then nodes = redis.call('SMEMBERS', p .. 'nodes') end
for _, node in ipairs(nodes) do
  if redis.call('ZCARD', p .. 'q:' .. node) > 0 then return 0 end
  if redis.call('ZCARD', p .. 'pack:' .. node) > 0 then return 0 end
  if redis.call('HLEN', p .. 'lease:' .. node) > 0 then return 0 end
end
local changes = tonumber(redis.call('GET', p .. 'seq') or '0')
return 1 + changes + tonumber(redis.call('GET', p .. 'ops') or '0')
"""


# A node's queue past its window (TIANWANG_REDIS_WINDOW): its worst requests go into chunks,
# each a compressed list of (member, score, request) the node made, held in the hash
# ``chunks`` under the name "<seq>:<requests in it>" and listed in the zset ``pack:<node>`` by
# the best score in them. PACK takes the members out of the queue only if each is still there
# at the score the node read (none taken, raised or moved meanwhile); UNPACK puts a chunk's
# requests back to their owners' queues at their scores, once: the chunk's HDEL decides.
PACK = """
local p, node, chunk = ARGV[1], ARGV[2], ARGV[3]
local q = p .. 'q:' .. node
local best
for i = 4, #ARGV, 2 do
  local score = redis.call('ZSCORE', q, ARGV[i])
  if not score or tonumber(score) ~= tonumber(ARGV[i + 1]) then return 0 end
  if not best or tonumber(score) < best then best = tonumber(score) end
end
if not best then return 0 end
for i = 4, #ARGV, 2 do
  redis.call('ZREM', q, ARGV[i])
  redis.call('HDEL', p .. 'req', ARGV[i])
end
local id = redis.call('INCR', p .. 'packseq') .. ':' .. (#ARGV - 3) / 2  -- '<seq>:<requests>'
redis.call('HSET', p .. 'chunks', id, chunk)
redis.call('ZADD', p .. 'pack:' .. node, string.format('%.17g', best), id)
return (#ARGV - 3) / 2
"""

UNPACK = LUA_REQUEUE + """
local p, node, id = ARGV[1], ARGV[2], ARGV[3]
redis.call('ZREM', p .. 'pack:' .. node, id)
if redis.call('HDEL', p .. 'chunks', id) == 0 then return 0 end
for i = 4, #ARGV, 3 do
  redis.call('HSET', p .. 'req', ARGV[i], ARGV[i + 2])
  requeue(p, ARGV[i], ARGV[i + 1], '')
end
return (#ARGV - 3) / 3
"""

CHUNK = 1000  # requests a chunk
CHUNKS_A_CALL = 100  # at most this many chunks packed or unpacked by one window() call


@dataclass(frozen=True)
class Push:
    bucket: int
    weight: int
    priority: int
    blob: bytes
    fingerprint: bytes | None  # None: dont_filter, never deduplicated
    slot: str = ""  # the queue slot (the host, and its level if any), for the hosts' turns
    seed: bool = False  # no page linked to it: its host has TIANWANG_SEED_HOST_FIRST firsts
    host: str = ""  # what a host's first requests are counted by; "": the slot
    share: float = 0.0  # the cash its link brings the url (link relations)


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


def key_rank(weight: int, priority: int) -> int:
    weight = max(-256, min(255, weight))
    priority = max(-64, min(63, priority))
    return (weight + 256) * 128 + priority + 64


def unrank(member: str, score: bytes | str | float) -> tuple[int, int, int, int | None]:
    """(bucket, weight, priority, first turn or None) of a member and its score."""
    bucket, ident = (int(part) for part in member.split(":"))
    rank = int(ident - float(score)) // SHIFT
    turn = None
    if rank >= FIRST_RANK:
        later, key = divmod(rank - FIRST_RANK, KEYS)  # later: 15 - turn
        turn = 15 - later
    else:
        key = rank // 32
    weight, priority = divmod(key, 128)
    return bucket, weight - 256, priority - 64, turn


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
        self.link_shards = link_shards(bloom)
        self.raised = 0  # queued urls a link raised in the last sync
        self._marks_conn: Connection | None = None
        self._sent_marks: deque[str] = deque()  # members marked, their replies not read yet
        self._unsent_marks: list[str] = []  # the next sync sends them first, in its pipeline
        self.turns = min(turns, MAX_TURNS)
        self.job = job
        self.prefix = prefix or job_prefix(job)
        self.node = node
        self.buckets = buckets
        self.bloom = bloom
        self._push = client.register_script(PUSH)
        self._take = client.register_script(TAKE)
        self._ack = client.register_script(ACK)
        self._release = client.register_script(RELEASE)
        self._reap = client.register_script(REAP)
        self._pack = client.register_script(PACK)
        self._unpack = client.register_script(UNPACK)
        self._finished = client.register_script(FINISHED)
        self._scripts = [self._push, self._take, self._ack, self._release, self._reap,
                         self._pack, self._unpack]
        self._scripts.append(self._finished)

    def load_scripts(self) -> None:
        """Load every script, so a pipeline never holds a loaded one beside a missing one:
        were it so, the loaded ones would run, their replies be lost with the error, and
        the pipeline be sent again (a take done twice)."""
        for script in self._scripts:
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
                h1 = self.bloom.hashes_of(fingerprint)[0]
                pipe.hget(self.key(f"link:{h1 % self.link_shards}"), h1)
            entries = pipe.execute()
        return [float(entry.split()[0]) if entry else 0.0 for entry in entries]

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
                              self.first, self.seed_first, self.link_weight, self.link_shards]
        for push in pushes:
            key = key_rank(push.weight, push.priority)
            args += [push.bucket, key, push.slot, push.host or push.slot, int(push.seed),
                     push.blob]
            if push.fingerprint is None:
                args.append(0)
            else:
                args.append(1)
                args += self.bloom.hashes_of(push.fingerprint)
                args.append(repr(push.share) if self.link_weight else 0)
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
        entries = sorted(zip(blobs, (m.decode("ascii") for m in members),
                             (score for _m, score in worst), strict=True))
        if not entries or any(blob is None for blob, _m, _s in entries):
            return 0
        blobs, names, scores = (list(column) for column in zip(*entries, strict=True))
        # Sorted by request, so a host's urls sit together: zlib finds their common parts.
        chunk = zlib.compress(marshal.dumps((names, scores, blobs)), 6)
        args: list[object] = [self.prefix, self.node, chunk]
        for name, score in zip(names, scores, strict=True):
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
            names, scores, blobs = marshal.loads(zlib.decompress(data))
        except (zlib.error, ValueError, EOFError, TypeError):
            self._set_aside(best[0], data)
            damaged.append(best[0].decode("ascii", "replace"))
            return 0
        args: list[object] = [self.prefix, self.node, best[0]]
        for entry in zip(names, scores, blobs, strict=True):
            args += [entry[0], repr(entry[1]), entry[2]]
        return self._call(self._unpack, args)

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
