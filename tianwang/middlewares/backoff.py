"""Back off from a host that answers 429 or 503 with Retry-After, without spending a retry.

Scrapy's RetryMiddleware retries 429 and 503 at once and counts each try: a host that asks
for a minute's rest gets its request two more times within a second, then the page is lost.
Here (before RetryMiddleware sees the response) a 429 or 503 that says when to come back
(`Retry-After: 120`, or an HTTP date) pauses the host for that long, counted from the
moment the answer came, capped at TIANWANG_MAX_RETRY_AFTER seconds, and the request goes back
to the scheduler as it was: its retry count untouched, so it is fetched again after the pause.
The frontier keeps the host's requests meanwhile (tianwang.signals.host_wait, to
tianwang/frontier/politeness.py): none waits in the downloader, and the crawl's connections
go to other hosts. With another scheduler a request of the host waits in this middleware
until the pause is over. Requests of the host already sent (with more than one connection
per host) are not called back.

A request is sent back at most TIANWANG_BACKOFF_MAX_PAUSES times; after that the response
goes on to RetryMiddleware as any 429/503 would (a host that never recovers cannot hold a
request for ever). A 429/503 without a usable Retry-After is left to RetryMiddleware too.
robots.txt's own 429/503 pauses the host but is handed to RobotsMiddleware, which retries it.

A close that gives up what is in flight (tianwang.signals.abandon_in_flight) ends the
requests held here at once (Abandoned: a resumed job fetches them).

Counted: tianwang/backoff/paused, tianwang/backoff/status/<code>, tianwang/backoff/seconds
(total pause asked for, after the cap), tianwang/backoff/capped, tianwang/backoff/gave_up.
"""

from __future__ import annotations

import logging
import time
from email.utils import parsedate_to_datetime
from typing import Any

from scrapy import Request, signals
from scrapy.http import Response
from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet import defer

from tianwang import meta
from tianwang import signals as tw_signals
from tianwang.config import get_int, get_seconds
from tianwang.httphandler import Abandoned
from tianwang.sendback import send_back

logger = logging.getLogger(__name__)

BACKOFF_STATUSES = (429, 503)
PAUSES_KEPT = 10_000  # hosts whose pause is remembered before those over are forgotten


def retry_after_seconds(value: bytes | str | None, now: float) -> float | None:
    """Seconds a Retry-After header asks for (delta-seconds or an HTTP date); None if bad."""
    if value is None:
        return None
    text = value.decode("latin-1") if isinstance(value, bytes) else value
    text = text.strip()
    if text.isdigit():
        return float(text)
    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None or when.tzinfo is None:  # RFC 9110: an IMF-fixdate is always GMT
        return None
    return max(0.0, when.timestamp() - now)


class BackoffMiddleware:
    def __init__(self, crawler: Any, max_pause: float, max_pauses: int) -> None:
        self.crawler, self.stats = crawler, crawler.stats
        self.max_pause, self.max_pauses = max_pause, max_pauses
        self._paused: dict[str, float] = {}  # downloader slot -> monotonic end of its pause
        self._logged = False
        self._holds: set[defer.Deferred] = set()  # the waits of held requests, to cancel
        self.abandoning = False
        # Whether the scheduler keeps a paused host's requests (the frontier); with another
        # scheduler a request of a paused host waits here.
        self.frontier_waits = False

    @classmethod
    def from_crawler(cls, crawler: Any) -> BackoffMiddleware:
        settings = crawler.settings
        middleware = cls(crawler, get_seconds(settings, "TIANWANG_MAX_RETRY_AFTER", minimum=0),
                         get_int(settings, "TIANWANG_BACKOFF_MAX_PAUSES", minimum=0))
        crawler.signals.connect(middleware.abandon, signal=tw_signals.abandon_in_flight)
        crawler.signals.connect(middleware.opened, signal=signals.spider_opened)
        return middleware

    def opened(self) -> None:
        scheduler = self.crawler.engine.scheduler
        self.frontier_waits = bool(getattr(scheduler, "keeps_host_waits", False))

    def abandon(self) -> None:
        """The crawl is closing and gives up what is in flight: no request waits any more."""
        self.abandoning = True
        for hold in list(self._holds):
            hold.cancel()

    def process_response(self, request: Request, response: Response) -> Request | Response:
        if response.status not in BACKOFF_STATUSES:
            return response
        asked = retry_after_seconds(response.headers.get(b"Retry-After"), time.time())
        if asked is None:
            return response
        pause = min(asked, self.max_pause)
        if asked > pause:
            self.stats.inc_value("tianwang/backoff/capped")
        self.pause(request, pause)
        self.stats.inc_value("tianwang/backoff/paused")
        self.stats.inc_value(f"tianwang/backoff/status/{response.status}")
        self.stats.inc_value("tianwang/backoff/seconds", pause)
        if not self._logged:
            self._logged = True
            logger.info("%s answered %d, Retry-After %s: host paused %g s (logged once)",
                        request, response.status, response.headers.get(b"Retry-After"), pause)
        if request.meta.get(meta.ROBOTS):
            return response  # RobotsMiddleware asks again itself
        pauses = request.meta.get(meta.BACKOFF_PAUSES, 0)
        if pauses >= self.max_pauses:
            self.stats.inc_value("tianwang/backoff/gave_up")
            return response
        again = send_back(request)
        again.meta[meta.BACKOFF_PAUSES] = pauses + 1
        return again

    def pause(self, request: Request, seconds: float) -> None:
        """No request to the request's host (its downloader slot) for `seconds` from now:
        the frontier keeps them (tianwang.signals.host_wait)."""
        if seconds <= 0:
            return
        key = self.crawler.engine.downloader.get_slot_key(request)
        now = time.monotonic()
        until = max(now + seconds, self._paused.get(key, 0.0))
        if len(self._paused) >= PAUSES_KEPT:  # the pauses over are forgotten
            self._paused = {slot: end for slot, end in self._paused.items() if end > now}
        self._paused[key] = until
        self.crawler.signals.send_catch_log(tw_signals.host_wait, key=key, until=until,
                                            reason="retry_after")

    async def process_request(self, request: Request) -> Request | None:
        """A request of a paused host (one the frontier handed out as the pause was being
        said, or with another scheduler): back to the frontier, or, with another scheduler,
        held here until the pause is over."""
        if not self._paused:
            return None
        key = self.crawler.engine.downloader.get_slot_key(request)
        while key in self._paused:
            wait = self._paused[key] - time.monotonic()
            if wait <= 0:
                del self._paused[key]
                return None
            if self.frontier_waits:  # the frontier keeps the host's requests till then
                self.stats.inc_value("tianwang/backoff/sent_back")
                return send_back(request)
            self.stats.inc_value("tianwang/backoff/held")
            await self._hold(wait)
        return None

    async def _hold(self, seconds: float) -> None:
        """Wait, or end in Abandoned when the crawl gives up what is in flight."""
        if self.abandoning:
            raise Abandoned
        from twisted.internet import reactor, task

        hold = task.deferLater(reactor, seconds, lambda: None)
        self._holds.add(hold)
        try:
            await maybe_deferred_to_future(hold)
        except defer.CancelledError:
            raise Abandoned from None
        finally:
            self._holds.discard(hold)
