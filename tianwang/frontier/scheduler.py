"""The importance-first scheduler (seed 000): Scrapy's scheduler interface over the frontier.

FrontierSchedulerBase holds what every frontier shares: the local queue (FrontierQueue over
QueueSlots), the downloader slots, the weight of a request, handing requests out and
learning when the engine has finished with them. Two thin schedulers differ only in where
the requests live: FrontierScheduler in memory or in a request log under JOBDIR (a store
handed to it, as Scrapy's scheduler is handed its queues), RedisFrontierScheduler
(tianwang/distributed/redisscheduler.py) in Redis, shared by the nodes of a crawl. The
Tianwang add-on sets SCHEDULER to one or the other: TIANWANG_REDIS_URL decides.

Order: a request's weight is ``url_weight`` of its url plus ``meta[tianwang.meta.BOOST]``; the
queue (FrontierQueue) sorts by (weight, Request.priority), so weight decides and priority
only orders requests of equal weight (redirects, +2, go before their peers; retries, -1,
after; with DEPTH_PRIORITY shallower links first), then first come, first served. It picks
N sorted then M random, skipping hosts whose downloader slot is full and, under a level
limit, requests deeper than their host's shallowest outstanding one (levels.py).
robots.txt requests never reach a scheduler (the middleware downloads them itself).

Dedup: a fixed-size Bloom filter of Scrapy's request fingerprints; ``dont_filter`` skips it.

Under JOBDIR, requests live in an append-only log (requestlog.RequestLog) and a request is marked
done once the engine has finished with it (its response parsed, its items through the
pipelines, its links pushed), so a SIGKILL can at worst refetch the requests in flight.
Once storage fails (tianwang.signals.storage_failed) or a close gives up what is in flight
(tianwang.signals.abandon_in_flight), nothing more is marked done: a request whose page was
not stored, or whose download was given up, stays pending for the job's next run. A request
log that cannot be written is a storage failure too.
"""

from __future__ import annotations

import logging
from array import array
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scrapy import Request, Spider
from scrapy.core.scheduler import BaseScheduler
from scrapy.utils.asyncio import create_looping_call
from scrapy.utils.defer import deferred_from_coro
from scrapy.utils.httpobj import urlparse_cached
from scrapy.utils.job import job_dir

from tianwang import meta, scrapy_internals, signals
from tianwang.config.frontier import FrontierConfig
from tianwang.formats.diskspace import describe, failure
from tianwang.frontier.codec import UnreadableRequest
from tianwang.frontier.dupefilter import BloomDupeFilter
from tianwang.frontier.levels import SEPARATOR, QueueSlots, split_name
from tianwang.frontier.limits import FrontierLimits
from tianwang.frontier.linkscore import SEED_CASH, LinkCash
from tianwang.frontier.politeness import Politeness
from tianwang.frontier.queue import FrontierQueue, Key
from tianwang.frontier.requestlog import LogEntry, MemoryStore, RequestLog
from tianwang.frontier.slots import HostSlots, engine_of
from tianwang.frontier.supervisor import Supervisor
from tianwang.order import clip_key
from tianwang.sendback import restore_dont_filter
from tianwang.urls import url_host

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Self

    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)

STATE_DIR = "tianwang.frontier"
# How often finished requests are looked for besides each next_request call (seconds).
DONE_CHECK_INTERVAL = 0.5
# How often the pending requests by weight are put in the stats, for the progress line
# (extensions/progress.py) and the stats dump: the count costs one pass over the levels.
PENDING_STATS_INTERVAL = 1.0
PENDING_BY_WEIGHT = "tianwang/frontier/pending/w"
# How often the politeness of hosts with nothing to remember is dropped (seconds).
FORGET_HOSTS_INTERVAL = 60.0
# Links a page is taken to have when its requests do not say (meta OUTLINKS unset: a spider
# other than the site spider): its cash is shared as among this many.
DEFAULT_OUTLINKS = 20
# A logged request that cannot be read back: a failure, in the closing line's "failed".
UNREADABLE = "tianwang/error/unreadable_request"
# Requests a damaged span of the request log hid: never fetched.
LOST_IN_LOG = "tianwang/error/lost_in_request_log"


def is_seed(request: Request) -> bool:
    """A request no page linked to (a seed, a fed url, or their redirects): depth 0."""
    return request.meta.get(meta.DEPTH, 0) == 0


