"""The importance-first scheduler (seed 000): Scrapy's scheduler interface over the frontier.

Order: a request's weight is ``url_weight`` of its url plus ``meta["tianwang_boost"]``; the
queue (FrontierQueue) sorts by (weight, Request.priority), so weight decides and priority
only orders requests of equal weight (redirects, +2, go before their peers; retries, -1,
after; with DEPTH_PRIORITY shallower links first), then first come, first served. It picks
N sorted then M random, skipping hosts whose downloader slot is full and, under a level
limit, requests deeper than their host's shallowest outstanding one (levels.py).
robots.txt requests never reach a scheduler (the middleware downloads them itself).

Dedup: a fixed-size Bloom filter of Scrapy's request fingerprints; ``dont_filter`` skips it.

Under JOBDIR, requests live in an append-only log (store.RequestLog) and a request is marked
done once the engine has finished with it (its response parsed, its items through the
pipelines, its links pushed), so a SIGKILL can at worst refetch the requests in flight.
"""

from __future__ import annotations

import logging
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scrapy import Request, Spider
from scrapy.core.scheduler import BaseScheduler
from scrapy.utils.asyncio import create_looping_call
from scrapy.utils.job import job_dir

from tianwang.config.frontier import FrontierConfig
from tianwang.frontier.dupefilter import BloomDupeFilter
from tianwang.frontier.levels import QueueSlots
from tianwang.frontier.queue import FrontierQueue
from tianwang.frontier.requestlog import Entry, MemoryStore, RequestLog, clip
from tianwang.frontier.slots import DownloaderSlots, engine_of

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Self

    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)

BOOST_META = "tianwang_boost"
STATE_DIR = "tianwang.frontier"
# How often finished requests are looked for besides each next_request call (seconds).
DONE_CHECK_INTERVAL = 0.5


