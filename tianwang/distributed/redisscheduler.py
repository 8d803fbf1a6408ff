"""The Redis frontier scheduler: one node of a crawl shared through Redis (docs/design.md 10).

The Tianwang add-on makes it the SCHEDULER when TIANWANG_REDIS_URL is set. Requests a node
finds go, in batches, to the queue in Redis of the node owning their host's bucket
(redisfrontier.py and the modules it names; the Bloom filter in the same script drops urls
seen anywhere). A node takes batches from its own queue, leasing them, and picks among them
with the local frontier's own queue (FrontierSchedulerBase: weight order, host picks,
skipping hosts whose downloader slot is full). As every host is owned by one node, the
node's downloader slots are the host's whole state.

Scrapy asks a scheduler for requests and gives it requests without waiting: enqueue_request
and next_request never call Redis. They fill an outbox and empty a local queue; round trips
(push the outbox, ack what the engine has finished, take a batch) run as asyncio tasks on
redis.asyncio, started by the poll every POLL_INTERVAL, by a full outbox, or by a local
queue running low. A Redis that stalls (a DEBUG SLEEP, a slow disk) pauses the frontier,
never the downloads in flight. The poll and the heartbeat are supervised
(frontier/supervisor.py): an error is counted and retried, and past a bound the node stops.
A Redis away or full (faults.py) is the node's state (nodestate.py): it keeps what it would
have sent and fetches what it holds, probes, and stops past TIANWANG_REDIS_OUTAGE_SECONDS.

A request is acked (its lease dropped) once the engine has finished with it, after the
requests its page produced are in Redis, so a node killed at any point loses nothing: its
leases go back to the queues when its heartbeat key expires (TIANWANG_LEASE_SECONDS), with
its buckets. The crawl ends when every node's queue is empty and no lease is out.

What it learns from the rest of the crawl comes by signals: tianwang.signals.page_stored
(the storage pipeline wrote a page: mark its lease stored in Redis) and
start_requests_done (StartDoneMiddleware: this node's seeds are all pushed).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter, deque
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from redis.exceptions import RedisError
from scrapy import Request, Spider
from scrapy.utils.defer import deferred_from_coro

from tianwang import meta, order, scrapy_internals, signals
from tianwang.config import SettingError
from tianwang.config.frontier import FrontierConfig
from tianwang.config.shared_crawl import RedisConfig
from tianwang.distributed.bloom import BloomShape
from tianwang.distributed.connection import check_redis, connect_async, job_tags
from tianwang.distributed.faults import FULL, fault_of
from tianwang.distributed.mapping import bucket_of
from tianwang.distributed.nodestate import SEEDING, NodeState
from tianwang.distributed.queues import TakeCap
from tianwang.distributed.redisfrontier import Push, RedisFrontier, Taken, job_prefix
from tianwang.distributed.schema import SchemaError, decode, encode
from tianwang.distributed.shardedfrontier import ShardedFrontier
from tianwang.distributed.shards import prefix_of
from tianwang.frontier.linkscore import base_of
from tianwang.frontier.queue import FrontierQueue
from tianwang.frontier.scheduler import FrontierSchedulerBase, new_queue, of_seed_host
from tianwang.frontier.slots import engine_of
from tianwang.seeds import SeedError, normalize_seed
from tianwang.sendback import restore_dont_filter

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable
    from typing import Self

    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)

# The spider middleware whose signal says this node's start requests are all out.
START_DONE = "tianwang.middlewares.startdone.StartDoneMiddleware"
POLL_INTERVAL = 0.1  # seconds between flushes, acks and refills besides next_request
WAIT_NOTICE = 30.0  # seconds between two "waiting for seeds" lines of an idle node
BLOOM_CHECK = 60.0  # seconds between two looks at the shared Bloom filter's stages
SLOW_NOTICE = 5.0  # a round trip out this long: the node says it waits for Redis
# Links found go to Redis with the next round trip, or at once when this many wait. Not the
# take's size: a page has tens of links, and a push a take's worth of links cost a node a
# round trip every page or two (4% of its pages/s at takes of 16).
PUSH_BATCH = 64
# Takes a node holds at most when nothing it holds may go (every host of it busy): more
# requests of other hosts, not without end.
MOST_TAKES_HELD = 8
STOP_REASONS = {FULL: "redis_full"}  # how a node stops past its bound; else unreachable


class RedisFrontierScheduler(FrontierSchedulerBase):
    """A node of the shared crawl, with the local frontier's order and host awareness."""

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        config = FrontierConfig.from_settings(crawler.settings)
        _require_start_done(crawler.settings)
        _require_shared_order(config)
        spider_name = getattr(crawler.spidercls, "name", "") or ""
        redis_config = RedisConfig.from_settings(crawler.settings, spider_name)
        frontier = open_frontier(redis_config, config)
        return cls(frontier, new_queue(config, count_first=False), config, redis_config, crawler,
                   connections=crawler.settings.getint("CONCURRENT_REQUESTS"))

    def __init__(
        self,
        frontier: ShardedFrontier,
        queue: FrontierQueue,
        config: FrontierConfig,
        redis_config: RedisConfig,
        crawler: Crawler,
        connections: int,
    ) -> None:
        super().__init__(queue, config, crawler)
        self.frontier = frontier
        self.lease_seconds = redis_config.lease_seconds
        self.batch = redis_config.batch
        self.quorum = redis_config.quorum
        self.window = redis_config.window
        self.bucket_cap = bucket_cap(config)
        self.connections = connections  # the downloader's, CONCURRENT_REQUESTS
        self.state = NodeState(self.quorum, self.lease_seconds, redis_config.outage_seconds,
                               time.monotonic())
        self._chunks = 0  # chunks of this node's queue packed in Redis, at the last look
        self._outbox: list[Push] = []
        # queue item -> (taken from Redis, its request): leased, pending here
        self._local: dict[int, tuple[Taken, Request]] = {}
        # url handed out -> its members in flight whose page is not marked stored yet (two
        # requests of one url may be out at once: dont_filter, a refresh)
        self._members: dict[str, deque[str]] = {}
        # finished, to ack after the outbox is pushed: (member, its url's link key or "")
        self._done: list[tuple[str, str]] = []
        self._acked = False  # acks sent since the last look whether the job is finished
        self._out: dict[str, Taken] = {}  # member -> its lease, for requests handed out
        self._kept: set[str] = set()  # leases a sent-back copy holds: not acked as they end
        self._owned: set[int] = set()
        self._lost: set[int] = set()  # buckets moved to other nodes, to give back
        self._stale_cash: list[tuple[int, Request]] = []  # handed out: their cash read again
        self._last_empty_take = 0.0
        self._random_owed = 0.0  # random picks the takes so far earned (_owe_random)
        self._item_cash: dict[int, float] = {}  # local id -> its url's cash when taken
        self._wait_noticed = 0.0
        self._bloom_stages, self._bloom_checked = 1, 0.0  # the stages said, and when looked
        self._quorum_noticed = time.monotonic()  # the first notice after WAIT_NOTICE
        self._refusals: set[str] = set()  # kinds of requests the schema refused, said once
        self._trips = asyncio.Lock()  # one round trip (and orphan check) at a time
        self._kick_task: asyncio.Future | None = None
        self._calls: dict[object, float] = {}  # calls to Redis out now -> when they began
        self._slow_said = 0.0  # when "Redis has not answered" was said; 0: not said
        self._answered = 0.0  # when a call to Redis last answered

    # --- Scrapy's scheduler interface ----------------------------------------------------

    @classmethod
    def check_settings(cls, settings: Any, spider_name: str = "") -> None:
        super().check_settings(settings, spider_name)
        _require_start_done(settings)
        _require_shared_order(FrontierConfig.from_settings(settings))
        check_redis(settings, spider_name)

    def open(self, spider: Spider) -> Any:
        return deferred_from_coro(self._open(spider))

    async def _open(self, spider: Spider) -> None:
        self.spider = spider
        await self.frontier.load_scripts()
        if await self.frontier.finished():
            # Its keys stay in Redis: every url it saw is skipped, so nothing new is crawled.
            job = self.frontier.job
            self.stats.set_value("tianwang/redis/job_had_finished", 1)
            logger.warning(
                "job %s has finished already (its keys tianwang:{%s}:* are in Redis): every url "
                "it saw is skipped. To crawl afresh, give a new TIANWANG_REDIS_JOB or delete "
                "the keys (python3 -m tianwang feed --redis URL --job %s --reset)", job, job, job)
        await self.frontier.starting(True)
        await self._heartbeat()
        await self._keep()
        signals_ = self.crawler.signals
        signals_.connect(self._page_stored, signal=signals.page_stored)
        signals_.connect(self._start_requests_done, signal=signals.start_requests_done)
        super().open(spider)
        logger.info("Redis frontier: node %s of job %s, %d buckets owned of %d",
                    self.frontier.node, self.frontier.job, len(self._owned),
                    self.frontier.buckets)

    def loops(self) -> list[tuple[Callable[[], Any], float]]:
        # _watch on its own: the others wait on Redis when it stalls.
        beat = max(0.2, self.lease_seconds / 3)
        return [(self._poll, POLL_INTERVAL), (self._beat, beat),
                (self._upkeep, min(1.0, beat)), (self._watch, 1.0)]

    def close(self, reason: str) -> Any:
        return deferred_from_coro(self._close(reason))

    async def _close(self, reason: str) -> None:
        super().close(reason)
        self.crawler.signals.disconnect(self._page_stored, signal=signals.page_stored)
        self.crawler.signals.disconnect(self._start_requests_done,
                                        signal=signals.start_requests_done)
        if self._kick_task is not None:
            self._kick_task.cancel()
        # Whatever this node holds and has not finished goes back for the others.
        unfinished = [taken.member for taken, _request in self._local.values()]
        unfinished += [member for member, _slot in self._inflight.values()]
        fault = self.state.fault
        if fault and not await self.frontier.reachable(write=fault == FULL):
            self._left_behind(len(unfinished))
        else:
            try:
                await self.round_trip(take=False)
                await self.frontier.release(unfinished)
                await self.frontier.leave()
                self.counts["tianwang/redis/released"] += len(unfinished)
                await self._report_bloom()
            except RedisError as error:
                self.state.cause = str(error)
                self._left_behind(len(unfinished))
        self._add_counts_to_stats()
        self.slots.close()
        await self.frontier.close()

    async def _report_bloom(self) -> None:
        """Say when the shared Bloom filter has outgrown TIANWANG_EXPECTED_URLS by a stage
        more (Redis memory the setting did not foresee): every minute, and at the end."""
        stages = await self.frontier.bloom_stages()
        self.stats.set_value("tianwang/redis/bloom_stages", stages)
        if stages > self._bloom_stages:
            self._bloom_stages = stages
            logger.warning("The shared request Bloom filter outgrew TIANWANG_EXPECTED_URLS: "
                           "%d stages, each twice the one before (Redis memory; its error rate "
                           "stays under twice TIANWANG_BLOOM_ERROR_RATE)", stages)

    def _left_behind(self, unfinished: int) -> None:
        """Closing without Redis: say what the others will redo."""
        logger.error(
            "Redis unreachable as node %s closes (%s): its %d requests not fetched go back to "
            "the queues when its lease runs out (TIANWANG_LEASE_SECONDS); %d pushes, %d acks "
            "and %d stored marks not sent (the pages not acked are fetched again by another "
            "node, and their links found again)", self.frontier.node, self.state.cause or
            "its last call failed", unfinished, len(self._outbox), len(self._done),
            self.frontier.marks_unsent)

    def _page_stored(self, item: Any) -> None:
        """The item's page is written (signals.page_stored): say so in Redis before its ack,
        for a kill in between must not get it stored again by the node that fetches it next."""
        # The lease is the request's that fetched the page: after a redirect that is the
        # redirect's (queued anew, a lease of its own), whose url is the page's.
        for url in (getattr(item, "url", None), getattr(item, "requested_url", None)):
            members = self._members.get(url) if url else None
            if members:
                self.frontier.stored(members.popleft(), send=self.state.fault is None)
                return

    def _start_requests_done(self) -> None:
        self.state.start_done = True

    def has_pending_requests(self) -> bool:
        return bool(self._local or self._outbox) or not self.state.finished

    def __len__(self) -> int:
        return len(self._local)

    def enqueue_request(self, request: Request) -> bool:
        lease = request.meta.pop(meta.LEASE, None)
        # Sent back to wait, the very request this node handed out (a redirect made from one
        # carries its meta, SENT_BACK and the lease included, but is a new request).
        if (request.meta.get(meta.SENT_BACK) and lease in self._out
                and lease in self._members.get(request.url, ())):
            return self._keep_local(self._out[lease], request)
        fingerprint = None
        if not request.dont_filter:
            fingerprint = self.crawler.request_fingerprinter.fingerprint(request)
        # The weight without its cash: the push script adds the bonus of the url's cash, the
        # share its link brings for a new url, the sum for one seen before (link relations).
        weight = self.weigh(request.url) + request.meta.get(meta.BOOST, 0)
        share, base = 0.0, 0
        if self.cash is not None:
            share, first = self.link_share(request)
            base = base_of(first) if self.cash.relative else 0
        try:
            blob = encode(request, self.spider)
        except SchemaError as error:
            self._refuse(error)
            return False
        host = self.slots.key(request)
        bucket = bucket_of(host, self.frontier.buckets)
        slot = self.queue_slots.name(host, request.meta.get(meta.DEPTH, 0))  # for host turns
        self._outbox.append(Push(bucket, weight, request.priority, blob, fingerprint, slot,
                                 of_seed_host(request), host, share, base))
        if len(self._outbox) >= PUSH_BATCH:
            self._kick(take=False)
        return True  # a duplicate is known only when the batch is pushed

    def _refuse(self, error: SchemaError) -> None:
        """A request the shared crawl cannot carry: said once a kind, counted, not queued."""
        self.counts["tianwang/redis/refused_requests"] += 1
        kind = str(error).split(": ", 1)[-1]
        if kind not in self._refusals:
            self._refusals.add(kind)
            logger.error("Shared crawl: %s (refused; more like it are counted in "
                         "tianwang/redis/refused_requests)", error)

    def _next_request(self) -> Request | None:
        self._collect_done()
        if not self.state.may_hand_out(time.monotonic()):
            return None
        item = self._pick()
        held = len(self._local)
        if held <= self._low_water() + 1 or (item is None and held < self._most_held()):
            # Take more now, not at the next poll: with nothing to pick (every host held
            # here busy, however many are held), up to MOST_TAKES_HELD, rather than leave a
            # free connection idle (past them, no round trip a pick: they cost the node
            # Redis calls and brought nothing more).
            self._kick(force=item is None)
        if item is None:
            return None
        taken, request = self._local.pop(item)
        self._members.setdefault(request.url, deque()).append(taken.member)
        self._out[taken.member] = replace(taken, blob=None)
        request.meta[meta.LEASE] = taken.member
        if self.cash is not None and not request.dont_filter:
            self._stale_cash.append((taken.bucket, request))
        return self._hand_out(item, request, taken.member)

    # --- Redis round trips ---------------------------------------------------------------

    def _kick(self, take: bool = True, force: bool = False) -> None:
        """A round trip now, in a task of its own (one at a time; a fault is the state's)."""
        if self.state.fault or self.state.stopping:
            return
        if self._kick_task is None or self._kick_task.done():
            self._kick_task = asyncio.ensure_future(self._kicked(take, force))

    async def _kicked(self, take: bool, force: bool) -> None:
        try:
            await self._reaching(self.round_trip(take=take, force=force))
            if self._done and self._idle():  # its last acks, queued while that trip ran
                await self._reaching(self.round_trip(take=take))
            if self._acked and self._idle():
                # This node's last acks just went: whether the job is done, now rather than
                # at the next poll (the engine closes as soon as it is told).
                await self._reaching(self._check_end())
                self._nudge_engine()
        except Exception as error:  # noqa: BLE001 - the next poll meets it and its supervisor
            self.counts["tianwang/loops/errors/kick"] += 1  # counts and stops past the bound
            logger.debug("round trip failed: %r", error)

    async def round_trip(self, take: bool = True, force: bool = False) -> bool:
        """Push the outbox, ack the finished requests (after their links are in), and take a
        batch when the local queue runs low: one round trip a shard. True if requests came.
        Whatever it carried goes again with the next one if it fails (pushes and acks are
        idempotent).

        force: the local queue has nothing a pick may take (every host in it is busy), so
        take more, up to MOST_TAKES_HELD held, rather than leave connections idle; no longer so
        once another round trip brought requests while this one waited for its turn.
        """
        held = len(self._local)
        async with self._trips:
            force = force and len(self._local) <= held
            outbox, self._outbox = self._outbox, []
            done, self._done = self._done, []
            counts = self._take_counts(force, fresh=bool(outbox)) if take else (0, 0)
            if not outbox and not done and counts == (0, 0):
                return False
            unreplicated = self.frontier.unreplicated
            try:
                flags, taken = await self.frontier.sync(
                    outbox, done, *counts, cap=self._take_cap() if counts != (0, 0) else None)
            except BaseException:
                self._outbox[:0], self._done[:0] = outbox, done
                raise
            self.stats.inc_value("tianwang/redis/round_trips/frontier")  # the live view
            self._acked = self._acked or bool(done)
            if self.frontier.unreplicated > unreplicated:
                self.counts["tianwang/redis/unreplicated"] += 1
                logger.warning("Redis replica did not confirm a round trip within a second: "
                               "going on without waiting for it for a while (a failover then "
                               "may lose the last round trips)")
            self.counts["tianwang/frontier/links/raised"] += self.frontier.raised
            if outbox:
                new = sum(flags)
                self.counts["scheduler/enqueued"] += new
                self.counts["tianwang/frontier/dedup/filtered"] += len(outbox) - new
            if counts != (0, 0) and not taken:
                self._last_empty_take = time.monotonic()
            added = [(entry, self._add_local(entry)) for entry in taken]
            bad = [entry for entry, item in added if item is None]
            for entry in bad:
                await self.frontier.set_aside(entry.member, entry.blob or b"")
            if self.cash is not None and (taken or self._stale_cash):
                await self._read_cash([item for _entry, item in added if item is not None])
            self.counts["tianwang/redis/taken"] += len(taken) - len(bad)
            self._owe_random(taken)
        if self._chunks and self.frontier.queued < sum(counts):  # ran short: unpack now
            await self._window()
        if taken:
            self._nudge_engine()
        return bool(taken)

    def _take_counts(self, force: bool, fresh: bool) -> tuple[int, int]:
        """(sorted, random) to take now: none while enough is held, or while this node's
        queue was empty a moment ago and nothing was pushed since."""
        held = len(self._local)
        if not self.state.may_take():
            return 0, 0
        if held >= (self._most_held() if force else self._low_water() + 1):
            return 0, 0
        if not fresh and time.monotonic() - self._last_empty_take < POLL_INTERVAL:
            return 0, 0
        # Host picks are made in the local queue, over the hosts of what this node holds: the
        # take leases their share by score, as the sorted picks'.
        config = self.config
        random_share = config.random_picks / (
            config.sorted_picks + config.host_picks + config.random_picks)
        sorted_count = max(1, round(self.batch * (1 - random_share)))
        return sorted_count, int(self._random_owed)

    def _low_water(self) -> int:
        """Held this many or fewer, a node takes: half a take, or enough to cover the
        downloader's free connections, whichever is more, as the local frontier gives a free
        connection a request whenever a host is ready (with half a take only, 0.95 of the
        local crawl's PageRank mass at 1% of the UCI crawl's pages; 1.01 so)."""
        return max(self.batch // 2, self.connections - len(self._out) - 1)

    def _most_held(self) -> int:
        return MOST_TAKES_HELD * self.batch

    def _owe_random(self, taken: list[Taken]) -> None:
        """The random picks owed for what the sorted take brought: M for every N + H (the
        cap may have it bring less than asked, and the random share is of what comes); no
        more than a take's worth."""
        config = self.config
        per_sorted = config.random_picks / (config.sorted_picks + config.host_picks)
        randoms = sum(entry.random for entry in taken)
        owed = self._random_owed + (len(taken) - randoms) * per_sorted - randoms
        self._random_owed = min(float(self.batch), max(0.0, owed))

    def _take_cap(self) -> TakeCap:
        """The cap, and how many requests this node holds of each bucket: queued here or
        handed out."""
        held = Counter(taken.bucket for taken, _request in self._local.values())
        held.update(taken.bucket for member, taken in self._out.items()
                    if member not in self._kept)  # a kept one is in _local too
        return self.bucket_cap, held

    def _keep_local(self, taken: Taken, request: Request) -> bool:
        """A request this node handed out, sent back to wait for its host (robots.txt to
        come, a Retry-After): it waits here under the lease it had, at the place it had. Sent
        through Redis instead, it would wait a round trip and a take, and a kill of this node
        in between would leave its page to be fetched twice."""
        self._kept.add(taken.member)
        restore_dont_filter(request)
        queued = request.meta.pop(meta.QUEUED, None)
        weight, first_turn, cash = (queued[1:] if queued
                                    else (taken.weight, taken.first_turn, 0.0))
        item = self.queue.new_item()
        self._local[item] = (taken, request)
        self._item_cash[item] = cash
        self._push(item, weight, taken.priority, self.place(request),
                   first_turn=first_turn, fresh=False)
        self.counts["tianwang/frontier/requeued"] += 1
        return True

    def _add_local(self, taken: Taken) -> int | None:
        """Queue a request taken from Redis here: its queue item, None for one that does
        not decode."""
        try:
            request = decode(taken.blob or b"", self.spider)
        except SchemaError as error:
            self.counts["tianwang/redis/requests_set_aside"] += 1
            logger.error("Redis: request %s of node %s does not decode (%s): set aside in "
                         "badrequests", taken.member, self.frontier.node, error)
            return None
        item = self.queue.new_item()
        if taken.stored:
            request.meta[meta.STORED] = True
            self.counts["tianwang/redis/stored_before"] += 1
        self._local[item] = (taken, request)
        self._push(item, taken.weight, taken.priority, self.place(request),
                   first_turn=taken.first_turn)
        return item

    async def _read_cash(self, items: list[int]) -> None:
        """The cash in Redis of the requests just taken (what their pages' links will share)
        and, read again, of the pages handed out since the last round trip (links pushed
        after their take raised it): one call for both."""
        fingerprint = self.crawler.request_fingerprinter.fingerprint
        held = [(item, *self._local[item]) for item in items if item in self._local]
        taken = [(item, entry.bucket, request) for item, entry, request in held
                 if not request.dont_filter]
        stale, self._stale_cash = self._stale_cash, []
        cash = await self.frontier.cash_of(
            [(bucket, fingerprint(request)) for _item, bucket, request in taken]
            + [(bucket, fingerprint(request)) for bucket, request in stale])
        for (item, _bucket, _request), value in zip(taken, cash[:len(taken)], strict=True):
            self._item_cash[item] = value
        for (_bucket, request), value in zip(stale, cash[len(taken):], strict=True):
            if request.url in self._page_cash:
                self._page_cash[request.url] = max(value, self._page_cash[request.url])

    def _page_cash_of(self, item: int, request: Request) -> float:
        return self._item_cash.pop(item, 0.0)

    def _requests_done(self, requests: list[Request], tokens: list[Any]) -> None:
        """Queue for ack the requests the engine has finished with."""
        for request, member in zip(requests, tokens, strict=True):
            members = self._members.get(request.url)
            if members is not None:
                if member in members:
                    members.remove(member)
                if not members:
                    del self._members[request.url]
            if member in self._kept:  # its copy waits here under the same lease
                self._kept.discard(member)
                continue
            self._out.pop(member, None)
            self._done.append((member, self._link_key(request)))

    def _link_key(self, request: Request) -> str:
        """The url's link key in Redis (its ack deletes its cash); "" if no link brought any."""
        if self.cash is None or request.dont_filter:
            return ""
        return self.frontier.link_key(self.crawler.request_fingerprinter.fingerprint(request))

    # --- the periodic tasks (supervised: frontier/supervisor.py) -------------------------

    async def _poll(self) -> None:
        if self.state.fault:
            await self._probe()
            return
        await self._reaching(self._poll_once())

    async def _poll_once(self) -> None:
        state = self.state
        if not state.quorum_met:
            # A heartbeat each poll until then: nodes joining at once may each have made the
            # table from a stale view of the others, and a heartbeat mends it.
            await self._heartbeat()
            joined = await self.frontier.table_size()
            if joined >= self.quorum:
                state.quorum_reached()
            else:
                self._notice_quorum(joined)
        self._collect_done()
        await self._take_feed()
        if state.phase == SEEDING and state.start_done:
            await self.round_trip(take=False)  # the start requests are all in Redis now
            await self.frontier.starting(False)
            state.seeds_in()
        await self.round_trip()
        if self._idle():
            await self._check_end()
        self._nudge_engine()

    def _idle(self) -> bool:
        """Nothing held, in flight or to push here, and this node's seeds all pushed."""
        return (not self._local and not self._inflight and not self._outbox
                and not self.state.seeding)

    async def _check_end(self) -> None:
        """Whether the job is finished: every node's queue empty, no lease out."""
        self._acked = False
        state = self.state
        state.job_finished(await self.frontier.finished())
        if not state.finished:
            await self._notice_waiting()

    async def _beat(self) -> None:
        if not self.state.fault:
            await self._reaching(self._heartbeat())

    async def _take_feed(self) -> None:
        """Urls pushed into the job's feed list enter as seeds do: through this node's
        push, so the Bloom filter drops those seen and each goes to its host's node."""
        urls = await self.frontier.take_feed(self.batch)
        for url in urls:
            try:
                request = Request(normalize_seed(url))
            except SeedError as exc:
                logger.warning("feed: %s (skipped)", exc)
                self.counts["tianwang/redis/feed_refused"] += 1
                continue
            self.enqueue_request(request)
            self.counts["tianwang/redis/fed"] += 1
        if urls:
            logger.info("feed: took %d urls pushed into %sfeed", len(urls), self.frontier.prefix)

    async def _notice_waiting(self) -> None:
        """An idle node of a job nobody has seeded says so, every WAIT_NOTICE seconds."""
        now = time.monotonic()
        if now - self._wait_noticed < WAIT_NOTICE or await self.frontier.seeded():
            return
        self._wait_noticed = now
        job = self.frontier.job
        logger.info(
            "node %s waits for seeds: job %s has none yet. Give one node -a seeds=..., or "
            "push urls: python3 -m tianwang feed --redis URL --job %s URL...",
            self.frontier.node, job, job)

    def _notice_quorum(self, joined: int) -> None:
        """A node waiting for the others to join says so, every WAIT_NOTICE seconds."""
        now = time.monotonic()
        if now - self._quorum_noticed < WAIT_NOTICE:
            return
        self._quorum_noticed = now
        logger.info("node %s waits for %d nodes to join (TIANWANG_REDIS_QUORUM) before "
                    "crawling: %d so far", self.frontier.node, self.quorum, joined)

    def _watch(self) -> None:
        """What needs no answer from Redis: a stall said, and the stop past the outage's
        bound (the poll that probes may itself be waiting out the client's retries)."""
        self._notice_slow()
        if self.state.past_bound(time.monotonic()):
            self._give_up()

    def _notice_slow(self) -> None:
        """A call to Redis out for SLOW_NOTICE seconds (Redis stalled): said once, and its
        end: no call out that long any more, and one answered since. (Not "no call out at
        all": this check and the poll run on timers in step, so a poll's call may be out at
        every check.) A stall that ended in a fault is the fault's to tell."""
        now = time.monotonic()
        began = min(self._calls.values(), default=0.0)
        stalled = bool(began) and now - began >= SLOW_NOTICE
        if stalled and not self._slow_said:
            self._slow_said = now
            self.counts["tianwang/redis/stalls"] += 1
            logger.warning("Redis has not answered for %.0f s: node %s pauses its frontier "
                           "(the %d requests it holds are still fetched)", SLOW_NOTICE,
                           self.frontier.node, len(self._local))
        elif not stalled and self._slow_said:
            if self.state.fault:
                self._slow_said = 0.0
            elif self._answered > self._slow_said:
                self._slow_said = 0.0
                logger.warning("Redis answers again: node %s goes on", self.frontier.node)

    def _nudge_engine(self) -> None:
        """Have the engine ask for requests now, not at its 5 s heartbeat."""
        engine = engine_of(self.crawler)
        if engine is not None and (self._local or self.state.finished):
            scrapy_internals.wake(engine)

    async def _heartbeat(self) -> None:
        """Say this node lives, and learn the table: quick, so that a node busy with its
        upkeep never misses its lease (the upkeep is a loop of its own)."""
        membership = await self.frontier.heartbeat(self.lease_seconds)
        self.state.beat(time.monotonic())
        if membership.added and self._owned:
            # Taken for dead (blocked past the lease): the requests held here were given to
            # the queues again, so drop them rather than fetch them twice.
            logger.warning("Taken for dead: node %s drops its local queue", self.frontier.node)
            self._drop_local(set(self._local))
        if membership.reaped:
            self.counts["tianwang/redis/reaped"] += membership.reaped
            logger.info("Requeued %d requests of stopped nodes", membership.reaped)
        table = membership.table or await self.frontier.table()
        owned = {b for b, node in enumerate(table) if node == self.frontier.node}
        if owned != self._owned:
            self._lost |= self._owned - owned  # given back by the upkeep
            self._owned = owned

    async def _upkeep(self) -> None:
        if not self.state.fault:
            await self._reaching(self._keep())

    async def _keep(self) -> None:
        """What moved to other nodes given back, orphaned leases released, the window kept."""
        if self._lost:
            lost, self._lost = self._lost, set()
            await self._give_back(lost)
        await self._release_orphans()
        await self._window()
        if time.monotonic() - self._bloom_checked >= BLOOM_CHECK:
            self._bloom_checked = time.monotonic()
            await self._report_bloom()

    # --- Redis away or full --------------------------------------------------------------

    async def _reaching(self, call: Awaitable[Any]) -> Any:
        """call's result; None if Redis is away or full (the node's state says so then).
        Another error is the caller's (the supervisor counts it)."""
        token = object()
        self._calls[token] = time.monotonic()
        try:
            result = await call
        except RedisError as error:
            kind = fault_of(error)
            if kind is None:
                raise
            self._fault(kind, error)
            return None
        finally:
            del self._calls[token]
        self._answered = time.monotonic()
        return result

    def _fault(self, kind: str, error: BaseException) -> None:
        if not self.state.fault_began(kind, str(error), time.monotonic()):
            return
        self.counts[f"tianwang/redis/{'full' if kind == FULL else 'outages'}"] += 1
        bound = self.state.outage.bound
        waits = f"up to {bound} s" if bound else "as long as it takes"
        if kind == FULL:
            logger.error(
                "Redis is full (%s): node %s pauses, keeping %d pushes and %d acks to send "
                "once Redis takes them, and waits %s (TIANWANG_REDIS_OUTAGE_SECONDS); "
                "raise maxmemory or free memory", error, self.frontier.node, len(self._outbox),
                len(self._done), waits)
        else:
            logger.error(
                "Redis unreachable (%s): node %s goes on with the %d requests it holds and "
                "waits for Redis %s (TIANWANG_REDIS_OUTAGE_SECONDS)", error, self.frontier.node,
                len(self._local), waits)

    async def _probe(self) -> None:
        """During a fault: whether Redis takes calls again (past the bound, _watch stops the
        node: nothing left to probe)."""
        state, now = self.state, time.monotonic()
        lasted = state.outage.lasted(now)
        if state.past_bound(now):
            return
        if not state.outage.probe_due(now):
            if state.outage.notice_due(now):
                logger.warning("Redis still %s after %.0f s: node %s waits",
                               "full" if state.fault == FULL else "unreachable", lasted,
                               self.frontier.node)
            return
        if not await self.frontier.reachable(write=state.fault == FULL):
            return
        state.fault_ended(now)
        self.counts["tianwang/redis/outage_seconds"] += round(lasted)
        logger.warning("Redis answers again after %.0f s: node %s goes on", lasted,
                       self.frontier.node)

    def _give_up(self) -> None:
        engine = engine_of(self.crawler)
        if engine is None or self.state.stopping:
            return
        reason = STOP_REASONS.get(self.state.fault or "", "redis_unreachable")
        self.state.stopping = reason
        self.stats.set_value("tianwang/redis/gave_up", 1)
        what = "full" if self.state.fault == FULL else "unreachable"
        # The bound, not the clock's reading: a loaded machine polls late, the bound is what
        # was passed.
        logger.error("Redis %s for %d s (TIANWANG_REDIS_OUTAGE_SECONDS = %d): node %s stops",
                     what, self.state.outage.bound, self.state.outage.bound, self.frontier.node)
        deferred_from_coro(engine.close_spider_async(reason=reason))

    async def _window(self) -> None:
        """Keep this node's queue in Redis within TIANWANG_REDIS_WINDOW."""
        window = await self.frontier.window(self.window)
        self._chunks = window.chunks
        if window.packed or window.unpacked:
            self.counts["tianwang/redis/packed"] += window.packed
            self.counts["tianwang/redis/unpacked"] += window.unpacked
        for name in window.damaged:
            self.counts["tianwang/redis/chunks_damaged"] += 1
            logger.error("Redis: packed chunk %s of node %s does not decode: set aside in "
                         "%sbadchunks, its requests lost", name, self.frontier.node,
                         self.frontier.prefix)

    async def _release_orphans(self) -> None:
        """Leases this node holds in Redis but not here: a take whose reply was lost (a
        connection cut and the call retried). Without this they would never be fetched. Not
        while a round trip is out: its takes are leased and not here yet."""
        async with self._trips:
            known = {taken.member for taken, _request in self._local.values()}
            known.update(member for member, _slot in self._inflight.values())
            known.update(member for member, _key in self._done)
            orphans = await self.frontier.leased() - known
            if orphans:
                await self.frontier.release(orphans)
                self.counts["tianwang/redis/orphans_released"] += len(orphans)

    async def _give_back(self, buckets: set[int]) -> None:
        """Buckets moved to another node: give it the requests of theirs not yet fetched."""
        async with self._trips:
            items = {item for item, (taken, _) in self._local.items() if taken.bucket in buckets}
            if items:
                await self.frontier.release([self._local[item][0].member for item in items])
                self.counts["tianwang/redis/given_back"] += len(items)
                self._drop_local(items)

    def _drop_local(self, items: set[int]) -> None:
        """Forget local requests: the local queue is rebuilt without them, the others
        pushed again in the order they came (numbered anew by the new queue)."""
        old, self.queue = self.queue, new_queue(self.config, count_first=False)
        local, self._local = self._local, {}
        cash, self._item_cash = self._item_cash, {}
        for item in sorted(local, key=old.arrival):
            taken, request = local[item]
            slot = old.slot(item)
            if item in items:
                self.queue_slots.finished(slot)
                continue
            new = self.queue.new_item()
            self._local[new] = (taken, request)
            if item in cash:
                self._item_cash[new] = cash[item]
            self._enqueue(new, (taken.weight, taken.priority), slot,
                          first_turn=taken.first_turn)
        self._hosts_changed()  # the new queue's slots opened or shut as their hosts are


def open_frontier(redis_config: RedisConfig, config: FrontierConfig) -> ShardedFrontier:
    """This node's view of the job's frontier over its shards: on a cluster a client of each
    shard's master (and of the home's), on one redis-server one client for all (asyncio
    clients, made in the crawl's event loop). Each shard's Bloom filter is sized for its
    share of TIANWANG_EXPECTED_URLS."""
    tags = job_tags(redis_config)
    cluster = redis_config.cluster
    shared = None if cluster else connect_async(redis_config.url)
    bloom = BloomShape.for_capacity(-(-config.expected_urls // len(tags)), config.error_rate)

    def frontier(prefix: str, shard: tuple[int, int]) -> RedisFrontier:
        return RedisFrontier(
            shared or connect_async(redis_config.url, prefix), redis_config.job,
            redis_config.node, redis_config.buckets, bloom, turns=config.host_turns,
            link_weight=config.link_weight, link_relative=config.link_relative,
            first=config.host_first, seed_first=config.seed_host_first,
            replicas=int(cluster), prefix=prefix, shard=shard)

    shards = [frontier(prefix_of(tag), (i, len(tags))) for i, tag in enumerate(tags)]
    home = shards[0] if len(tags) == 1 else frontier(job_prefix(redis_config.job), (0, 1))
    return ShardedFrontier(home, shards)


def _require_shared_order(config: FrontierConfig) -> None:
    """The shared frontier's score has room for MAX_TURNS host turns (tianwang/order.py):
    more would order a shared crawl otherwise than a local one, so it is refused."""
    if config.host_turns > order.MAX_TURNS:
        raise SettingError("TIANWANG_HOST_TURNS", config.host_turns,
                           f"at most {order.MAX_TURNS} in a crawl shared through Redis (the "
                           "room its queue's score has for a host's turns)")


def bucket_cap(config: FrontierConfig) -> int:
    """How many requests of a bucket (a host, or a few) a node holds at most, queued or
    out: four times what a host may have at once, the largest such (DOWNLOAD_SLOTS).

    A take of the best requests by score alone filled a node's hands with one busy host's
    (a seed's site of thousands of pages), fetched a connection or two at a time, while the
    better requests of other hosts waited in Redis: the local frontier picks the best of the
    hosts that are ready. Capped, the take brings the best of the others instead (measured
    on the UCI crawl's graph, with takes of 16: docs/shared-crawl.md, "One order")."""
    largest = max([config.host_rules.concurrency,
                   *(int(entry.get("concurrency", 0))
                     for entry in (config.download_slots or {}).values())])
    return 4 * max(1, largest)


def _require_start_done(settings: Any) -> None:
    """A shared crawl needs StartDoneMiddleware: without its signal this node would be
    seeding forever in the other nodes' eyes, and the crawl would never end."""
    enabled = {
        path if isinstance(path, str) else f"{path.__module__}.{path.__qualname__}": position
        for path, position in settings.getwithbase("SPIDER_MIDDLEWARES").items()
    }
    if enabled.get(START_DONE) is None:
        raise SettingError(
            "SPIDER_MIDDLEWARES", settings.getdict("SPIDER_MIDDLEWARES"),
            f"{START_DONE} enabled (a shared crawl needs to know when a node's seeds are in)",
        )