def of_seed_host(request: Request) -> bool:
    """A seed, or a link the spider found to a seed's host (meta.SEED_HOST): its host gets
    TIANWANG_SEED_HOST_FIRST first requests, whichever of its requests reaches the frontier
    first (otherwise the host's first ones, counted under TIANWANG_HOST_FIRST before its seed
    came, leave a seed's extra turns to whatever of the host is found next)."""
    return is_seed(request) or bool(request.meta.get(meta.SEED_HOST))


def new_queue(config: FrontierConfig, count_first: bool = True) -> FrontierQueue:
    """The local queue every frontier picks from: N sorted / H host / M random picks, host
    turns, a host's first requests first (count_first=False: the shared frontier counts them)."""
    return FrontierQueue(
        config.sorted_picks, config.random_picks, seed=config.seed, turns=config.host_turns,
        first=config.host_first if count_first else 0,
        seed_first=config.seed_host_first if count_first else 0, host_picks=config.host_picks,
    )


class FrontierSchedulerBase(BaseScheduler):
    """Weighted, alternating, host-aware picks over a local queue (docs/design.md section 3).

    A subclass says where requests live: it pushes what it holds with _push, under a
    number the queue gives (queue.new_item), hands a popped item out with _hand_out (which
    gives the number back), and is told in _requests_done which handed-out requests the engine
    is done with (their token is what the subclass gave _hand_out).
    """

    # The requests of a host that must wait (robots.txt, Retry-After) stay here: the
    # middlewares send them back rather than hold them (they look for this attribute).
    keeps_host_waits = True

    def __init__(self, queue: FrontierQueue, config: FrontierConfig, crawler: Crawler) -> None:
        self.queue = queue
        self.config = config
        self.weigh: Callable[[str], int] = config.weigher()
        self.crawler = crawler
        self.stats = crawler.stats
        # The hosts, and when each may be sent a request (slots.py, politeness.py).
        politeness = Politeness.from_slots(config.host_rules, config.download_slots)
        self.slots = HostSlots(crawler, politeness, self._host_changed)
        # What the queue picks by: the host, and under a level limit its level (levels.py).
        self.queue_slots = QueueSlots(self.slots, config.levels)
        self._wake_call: Any = None  # wakes the engine when the next waiting host is ready
        self._wake_at = 0.0
        # Counted here and added to the stats at close: the stats collector costs more per
        # call than the rest of a push.
        self.counts: Counter[str] = Counter()
        self._inflight: dict[Request, tuple[Any, int]] = {}  # handed out -> (token, slot)
        self._loops: list[Any] = []
        # Link relations in the weight (linkscore.py): each id's cash, and the cash of the
        # pages in flight, which their links share out (url -> cash).
        self.cash = (LinkCash(config.link_weight, config.link_other_host, config.link_relative)
                     if config.links else None)
        self._page_cash: dict[str, float] = {}
        # Set once storage failed or a close gave up what was in flight: nothing is marked
        # done from then on, so what was not stored is fetched again by the job's next run.
        self.frozen = False
        # What the queue may hold per host, registered domain and in all (limits.py).
        self.limits = FrontierLimits(config.limits)
        self._refusals_logged: set[str] = set()
        self._broken = False  # handing out a request failed: the crawl is stopping

    @classmethod
    def check_settings(cls, settings: Any, spider_name: str = "") -> None:
        """SettingError for the first setting this scheduler cannot run with (spider_name:
        what a shared crawl's job is named by default)."""
        FrontierConfig.from_settings(settings)

    # --- Scrapy's scheduler interface ----------------------------------------------------

    def open(self, spider: Spider) -> None:
        self.spider = spider
        self.slots.open()
        self.crawler.signals.connect(self.freeze, signal=signals.storage_failed)
        self.crawler.signals.connect(self.freeze, signal=signals.abandon_in_flight)
        self.crawler.signals.connect(self.pending_by_host,
                                     signal=signals.pending_hosts_wanted)
        engine = engine_of(self.crawler)
        if engine is None:  # built alone: no engine, no requests in flight to watch
            return
        scrapy_internals.check(engine)
        for call, interval in self.loops():
            # Supervised: an error is counted and retried, never the end of the loop.
            name = getattr(call, "__name__", "loop").strip("_")
            supervisor = Supervisor(name, call, self.counts, self._gave_up)
            loop = create_looping_call(supervisor)
            loop.start(interval, now=False)
            self._loops.append((loop, supervisor))

    def _gave_up(self, cause: str) -> None:
        """A periodic task kept failing: the crawl stops, saying why (exit status 1)."""
        logger.error("Frontier: %s; the crawl stops", cause)
        self.stats.set_value("tianwang/frontier/failed_task", cause)
        engine = engine_of(self.crawler)
        if engine is not None:
            deferred_from_coro(engine.close_spider_async(reason="frontier_error"))

    def loops(self) -> list[tuple[Callable[[], Any], float]]:
        """(call, interval in seconds) to run while the crawl runs; a call may be a coroutine
        function. Each runs supervised (frontier/supervisor.py)."""
        return [(self._collect_done, DONE_CHECK_INTERVAL),
                (self._record_pending, PENDING_STATS_INTERVAL),
                (self._forget_idle_hosts, FORGET_HOSTS_INTERVAL)]

    def _forget_idle_hosts(self) -> None:
        """The politeness of hosts with nothing to remember goes (slots.py keeps the busy)."""
        self.slots.politeness.forget_idle(self.slots.clock())

    def _record_pending(self) -> None:
        """tianwang/frontier/pending (this process's queue) and pending/w<weight>."""
        by_weight = self.queue.pending_by_weight()
        for key in [k for k in self.stats.get_stats() if k.startswith(PENDING_BY_WEIGHT)]:
            self.stats.set_value(key, 0)  # a weight whose requests are all handed out
        for weight, count in sorted(by_weight.items()):
            self.stats.set_value(f"{PENDING_BY_WEIGHT}{weight}", count)
        self.stats.set_value("tianwang/frontier/pending", len(self.queue))

    def pending_by_host(self) -> Counter[str]:
        """This process's pending requests by host (its downloader slot), for the live view
        (signals.pending_hosts_wanted)."""
        counts: Counter[str] = Counter()
        for slot, pending in self.queue.pending_by_slot().items():
            counts[self.queue_slots.host_name(slot)] += pending
        return counts

    def close(self, reason: str) -> None:
        self.crawler.signals.disconnect(self.pending_by_host,
                                        signal=signals.pending_hosts_wanted)
        for loop, supervisor in self._loops:
            if loop.running:
                loop.stop()
            supervisor.cancel()
        if self._wake_call is not None and self._wake_call.active():
            self._wake_call.cancel()
        self._collect_done()

    def freeze(self, **_: Any) -> None:
        """Mark no request done from now on (storage failed, or a close gave up)."""
        self.frozen = True

    def has_pending_requests(self) -> bool:
        return len(self.queue) > 0

    def next_request(self) -> Request | None:
        """The next request to download, or None. An error here would stop Scrapy's engine
        loop for good and hang the crawl: the crawl stops instead, saying why."""
        if self._broken:
            return None
        try:
            return self._next_request()
        except Exception as error:  # whatever the fault, one line and a stop, never a hang
            self._broken = True
            logger.debug("Frontier error handing out a request", exc_info=True)
            self._gave_up(f"handing out a request failed ({type(error).__name__}: {error})")
            return None

    def _next_request(self) -> Request | None:
        raise NotImplementedError

    def __len__(self) -> int:
        return len(self.queue)

    # --- for the subclasses --------------------------------------------------------------

    def place(self, request: Request) -> tuple[str, int]:
        """The host (its downloader slot key) and depth a request is queued under."""
        return self.slots.key(request), request.meta.get(meta.DEPTH, 0)

    def _push(self, item: int, weight: int, priority: int, place: tuple[str, int],
              seed: bool = False, first_turn: int | None = None, fresh: bool = True) -> None:
        """Queue an id. seed: a seed's request (its host gets TIANWANG_SEED_HOST_FIRST
        first requests); first_turn: the id is a host's first request of this turn, as the
        shared frontier says (the queue does not count them itself then); fresh=False: a
        request queued before, sent back (no host's first request again)."""
        known = len(self.queue_slots)
        slot = self.queue_slots.slot(*place)
        self._enqueue(item, (weight, priority), slot, seed, first_turn, fresh)
        if self.queue_slots.added(slot) or len(self.queue_slots) > known:
            self._host_changed(self.queue_slots.host(slot))  # a new slot, or the barrier moved

    def _enqueue(self, item: int, key: Key, slot: int, seed: bool = False,
                 first_turn: int | None = None, fresh: bool = True) -> None:
        """Into the queue, a host's first requests counted by host (the downloader slot)."""
        if first_turn is None:
            host = self.queue_slots.host(slot)
            self.queue.push(item, key, slot, seed, host, fresh)
        else:
            self.queue.push_first(item, key, slot, first_turn)

    def link_share(self, request: Request) -> tuple[float, float]:
        """The cash a request's link brings its url, and that share as a link within the
        host would have brought it (what TIANWANG_LINK_RELATIVE discounts): the seed's for
        a request no page linked to, else its page's cash shared among the page's links
        (more across hosts)."""
        assert self.cash is not None
        parent = request.meta.get(meta.PARENT)
        if parent is None:
            return SEED_CASH, SEED_CASH
        outlinks = request.meta.get(meta.OUTLINKS, DEFAULT_OUTLINKS)
        other_host = url_host(parent) != url_host(request.url)
        share = self.cash.share(self._page_cash.get(parent, 0.0), outlinks, other_host)
        return share, share / self.cash.other_host if other_host else share

    def admit(self, request: Request) -> bool:
        """Whether the frontier may hold one more request of this host (limits.py); a
        refusal is counted as tianwang/filter/<limit> and told by signal."""
        host = urlparse_cached(request).hostname or ""
        reason = None if request.dont_filter else self.limits.refusal(host)
        if reason is None:
            self.limits.admitted(host)
            return True
        self.counts[f"tianwang/filter/{reason}"] += 1
        self.crawler.signals.send_catch_log(signals.request_refused, request=request,
                                            reason=reason)
        if reason not in self._refusals_logged:
            self._refusals_logged.add(reason)
            logger.info("Refused %s: the frontier holds all it may of %r (%s; logged once "
                        "per limit)", request, host, reason)
        return False

    def _page_cash_of(self, item: int, request: Request) -> float:
        """The cash of a request handed out: what its page's links share."""
        return self.cash.cash(item) if self.cash is not None else 0.0

    def _hand_out(self, item: int, request: Request, token: Any) -> Request:
        slot = self.queue.slot(item)
        cash = self._page_cash_of(item, request)
        if self.cash is not None:
            self._page_cash[request.url] = cash
        request.meta[meta.QUEUED] = (request.url, self.queue.weight(item),
                                     self.queue.first_turn(item), cash)
        self._inflight[request] = (token, slot)
        self.limits.left(urlparse_cached(request).hostname or "")
        self.slots.handed_out(request, self.queue_slots.host(slot))
        self.counts["scheduler/dequeued"] += 1
        self._release(item)
        return request

    def _release(self, item: int) -> None:
        """A queue item taken and read: its number (and its cash's place) may be reused."""
        self.queue.release(item)
        if self.cash is not None:
            self.cash.forget(item)

    def _collect_done(self) -> None:
        """Tell the subclass which handed-out requests the engine has finished with."""
        if not self._inflight:
            return
        engine = engine_of(self.crawler)
        inprogress = scrapy_internals.in_progress(engine) if engine is not None else set()
        if self._inflight.keys() <= inprogress:  # none finished: asked at every pick, in C
            return
        finished = [request for request in self._inflight if request not in inprogress]
        taken = [self._inflight.pop(request) for request in finished]
        if self.frozen:
            self.counts["tianwang/frontier/left_pending"] += len(finished)
        else:
            self._requests_done(finished, [token for token, _slot in taken])
        for request, (_token, slot) in zip(finished, taken, strict=True):
            self._page_cash.pop(request.url, None)
            self.slots.finished(request)
            if self.queue_slots.finished(slot):  # the level barrier moved
                self._host_changed(self.queue_slots.host(slot))

    def _requests_done(self, requests: list[Request], tokens: list[Any]) -> None:
        raise NotImplementedError

    # --- which hosts are ready -----------------------------------------------------------

    def _pick(self) -> int | None:
        """The next id of a ready host, or None; when none is ready but some will be at a
        known time, the engine is woken then."""
        for host in self.slots.due():
            self._host_changed(host)
        item = self.queue.pop()
        if item is None and len(self.queue):
            self._wake_when_due()
        return item

    def _host_changed(self, host: int) -> None:
        """Open or shut the host's queue slots: ready, and let through by the level barrier.
        A slot opened that holds requests wakes the engine (it may be idle, waiting for its
        heartbeat, since the last pick found nothing ready)."""
        ready = self.slots.ready(host)
        opened = False
        for slot in self.queue_slots.of_host(host):
            if ready and self.queue_slots.passes(slot):
                opened |= not self.queue.ready(slot) and self.queue.holds(slot)
                self.queue.unblock(slot)
            else:
                self.queue.block(slot)
        if opened:
            self._wake()

    def _hosts_changed(self) -> None:
        """Every host's queue slots, opened or shut afresh (a queue built anew)."""
        for host in range(len(self.slots.names)):
            self._host_changed(host)

    def _wake_when_due(self) -> None:
        when = self.slots.next_due()
        if when is None:
            return
        call = self._wake_call
        if call is not None and call.active():
            if self._wake_at <= when:
                return
            call.cancel()
        from twisted.internet import reactor

        self._wake_at = when
        self._wake_call = reactor.callLater(max(0.0, when - self.slots.clock()), self._wake)

    def _wake(self) -> None:
        engine = engine_of(self.crawler)
        if engine is not None:
            scrapy_internals.wake(engine)

    def _add_counts_to_stats(self) -> None:
        for name, count in self.counts.items():
            self.stats.inc_value(name, count)