class FrontierScheduler(BaseScheduler):
    """Weighted, alternating, host-aware, resumable: DESIGN.md section 3."""

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        if crawler.settings.get("TIANWANG_REDIS_URL"):  # the one switch to a shared crawl
            from tianwang.distributed.redisscheduler import RedisFrontierScheduler

            return RedisFrontierScheduler.from_crawler(crawler)  # type: ignore[return-value]
        config = FrontierConfig.from_settings(crawler.settings)
        queue = FrontierQueue(config.sorted_picks, config.random_picks, seed=config.seed,
                              turns=config.host_turns)
        dupefilter = BloomDupeFilter(config.expected_urls, config.error_rate)
        jobdir = job_dir(crawler.settings)
        return cls(queue, dupefilter, config.weigher(), jobdir, crawler, levels=config.levels)

    def __init__(
        self,
        queue: FrontierQueue,
        dupefilter: BloomDupeFilter,
        weigh: Callable[[str], int],
        jobdir: str | None,
        crawler: Crawler,
        *,
        levels: bool = False,
    ) -> None:
        self.queue = queue
        self.dupefilter = dupefilter
        self.weigh = weigh
        self.directory = Path(jobdir, STATE_DIR) if jobdir else None
        self.crawler = crawler
        self.stats = crawler.stats
        self.slots = DownloaderSlots(crawler)
        # What the queue picks by: the host, and under a level limit its level (levels.py).
        self.queue_slots = QueueSlots(self.slots, levels)
        self.store: MemoryStore | RequestLog = MemoryStore()
        self._inflight: dict[Request, tuple[int, int]] = {}  # handed out -> (id, queue slot)
        self._logged_duplicate = False
        # Counted here and added to the stats at close: the stats collector costs more per
        # call than the rest of a push.
        self.counts: Counter[str] = Counter()
        self._done_loop: Any = None

    # --- Scrapy's scheduler interface ----------------------------------------------------

    def open(self, spider: Spider) -> None:
        self.spider = spider
        if self.directory is not None:
            self.store = RequestLog(self.directory, spider)
            self._resume(self.store)
        self.slots.open()
        if engine_of(self.crawler) is not None:  # no engine, no requests in flight to watch
            self._done_loop = create_looping_call(self._collect_done)
            self._done_loop.start(DONE_CHECK_INTERVAL, now=False)

    def _resume(self, log: RequestLog) -> None:
        """Rebuild the queue (pushed - done) and the Bloom filter from the log."""
        assert self.directory is not None
        covered = self.dupefilter.load(self.directory / "bloom.bin")
        pending = 0

        def visit(entry: Entry) -> None:
            nonlocal pending
            if entry.fingerprint is not None and entry.item >= covered:
                self.dupefilter.add(entry.fingerprint)
            if not entry.done:
                pending += 1
                slot = self.queue_slots.number(entry.slot)
                self.queue.push(entry.item, (entry.weight, entry.priority), slot)
                self.queue_slots.added(slot)

        log.open(visit)
        if len(log):
            logger.info(
                "Resuming crawl from %s: %d requests pending of %d logged",
                self.directory,
                pending,
                len(log),
            )
            self.stats.set_value("tianwang/frontier/resumed_pending", pending)

    def close(self, reason: str) -> None:
        if self._done_loop is not None and self._done_loop.running:
            self._done_loop.stop()
        self._collect_done()
        self._record_stats()
        if isinstance(self.store, RequestLog) and self.directory is not None:
            self.dupefilter.save(self.directory / "bloom.bin", len(self.store))
        self.store.close()
        self.slots.close()

    def has_pending_requests(self) -> bool:
        return len(self.queue) > 0

    def __len__(self) -> int:
        return len(self.queue)

    def enqueue_request(self, request: Request) -> bool:
        fingerprint = None
        if not request.dont_filter:
            fingerprint = self.crawler.request_fingerprinter.fingerprint(request)
            if fingerprint in self.dupefilter:
                self._filtered(request)
                return False
        weight, priority = clip(
            self.weigh(request.url) + request.meta.get(BOOST_META, 0), request.priority
        )
        name = self.queue_slots.name(self.slots.key(request), request.meta.get("depth", 0))
        # The log first: the filter may only hold urls whose request is safely logged.
        item = self.store.put(request, weight, name, fingerprint)
        if fingerprint is not None:
            self.dupefilter.add(fingerprint)
            self.counts["tianwang/frontier/dedup/added"] += 1
        else:
            self.counts["tianwang/frontier/dedup/dont_filter"] += 1
        slot = self.queue_slots.number(name)
        self.queue.push(item, (weight, priority), slot)
        self.queue_slots.added(slot)
        self.counts["scheduler/enqueued"] += 1
        return True

    def next_request(self) -> Request | None:
        self._collect_done()
        item = self.queue.pop(self.queue_slots.full)
        if item is None:
            return None
        request = self.store.get(item)
        slot = self.queue.slot(item)
        self._inflight[request] = (item, slot)
        self.slots.handed_out(request, self.queue_slots.downloader_slot(slot))
        self.counts["scheduler/dequeued"] += 1
        return request

    # --- internals -----------------------------------------------------------------------

    def _filtered(self, request: Request) -> None:
        self.counts["tianwang/frontier/dedup/filtered"] += 1
        if not self._logged_duplicate:
            self._logged_duplicate = True
            logger.debug(
                "Filtered duplicate request: %s - no more duplicates will be shown", request
            )

    def _collect_done(self) -> None:
        """Mark done the requests the engine has finished with (left its in-progress set)."""
        if not self._inflight:
            return
        inprogress = _engine_inprogress(self.crawler)
        finished = [request for request in self._inflight if request not in inprogress]
        if not finished:
            return
        taken = [self._inflight.pop(request) for request in finished]
        self.store.done([item for item, _slot in taken])
        for request, (_item, slot) in zip(finished, taken, strict=True):
            self.slots.reached(request)
            self.queue_slots.finished(slot)

    def _record_stats(self) -> None:
        for name, count in self.counts.items():
            self.stats.inc_value(name, count)
        self.stats.set_value("tianwang/frontier/sorted_picks", self.queue.picks["sorted"])
        self.stats.set_value("tianwang/frontier/random_picks", self.queue.picks["random"])
        by_weight: Counter[int] = Counter()
        for (weight, _), count in self.queue.pending_by_key().items():
            by_weight[weight] += count
        for weight, count in sorted(by_weight.items()):
            self.stats.set_value(f"tianwang/frontier/pending/w{weight}", count)
        if isinstance(self.store, RequestLog) and self.store.unserializable:
            self.stats.set_value("tianwang/frontier/unserializable", self.store.unserializable)


def _engine_inprogress(crawler: Crawler) -> Any:
    """The requests the engine has not finished with (private in Scrapy 2.19: no signal
    says when a request's response has been parsed and its items stored)."""
    engine = engine_of(crawler)
    slot = getattr(engine, "_slot", None) if engine is not None else None
    return slot.inprogress if slot is not None else ()
