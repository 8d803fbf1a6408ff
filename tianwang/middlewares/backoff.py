"""Back off from a host that answers 429 or 503 with Retry-After, without spending a retry.

Scrapy's RetryMiddleware retries 429 and 503 at once and counts each try: a host that asks
for a minute's rest gets its request two more times within a second, then the page is lost.
Here (before RetryMiddleware sees the response) a 429 or 503 that says when to come back
(`Retry-After: 120`, or an HTTP date) pauses the host for that long, counted from the
moment the answer came, capped at TIANWANG_MAX_RETRY_AFTER seconds, and the request goes back
to the scheduler as it was: its retry count untouched, so it is fetched again after the pause.
The host's downloader slot takes no request meanwhile (its concurrency is 0, so the
frontier, which skips hosts whose slot is full, hands out requests of other hosts only), and
a request of the host that comes all the same waits in this middleware until the pause is
over. Requests of the host already sent (with more than one connection per host) are not
called back.

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

from scrapy import Request
from scrapy.http import Response
from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet import defer

from tianwang import meta
from tianwang import signals as tw_signals
from tianwang.config import get_int, get_seconds
from tianwang.httphandler import Abandoned

logger = logging.getLogger(__name__)

BACKOFF_STATUSES = (429, 503)


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
        self._closed: dict[str, tuple[Any, int]] = {}  # paused slot -> (it, its concurrency)
        self._logged = False
        self._holds: set[defer.Deferred] = set()  # the waits of held requests, to cancel
        self.abandoning = False

    @classmethod
    def from_crawler(cls, crawler: Any) -> BackoffMiddleware:
        settings = crawler.settings
        middleware = cls(crawler, get_seconds(settings, "TIANWANG_MAX_RETRY_AFTER", minimum=0),
                         get_int(settings, "TIANWANG_BACKOFF_MAX_PAUSES", minimum=0))
        crawler.signals.connect(middleware.abandon, signal=tw_signals.abandon_in_flight)
        return middleware

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
            return response  # RobotsMiddleware waits and asks again itself
        pauses = request.meta.get(meta.BACKOFF_PAUSES, 0)
        if pauses >= self.max_pauses:
            self.stats.inc_value("tianwang/backoff/gave_up")
            return response
        again = request.replace(dont_filter=True)  # the scheduler's filter saw it already
        again.meta[meta.BACKOFF_PAUSES] = pauses + 1
        return again

    async def process_request(self, request: Request) -> None:
        """Hold a request of a paused host until its pause is over."""
        key = self.crawler.engine.downloader.get_slot_key(request)
        while key in self._paused:
            wait = self._paused[key] - time.monotonic()
            if wait <= 0:
                self._resume(key)  # before the request enters the slot: its concurrency back
                return
            self.stats.inc_value("tianwang/backoff/held")
            await self._hold(wait)

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

    def pause(self, request: Request, seconds: float) -> None:
        """Pause the request's host (its downloader slot) for `seconds` from now.

        The slot's concurrency is 0 meanwhile, if nothing waits in it: the frontier, which
        skips hosts whose slot is full, gives the host no request, and the engine's
        capacity goes to other hosts. A request of the host that reaches this middleware all
        the same (another scheduler, a slot Scrapy collected and made again) waits here.
        """
        if seconds <= 0:
            return
        downloader = self.crawler.engine.downloader
        key = downloader.get_slot_key(request)
        until = max(time.monotonic() + seconds, self._paused.get(key, 0.0))
        self._paused[key] = until
        slot = downloader.slots.get(key)
        # A request already queued in the slot would wait for a turn that nothing gives it
        # once the concurrency is back: only an empty slot is closed.
        if slot is not None and key not in self._closed and not slot.queue:
            self._closed[key] = (slot, slot.concurrency)
            slot.concurrency = 0
        from twisted.internet import reactor

        reactor.callLater(until - time.monotonic(), self._resume_if_over, key)

    def _resume_if_over(self, key: str) -> None:
        until = self._paused.get(key)
        if until is not None and until <= time.monotonic() + 0.001:
            self._resume(key)

    def _resume(self, key: str) -> None:
        self._paused.pop(key, None)
        closed = self._closed.pop(key, None)
        if closed is not None:
            slot, concurrency = closed
            # A Crawl-delay read during the pause (RobotsMiddleware) set one connection.
            later = self.crawler.engine.downloader.per_slot_settings.get(key, {})
            slot.concurrency = min(concurrency, later.get("concurrency", concurrency))