class FrontierScheduler(FrontierSchedulerBase):
    """The frontier of one crawl process: requests in memory, or in a log under JOBDIR."""

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        config = FrontierConfig.from_settings(crawler.settings)
        dupefilter = BloomDupeFilter(config.expected_urls, config.error_rate)
        jobdir = job_dir(crawler.settings)
        return cls(new_queue(config), dupefilter, config, jobdir, crawler)

    def __init__(
        self,
        queue: FrontierQueue,
        dupefilter: BloomDupeFilter,
        config: FrontierConfig,
        jobdir: str | None,
        crawler: Crawler,
    ) -> None:
        super().__init__(queue, config, crawler)
        self.dupefilter = dupefilter
        self.directory = Path(jobdir, STATE_DIR) if jobdir else None
        self.store: MemoryStore | RequestLog = MemoryStore()
        self._stored = array("q")  # queue item -> the store's id of its request
        self._logged_duplicate = False
        self._logged_unreadable = False

    def open(self, spider: Spider) -> None:
        if self.directory is not None:
            self.store = RequestLog(self.directory, spider, self.config.log_compact_bytes)
            self._resume(self.store)
        else:
            self.store = MemoryStore(spider)
        super().open(spider)

    def _resume(self, log: RequestLog) -> None:
        """Rebuild the queue (pushed - done) and the Bloom filter from the log."""
        assert self.directory is not None
        covered = self.dupefilter.load(self.directory / "bloom.bin")
        pending = 0

        def visit(entry: LogEntry) -> None:
            nonlocal pending
            if entry.fingerprint is not None and entry.item >= covered:
                self.dupefilter.add(entry.fingerprint)
            if not entry.done:
                pending += 1
                self.limits.admitted(entry.slot.partition(SEPARATOR)[0])
                item = self._item_for(entry.item)
                if self.cash is not None:  # the cash is not logged: only later links count
                    key = None if entry.fingerprint is None else LinkCash.key(entry.fingerprint)
                    self.cash.add(item, key, 0.0)
                self._push(item, entry.weight, entry.priority, split_name(entry.slot))

        log.open(visit)
        self._report_damage(log)
        if covered < log.mark:
            logger.warning(
                "The Bloom filter checkpoint in %s is missing or does not read, and the request "
                "log was compacted: the urls of the %d requests logged before its compaction "
                "are not known, and those linked again will be fetched again",
                self.directory, log.mark)
        if len(log):
            logger.info(
                "Resuming crawl from %s: %d requests pending of %d logged",
                self.directory,
                pending,
                len(log),
            )
            self.stats.set_value("tianwang/frontier/resumed_pending", pending)

    def _report_damage(self, log: RequestLog) -> None:
        """Damaged spans of the log, skipped: the pending requests they hid are lost (the
        pages that linked them are done: their links are not pushed again), counted as
        failed."""
        if not log.damaged:
            return
        start, end, _hidden = log.damaged[0]
        logger.error("The request log in %s has %d damaged span(s), the first at bytes %d-%d, "
                     "left in place and skipped: %d pending requests in them are lost",
                     self.directory, len(log.damaged), start, end, log.hidden_pending)
        self.counts[LOST_IN_LOG] += log.hidden_pending

    def close(self, reason: str) -> None:
        super().close(reason)
        self._record_stats()
        try:
            self.store.close()
        except OSError as error:  # a resumed job fetches again the pages that pushed them
            logger.error("%s", describe(error, f"request log ({self.directory})"))
        else:  # the checkpoint may cover only records written: a resume refuses the others
            self._save_bloom()
        self.slots.close()

    def _save_bloom(self) -> None:
        if isinstance(self.store, RequestLog) and self.directory is not None:
            try:
                self.dupefilter.save(self.directory / "bloom.bin", len(self.store))
            except OSError as error:
                logger.warning("%s; a resumed job rebuilds it from the request log since its "
                               "last checkpoint", describe(error, "Bloom filter checkpoint"))

    def enqueue_request(self, request: Request) -> bool:
        queued = request.meta.get(meta.QUEUED)
        if queued is not None and request.dont_filter and queued[0] == request.url:
            return self._requeue(request, *queued[1:])
        fingerprint = None
        if not request.dont_filter:
            fingerprint = self.crawler.request_fingerprinter.fingerprint(request)
            if fingerprint in self.dupefilter:
                self._filtered(request)
                if of_seed_host(request):  # found by a link first: a seed's host all the same
                    self._seed_host(request)
                if self.cash is not None:
                    self._credit(request, fingerprint)
                return False
        if not self.admit(request):
            return False
        share, first = self.link_share(request) if self.cash is not None else (0.0, 1.0)
        bonus = self.cash.first_bonus(share, first) if self.cash is not None else 0
        # In the ranges the shared frontier's score has room for: the same order in both.
        weight, priority = clip_key(
            self.weigh(request.url) + request.meta.get(meta.BOOST, 0) + bonus, request.priority
        )
        place = self.place(request)
        # The log first: the filter may only hold urls whose request is safely logged.
        try:
            stored = self.store.put(request, weight, self.queue_slots.name(*place), fingerprint)
        except OSError as error:  # the page that linked it is fetched again on the next run
            self._log_failed(error)
            return False
        item = self._item_for(stored)
        if fingerprint is not None:
            self.dupefilter.add(fingerprint)
            self.counts["tianwang/frontier/dedup/added"] += 1
        else:
            self.counts["tianwang/frontier/dedup/dont_filter"] += 1
        if self.cash is not None:
            key = None if fingerprint is None else LinkCash.key(fingerprint)
            self.cash.add(item, key, share, first)
        self._push(item, weight, priority, place, seed=of_seed_host(request))
        self.counts["scheduler/enqueued"] += 1
        return True

    def _requeue(self, request: Request, weight: int, first_turn: int | None,
                 cash: float) -> bool:
        """A request the frontier handed out, sent back (its host must wait, or a retry):
        queued again at the weight and, if it was one, the first-request turn it had."""
        restore_dont_filter(request)
        place = self.place(request)
        try:
            stored = self.store.put(request, weight, self.queue_slots.name(*place), None)
        except OSError as error:
            self._log_failed(error)
            return False
        item = self._item_for(stored)
        self.limits.readmitted(urlparse_cached(request).hostname or "")
        if self.cash is not None:
            self.cash.add(item, None, cash)
        _weight, priority = clip_key(weight, request.priority)
        self._push(item, weight, priority, place, first_turn=first_turn, fresh=False)
        self.counts["tianwang/frontier/requeued"] += 1
        self.counts["scheduler/enqueued"] += 1
        return True

    def _item_for(self, stored: int) -> int:
        """A queue item for the request the store keeps under this id."""
        item = self.queue.new_item()
        if item >= len(self._stored):
            self._stored.extend(array("q", [0]) * (item + 1 - len(self._stored)))
        self._stored[item] = stored
        return item

    def _seed_host(self, request: Request) -> None:
        """The request's host is a seed's (its seed came as a duplicate). The shared
        frontier's push script does this for its nodes."""
        self.queue.seed_host(self.slots.number(self.slots.key(request)))

    def _credit(self, request: Request, fingerprint: bytes) -> None:
        """A link to a url seen before: if it is still pending, its cash grows by the link's
        share, and its weight with it (never down: queue.raise_weight)."""
        assert self.cash is not None
        item = self.cash.find(LinkCash.key(fingerprint))
        if item < 0 or not self.queue.pending(item):
            return
        self.cash.credit(item, self.link_share(request)[0])
        weight, priority = clip_key(
            self.weigh(request.url) + request.meta.get(meta.BOOST, 0)
            + self.cash.weight_bonus(item),
            request.priority,
        )
        if self.queue.raise_weight(item, (weight, priority)):
            self.counts["tianwang/frontier/links/raised"] += 1

    def _next_request(self) -> Request | None:
        self._collect_done()
        while (item := self._pick()) is not None:
            stored = self._stored[item]
            try:
                request = self.store.get(stored)
            except UnreadableRequest as error:
                self._set_aside(item, stored, error)
                continue
            return self._hand_out(item, request, stored)
        return None

    def _set_aside(self, item: int, stored: int, error: UnreadableRequest) -> None:
        """A request the log holds but cannot give back (damaged, or its callback gone from
        the spider): counted as failed, marked done so no later run meets it again, and the
        pick goes on to the next."""
        self.counts[UNREADABLE] += 1
        if not self._logged_unreadable:
            self._logged_unreadable = True
            logger.error("Request %d of the request log in %s cannot be read (%s): set aside; "
                         "later ones are counted as %s", stored, self.directory or "memory",
                         error, UNREADABLE)
        slot = self.queue.slot(item)
        self._release(item)
        self.limits.left(self.queue_slots.host_name(slot))
        if not self.frozen:
            self._requests_done([], [stored])
        if self.queue_slots.finished(slot):
            self._host_changed(self.queue_slots.host(slot))

    def _requests_done(self, requests: list[Request], tokens: list[Any]) -> None:
        try:
            self.store.done(tokens)
        except OSError as error:
            self._log_failed(error)
            return
        if isinstance(self.store, RequestLog) and self.store.needs_compaction:
            self._compact(self.store)

    def _compact(self, log: RequestLog) -> None:
        """The log rewritten without the requests done, the Bloom filter saved first: the
        log no longer holds the urls it would be rebuilt from. A failure (a full disk) leaves
        both as they were: the crawl goes on, and tries again later."""
        assert self.directory is not None
        before = log.size
        try:
            log.flush()  # the checkpoint covers only records written: a kill loses the others
            self.dupefilter.save(self.directory / "bloom.bin", len(log))
            log.compact()
        except OSError as error:
            log.postpone_compaction()
            logger.warning("%s; tried again once twice as much of it is done",
                           describe(error, f"request log compaction ({self.directory})"))
            return
        self.counts["tianwang/frontier/log_compactions"] += 1
        logger.info("Request log in %s compacted: %d requests not done kept, %d bytes to %d",
                    self.directory, log.pending, before, log.size)

    def _log_failed(self, error: OSError) -> None:
        """The request log cannot be written: a storage failure (the crawl stops)."""
        self.counts["tianwang/frontier/log_failed"] += 1
        if not self.frozen:
            self.crawler.signals.send_catch_log(
                signals.storage_failed, **failure(error, f"request log ({self.directory})"))
            self.frozen = True

    def _filtered(self, request: Request) -> None:
        self.counts["tianwang/frontier/dedup/filtered"] += 1
        if not self._logged_duplicate:
            self._logged_duplicate = True
            logger.debug(
                "Filtered duplicate request: %s - no more duplicates will be shown", request
            )

    def _record_stats(self) -> None:
        self._add_counts_to_stats()
        self.stats.set_value("tianwang/frontier/sorted_picks", self.queue.picks["sorted"])
        self.stats.set_value("tianwang/frontier/random_picks", self.queue.picks["random"])
        self.stats.set_value("tianwang/frontier/host_picks", self.queue.picks["host"])
        self.stats.set_value("tianwang/frontier/first_picks", self.queue.picks["first"])
        self._record_pending()
        if isinstance(self.store, RequestLog) and self.store.unserializable:
            self.stats.set_value("tianwang/frontier/unserializable", self.store.unserializable)
