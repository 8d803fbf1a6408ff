"""The Redis frontier scheduler: one node of a crawl shared through Redis (docs/design.md 10).

The Tianwang add-on makes it the SCHEDULER when TIANWANG_REDIS_URL is set. Requests a node
finds go, in batches, to the queue in Redis of the node owning their host's bucket
(redisfrontier.py; the
Bloom filter in the same script drops urls seen anywhere). A node takes batches from its own
queue, N sorted for M random as the local frontier picks, leasing them, and picks among them
with the local frontier's own queue (FrontierSchedulerBase: weight order, first come first
served, N sorted / M random, skipping hosts whose downloader slot is full). As every
host is owned by one node, the node's downloader slots are the host's whole state.

A request is acked (its lease dropped) once the engine has finished with it, after the
requests its page produced are in Redis, so a node killed at any point loses nothing: its
leases go back to the queues when its heartbeat key expires (TIANWANG_LEASE_SECONDS), with
its buckets. The crawl ends when every node's queue is empty and no lease is out.

What it learns from the rest of the crawl comes by signals: tianwang.signals.page_stored
(the storage pipeline wrote a page: mark its lease stored in Redis) and
start_requests_done (StartDoneMiddleware: this node's seeds are all pushed).
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

from scrapy import Request, Spider
from scrapy.utils.defer import deferred_from_coro

from tianwang import meta, order, scrapy_internals, signals
from tianwang.config import SettingError
from tianwang.config.frontier import FrontierConfig
from tianwang.config.shared_crawl import RedisConfig
from tianwang.distributed.bloom import BloomShape
from tianwang.distributed.connection import check_redis, connect, job_tags
from tianwang.distributed.mapping import bucket_of
from tianwang.distributed.outage import Outage
from tianwang.distributed.redisfrontier import (
    REDIS_DOWN,
    Push,
    RedisFrontier,
    Taken,
    job_prefix,
)
from tianwang.distributed.schema import SchemaError, decode, encode
from tianwang.distributed.shardedfrontier import ShardedFrontier
from tianwang.distributed.shards import prefix_of
from tianwang.frontier.linkscore import base_of
from tianwang.frontier.queue import FrontierQueue
from tianwang.frontier.scheduler import FrontierSchedulerBase, is_seed, new_queue
from tianwang.frontier.slots import engine_of
from tianwang.seeds import SeedError, normalize_seed

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Self

    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)

# The spider middleware whose signal says this node's start requests are all out.
START_DONE = "tianwang.middlewares.startdone.StartDoneMiddleware"
POLL_INTERVAL = 0.1  # seconds between flushes, acks and refills besides next_request
WAIT_NOTICE = 30.0  # seconds between two "waiting for seeds" lines of an idle node


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
        return cls(frontier, new_queue(config, count_first=False), config, redis_config, crawler)

    def __init__(
        self,
        frontier: ShardedFrontier,
        queue: FrontierQueue,
        config: FrontierConfig,
        redis_config: RedisConfig,
        crawler: Crawler,
    ) -> None:
        super().__init__(queue, config, crawler)
        self.frontier = frontier
        self.lease_seconds = redis_config.lease_seconds
        self.batch = redis_config.batch
        self.quorum = redis_config.quorum
        self.window = redis_config.window
        self._chunks = 0  # chunks of this node's queue packed in Redis, at the last look
        self._quorum_met = self.quorum <= 1
        self._outbox: list[Push] = []
        # local id -> (taken from Redis, its request): leased, pending here
        self._local: dict[int, tuple[Taken, Request]] = {}
        self._next_id = 0
        self._members: dict[str, str] = {}  # url handed out -> member
        # finished, to ack after the outbox is pushed: (member, its url's link key or "")
        self._done: list[tuple[str, str]] = []
        self._owned: set[int] = set()
        self._starting = True
        self._start_done = False  # StartDoneMiddleware said so
        self._finished = False
        self._last_empty_take = 0.0
        self._item_cash: dict[int, float] = {}  # local id -> its url's cash when taken
        self._wait_noticed = 0.0
        self._quorum_noticed = time.monotonic()  # the first notice after WAIT_NOTICE
        self.outage = Outage(redis_config.outage_seconds)
        self._last_beat = time.monotonic()  # the last heartbeat Redis answered
        self._gave_up = False  # the outage passed its bound: the spider is closing
        self._refusals: set[str] = set()  # kinds of requests the schema refused, said once

    # --- Scrapy's scheduler interface ----------------------------------------------------

    @classmethod
    def check_settings(cls, settings: Any, spider_name: str = "") -> None:
        super().check_settings(settings, spider_name)
        _require_start_done(settings)
        _require_shared_order(FrontierConfig.from_settings(settings))
        check_redis(settings, spider_name)

    def open(self, spider: Spider) -> None:
        self.frontier.load_scripts()
        if self.frontier.finished():
            # Its keys stay in Redis: every url it saw is skipped, so nothing new is crawled.
            job = self.frontier.job
            self.stats.set_value("tianwang/redis/job_had_finished", 1)
            logger.warning(
                "job %s has finished already (its keys tianwang:{%s}:* are in Redis): every url "
                "it saw is skipped. To crawl afresh, give a new TIANWANG_REDIS_JOB or delete "
                "the keys (python3 -m tianwang feed --redis URL --job %s --reset)", job, job, job)
        self.frontier.starting(True)
        self._heartbeat()
        signals_ = self.crawler.signals
        signals_.connect(self._page_stored, signal=signals.page_stored)
        signals_.connect(self._start_requests_done, signal=signals.start_requests_done)
        super().open(spider)
        logger.info(
            "Redis frontier: node %s of job %s, %d buckets owned of %d",
            self.frontier.node,
            self.frontier.job,
            len(self._owned),
            self.frontier.buckets,
        )

    def loops(self) -> list[tuple[Callable[[], None], float]]:
        return [(self._while_reachable(self._poll), POLL_INTERVAL),
                (self._while_reachable(self._heartbeat), max(0.2, self.lease_seconds / 3))]

    def close(self, reason: str) -> None:
        super().close(reason)
        self.crawler.signals.disconnect(self._page_stored, signal=signals.page_stored)
        self.crawler.signals.disconnect(
            self._start_requests_done, signal=signals.start_requests_done
        )
        # Whatever this node holds and has not finished goes back for the others.
        unfinished = [taken.member for taken, _request in self._local.values()]
        unfinished += [member for member, _slot in self._inflight.values()]
        if self.outage.down and not self.frontier.reachable():
            self._left_behind(len(unfinished))
        else:
            try:
                self._sync(take=False)
                self.frontier.release(unfinished)
                self.frontier.leave()
                self.counts["tianwang/redis/released"] += len(unfinished)
            except REDIS_DOWN:
                self._left_behind(len(unfinished))
        self._add_counts_to_stats()
        self.slots.close()

    def _left_behind(self, unfinished: int) -> None:
        """Closing without Redis: say what the others will redo."""
        logger.error(
            "Redis unreachable as node %s closes: its %d requests not fetched go back to the "
            "queues when its lease runs out (TIANWANG_LEASE_SECONDS); %d pushes, %d acks and "
            "%d stored marks not sent (links found here are lost, pages done here are "
            "fetched again by another node)", self.frontier.node, unfinished,
            len(self._outbox), len(self._done), self.frontier.marks_unsent)

    def _page_stored(self, item: Any) -> None:
        """The item's page is written (signals.page_stored): say so in Redis before its ack,
        for a kill in between must not get it stored again by the node that fetches it next."""
        url = getattr(item, "requested_url", None)  # a PageItem's first url (before redirects)
        member = self._members.get(url) if url else None
        if member is not None:
            self.frontier.stored(member, send=not self.outage.down)

    def _start_requests_done(self) -> None:
        self._start_done = True

    def has_pending_requests(self) -> bool:
        return bool(self._local or self._outbox) or not self._finished

    def __len__(self) -> int:
        return len(self._local)

    def enqueue_request(self, request: Request) -> bool:
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
                                 is_seed(request), host, share, base))
        if len(self._outbox) >= self.batch:
            self._reaching(self._sync, take=False)
        return True  # a duplicate is known only when the batch is pushed

    def _refuse(self, error: SchemaError) -> None:
        """A request the shared crawl cannot carry: said once a kind, counted, not queued."""
        self.counts["tianwang/redis/refused_requests"] += 1
        kind = str(error).split(": ", 1)[-1]
        if kind not in self._refusals:
            self._refusals.add(kind)
            logger.error("Shared crawl: %s (refused; more like it are counted in "
                         "tianwang/redis/refused_requests)", error)

    def next_request(self) -> Request | None:
        self._collect_done()
        if self._lease_gone():
            return None
        item = self.queue.pop(self.queue_slots.full)
        # Nothing to pick: push the links just found (they may be this node's) and take more
        # now, not at the next poll.
        if item is None and self._reaching(self._sync, force=True):
            item = self.queue.pop(self.queue_slots.full)
        if item is None:
            return None
        taken, request = self._local.pop(item)
        self._members[request.url] = taken.member
        return self._hand_out(item, request, taken.member)

    # --- Redis round trips ---------------------------------------------------------------

    def _sync(self, take: bool = True, force: bool = False) -> bool:
        """One round trip: push the outbox, ack the finished requests (after their links are
        in), and take a batch when the local queue runs low. True if requests came.

        force: the local queue has nothing a pick may take (every host in it is busy), so
        take more, up to 8 batches held, rather than leave connections idle.
        """
        outbox, self._outbox = self._outbox, []
        done, self._done = self._done, []
        counts = self._take_counts(force, fresh=bool(outbox)) if take else (0, 0)
        if not outbox and not done and counts == (0, 0):
            return False
        unreplicated = self.frontier.unreplicated
        try:
            flags, taken = self.frontier.sync(outbox, done, *counts)
        except REDIS_DOWN:  # kept for the next round trip (pushes and acks are idempotent)
            self._outbox[:0], self._done[:0] = outbox, done
            raise
        if self.frontier.unreplicated > unreplicated:
            self.counts["tianwang/redis/unreplicated"] += 1
            logger.warning("Redis replica did not confirm a round trip within a second: going "
                           "on without waiting for it for a while (a failover then may lose "
                           "the last round trips)")
        self.counts["tianwang/frontier/links/raised"] += self.frontier.raised
        if outbox:
            new = sum(flags)
            self.counts["scheduler/enqueued"] += new
            self.counts["tianwang/frontier/dedup/filtered"] += len(outbox) - new
        if counts != (0, 0) and not taken:
            self._last_empty_take = time.monotonic()
        if len(taken) < sum(counts) and self._chunks:  # the queue ran short: unpack now
            self._window()
        first = self._next_id
        for entry in taken:
            self._add_local(entry)
        if self.cash is not None and taken:
            self._learn_cash(range(first, self._next_id))
        self.counts["tianwang/redis/taken"] += len(taken)
        return bool(taken)

    def _take_counts(self, force: bool, fresh: bool) -> tuple[int, int]:
        """(sorted, random) to take now: none while enough is held, or while this node's
        queue was empty a moment ago and nothing was pushed since."""
        held = len(self._local)
        if not self._quorum_met:
            return 0, 0
        if held >= (8 * self.batch if force else self.batch // 2 + 1):
            return 0, 0
        if not fresh and time.monotonic() - self._last_empty_take < POLL_INTERVAL:
            return 0, 0
        # Host picks are made in the local queue, over the hosts of what this node holds: the
        # take leases their share by score, as the sorted picks'.
        config = self.config
        random_share = config.random_picks / (
            config.sorted_picks + config.host_picks + config.random_picks)
        sorted_count = max(1, round(self.batch * (1 - random_share)))
        return sorted_count, self.batch - sorted_count

    def _add_local(self, taken: Taken) -> None:
        try:
            request = decode(taken.blob or b"", self.spider)
        except SchemaError as error:
            self._set_aside(taken, error)
            return
        item = self._next_id
        self._next_id += 1
        if taken.stored:
            request.meta[meta.STORED] = True
            self.counts["tianwang/redis/stored_before"] += 1
        self._local[item] = (taken, request)
        self._push(item, taken.weight, taken.priority, self.slot_name(request),
                   first_turn=taken.first_turn)

    def _set_aside(self, taken: Taken, error: SchemaError) -> None:
        """A request in Redis that is none of the schema (written by something else, or
        damaged): kept in the hash badrequests for a look, its lease dropped, counted."""
        self.frontier.set_aside(taken.member, taken.blob or b"")
        self.counts["tianwang/redis/requests_set_aside"] += 1
        logger.error("Redis: request %s of node %s does not decode (%s): set aside in "
                     "badrequests", taken.member, self.frontier.node, error)

    def _learn_cash(self, items: range) -> None:
        """The cash in Redis of requests just taken: what their pages' links will share."""
        fingerprint = self.crawler.request_fingerprinter.fingerprint
        requests = [self._local[item][1] for item in items]
        filtered = [(item, r) for item, r in zip(items, requests, strict=True) if not r.dont_filter]
        cash = self.frontier.cash_of([(self._local[item][0].bucket, fingerprint(request))
                                      for item, request in filtered])
        for (item, _request), value in zip(filtered, cash, strict=True):
            self._item_cash[item] = value

    def _page_cash_of(self, item: int, request: Request) -> float:
        return self._item_cash.pop(item, 0.0)

    def _requests_done(self, requests: list[Request], tokens: list[Any]) -> None:
        """Queue for ack the requests the engine has finished with."""
        for request in requests:
            self._members.pop(request.url, None)
        self._done.extend(zip(tokens, map(self._link_key, requests), strict=True))

    def _link_key(self, request: Request) -> str:
        """The url's link key in Redis (its ack deletes its cash); "" if no link brought any."""
        if self.cash is None or request.dont_filter:
            return ""
        return self.frontier.link_key(self.crawler.request_fingerprinter.fingerprint(request))

    def _poll(self) -> None:
        if not self._quorum_met:
            # A heartbeat each poll until then: nodes joining at once may each have made the
            # table from a stale view of the others, and a heartbeat mends it.
            self._heartbeat()
            joined = self.frontier.table_size()
            self._quorum_met = joined >= self.quorum
            if not self._quorum_met:
                self._notice_quorum(joined)
        self._collect_done()
        self._take_feed()
        if self._starting and self._start_done:
            self._sync(take=False)  # the start requests are all in Redis now
            self.frontier.starting(False)
            self._starting = False
        self._sync()
        if not self._local and not self._inflight and not self._outbox:
            self._finished = self.frontier.finished()
            if not self._finished:
                self._notice_waiting()
        self._nudge_engine()

    def _take_feed(self) -> None:
        """Urls pushed into the job's feed list enter as seeds do: through this node's
        push, so the Bloom filter drops those seen and each goes to its host's node."""
        urls = self.frontier.take_feed(self.batch)
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

    def _notice_waiting(self) -> None:
        """An idle node of a job nobody has seeded says so, every WAIT_NOTICE seconds."""
        now = time.monotonic()
        if now - self._wait_noticed < WAIT_NOTICE or self.frontier.seeded():
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

    def _nudge_engine(self) -> None:
        """Have the engine ask for requests now, not at its 5 s heartbeat."""
        engine = engine_of(self.crawler)
        if engine is not None and (self._local or self._finished):
            scrapy_internals.wake(engine)

    def _heartbeat(self) -> None:
        membership = self.frontier.heartbeat(self.lease_seconds)
        self._last_beat = time.monotonic()
        if membership.added and self._owned:
            # Taken for dead (blocked past the lease): the requests held here were given to
            # the queues again, so drop them rather than fetch them twice.
            logger.warning("Taken for dead: node %s drops its local queue", self.frontier.node)
            self._drop_local(set(self._local))
        if membership.reaped:
            self.counts["tianwang/redis/reaped"] += membership.reaped
            logger.info("Requeued %d requests of stopped nodes", membership.reaped)
        self._release_orphans()
        self._window()
        table = membership.table or self.frontier.table()
        owned = {b for b, node in enumerate(table) if node == self.frontier.node}
        if owned != self._owned:
            lost = self._owned - owned
            self._owned = owned
            if lost:
                self._give_back(lost)

    # --- Redis away ----------------------------------------------------------------------

    def _while_reachable(self, call: Callable[[], None]) -> Callable[[], None]:
        """call, run while Redis answers; while it does not, a probe now and then instead."""

        def run() -> None:
            if self.outage.down and not self._back():
                return
            self._reaching(call)

        return run

    def _reaching(self, call: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """call's result; None while Redis is away, or if it goes away during the call."""
        if self.outage.down:
            return None
        try:
            return call(*args, **kwargs)
        except REDIS_DOWN as error:
            self.outage.begin(time.monotonic())
            self.counts["tianwang/redis/outages"] += 1
            bound = self.outage.bound
            logger.error(
                "Redis unreachable (%s): node %s goes on with the %d requests it holds and "
                "waits for Redis %s (TIANWANG_REDIS_OUTAGE_SECONDS)", error, self.frontier.node,
                len(self._local), f"up to {bound} s" if bound else "as long as it takes")
            return None

    def _back(self) -> bool:
        """During an outage: whether Redis answers again. Stops the node past the bound."""
        now = time.monotonic()
        lasted = self.outage.lasted(now)
        if self.outage.over(now):
            self._give_up(lasted)
            return False
        if not (self.outage.probe_due(now) and self.frontier.reachable()):
            if self.outage.notice_due(now):
                logger.warning("Redis still unreachable after %.0f s: node %s waits",
                               lasted, self.frontier.node)
            return False
        self.outage.end(now)
        self.counts["tianwang/redis/outage_seconds"] += round(lasted)
        logger.warning("Redis answers again after %.0f s: node %s goes on", lasted,
                       self.frontier.node)
        return True

    def _lease_gone(self) -> bool:
        """Redis away longer than half a lease: the others may take this node for dead and
        give what it holds to another node, so it stops handing requests out (each would be
        fetched twice); its heartbeat says, once Redis is back, whether it was."""
        return self.outage.down and time.monotonic() - self._last_beat > self.lease_seconds / 2

    def _give_up(self, lasted: float) -> None:
        engine = engine_of(self.crawler)
        if engine is None or self._gave_up:
            return
        self._gave_up = True
        self.stats.set_value("tianwang/redis/gave_up", 1)
        logger.error("Redis unreachable for %.0f s (TIANWANG_REDIS_OUTAGE_SECONDS = %d): node "
                     "%s stops", lasted, self.outage.bound, self.frontier.node)
        deferred_from_coro(engine.close_spider_async(reason="redis_unreachable"))

    def _window(self) -> None:
        """Keep this node's queue in Redis within TIANWANG_REDIS_WINDOW."""
        window = self.frontier.window(self.window)
        self._chunks = window.chunks
        if window.packed or window.unpacked:
            self.counts["tianwang/redis/packed"] += window.packed
            self.counts["tianwang/redis/unpacked"] += window.unpacked
        for name in window.damaged:
            self.counts["tianwang/redis/chunks_damaged"] += 1
            logger.error("Redis: packed chunk %s of node %s does not decode: set aside in "
                         "%sbadchunks, its requests lost", name, self.frontier.node,
                         self.frontier.prefix)

    def _release_orphans(self) -> None:
        """Leases this node holds in Redis but not here: a take whose reply was lost (a
        connection cut and the call retried). Without this they would never be fetched."""
        known = {taken.member for taken, _request in self._local.values()}
        known.update(member for member, _slot in self._inflight.values())
        known.update(member for member, _key in self._done)
        orphans = self.frontier.leased() - known
        if orphans:
            self.frontier.release(orphans)
            self.counts["tianwang/redis/orphans_released"] += len(orphans)

    def _give_back(self, buckets: set[int]) -> None:
        """Buckets moved to another node: give it the requests of theirs not yet fetched."""
        items = {item for item, (taken, _) in self._local.items() if taken.bucket in buckets}
        if items:
            self.frontier.release([self._local[item][0].member for item in items])
            self.counts["tianwang/redis/given_back"] += len(items)
            self._drop_local(items)

    def _drop_local(self, items: set[int]) -> None:
        """Forget local requests: the local queue is rebuilt without them."""
        old, self.queue = self.queue, new_queue(self.config, count_first=False)
        for item in sorted(self._local):
            taken, _request = self._local[item]
            slot = old.slot(item)
            if item in items:
                del self._local[item]
                self._item_cash.pop(item, None)
                self.queue_slots.finished(slot)
            else:
                self._enqueue(item, (taken.weight, taken.priority), slot,
                              first_turn=taken.first_turn)


def open_frontier(redis_config: RedisConfig, config: FrontierConfig) -> ShardedFrontier:
    """This node's view of the job's frontier over its shards: on a cluster a client of each
    shard's master (and of the home's), on one redis-server one client for all. Each shard's
    Bloom filter is sized for its share of TIANWANG_EXPECTED_URLS."""
    tags = job_tags(redis_config)
    cluster = redis_config.cluster
    shared = None if cluster else connect(redis_config.url)
    bloom = BloomShape.for_capacity(-(-config.expected_urls // len(tags)), config.error_rate)

    def frontier(prefix: str, shard: tuple[int, int]) -> RedisFrontier:
        return RedisFrontier(
            shared or connect(redis_config.url, prefix), redis_config.job, redis_config.node,
            redis_config.buckets, bloom, turns=config.host_turns, link_weight=config.link_weight,
            link_relative=config.link_relative, first=config.host_first,
            seed_first=config.seed_host_first,
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


def _require_start_done(settings: Any) -> None:
    """A shared crawl needs StartDoneMiddleware: without its signal this node would be
    seeding forever in the other nodes' eyes, and the crawl would never end."""
    enabled = {
        path if isinstance(path, str) else f"{path.__module__}.{path.__qualname__}": order
        for path, order in settings.getwithbase("SPIDER_MIDDLEWARES").items()
    }
    if enabled.get(START_DONE) is None:
        raise SettingError(
            "SPIDER_MIDDLEWARES", settings.getdict("SPIDER_MIDDLEWARES"),
            f"{START_DONE} enabled (a shared crawl needs to know when a node's seeds are in)",
        )
