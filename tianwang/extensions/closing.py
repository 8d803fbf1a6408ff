"""A crawl ends on time, and stops when it can no longer keep what it fetches.

Scrapy closes a spider only once every request in flight has finished. A server that
accepts a connection and never answers, a robots.txt asked for again and again, a
Crawl-delay or a Retry-After, each holds the close (a CLOSESPIDER limit, Ctrl-C, SIGTERM)
for minutes. This extension watches for a close to begin; once it has waited
TIANWANG_CLOSE_GRACE seconds it sends tianwang.signals.abandon_in_flight: the schedulers mark
nothing done from then on (what was in flight stays pending in JOBDIR or Redis), the
download handlers cancel their downloads, the robots.txt and back-off middlewares end their
waits, and the requests waiting in the downloader's slots (a delay) are given up here.

It also stops the crawl when storage fails (tianwang.signals.storage_failed: a full disk, a
write error): the reason ("disk_full", "storage_error") is the crawl's finish reason, and the
cause is said in one line.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from scrapy import signals
from scrapy.utils.asyncio import create_looping_call
from scrapy.utils.defer import deferred_from_coro

from tianwang import scrapy_internals
from tianwang import signals as tw_signals
from tianwang.config import get_seconds
from tianwang.httphandler import Abandoned

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)

WATCH_INTERVAL = 0.5  # seconds between two looks at whether a close has begun


class CrawlCloser:
    def __init__(self, crawler: Crawler, grace: float) -> None:
        self.crawler, self.grace = crawler, grace
        self.stats = crawler.stats
        self._watch: Any = None
        self._deadline: Any = None
        self._stopping: str | None = None  # the reason this extension stopped the crawl

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> CrawlCloser:
        grace = get_seconds(crawler.settings, "TIANWANG_CLOSE_GRACE", minimum=0, maximum=3600)
        closer = cls(crawler, grace)
        crawler.signals.connect(closer.opened, signal=signals.spider_opened)
        crawler.signals.connect(closer.closed, signal=signals.spider_closed)
        crawler.signals.connect(closer.storage_failed, signal=tw_signals.storage_failed)
        return closer

    def opened(self) -> None:
        self._watch = create_looping_call(self._look)
        self._watch.start(WATCH_INTERVAL, now=False)

    def closed(self) -> None:
        if self._watch is not None and self._watch.running:
            self._watch.stop()
        if self._deadline is not None and self._deadline.active():
            self._deadline.cancel()

    def storage_failed(self, reason: str, message: str) -> None:
        """Stop the crawl: what it fetches now could not be kept."""
        if self._stopping is not None:
            return
        self._stopping = reason
        logger.error("%s: %s; the crawl stops, and the same command stores the rest once "
                     "there is room", reason.replace("_", " "), message)
        self._close(reason)

    def _close(self, reason: str) -> None:
        engine = self.crawler.engine
        if engine is not None and engine.spider is not None:
            deferred_from_coro(engine.close_spider_async(reason=reason))

    def _look(self) -> None:
        engine = self.crawler.engine
        if self._deadline is not None or not scrapy_internals.closing(engine):
            return
        from twisted.internet import reactor

        in_flight = len(scrapy_internals.in_progress(engine))
        if in_flight:
            logger.info("closing: %d request(s) in flight get %g s to finish", in_flight,
                        self.grace)
        self._deadline = reactor.callLater(self.grace, self._abandon)

    def _abandon(self) -> None:
        """Give up what is still in flight."""
        engine = self.crawler.engine
        in_flight = len(scrapy_internals.in_progress(engine)) if engine is not None else 0
        if not in_flight:
            return
        self.stats.set_value("tianwang/close/abandoned", in_flight)
        logger.info("closing: gave up %d request(s) still in flight after %g s (a resumed "
                    "job fetches them again)", in_flight, self.grace)
        self.crawler.signals.send_catch_log(tw_signals.abandon_in_flight)
        self._give_up_delayed(engine)

    def _give_up_delayed(self, engine: Any) -> None:
        """The requests waiting out a download delay in the downloader's slots."""
        for slot in engine.downloader.slots.values():
            if slot.latercall is not None:
                slot.latercall.cancel()
                slot.latercall = None
            while slot.queue:
                _request, waiting = slot.queue.popleft()
                waiting.errback(Abandoned())
