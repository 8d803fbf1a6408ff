"""The hosts of the frontier and when each is ready: politeness.py's rules, fed by the crawl.

Hosts are downloader slot keys (the host name, or a request's DOWNLOAD_SLOT), numbered so
the queue keeps one int per request. HostSlots tells politeness.Politeness what happens to
each host and asks it when the host may be sent its next request:

- the frontier hands a request out (``handed_out``), Scrapy's downloader starts it
  (``request_reached_downloader``) and ends it (``request_left_downloader``), or the engine
  finishes one that never reached the downloader (``finished``: refused by a middleware, or
  sent back to the frontier). A request the frontier did not hand out (robots.txt) counts
  from the moment it reaches the downloader;
- a middleware says a host must wait (tianwang.signals.host_wait: its robots.txt is being
  fetched or is unavailable, a 429/503 Retry-After), may go (host_go), or has a Crawl-delay
  (host_delay).

Each change goes to the scheduler (``on_change(host)``), which opens or shuts the host's
queue slots; a host that will be ready at a known time waits in a heap of times (``due``).

The downloader's own delay is set to 0 on every slot it makes: the frontier keeps the
delay, so a request handed out starts at once and never waits in a downloader slot, holding
one of the crawl's CONCURRENT_REQUESTS while it does.
"""

from __future__ import annotations

import heapq
import math
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from scrapy import Request, signals
from scrapy.utils.httpobj import urlparse_cached

from tianwang import meta
from tianwang import signals as tw_signals
from tianwang.frontier.politeness import Politeness
from tianwang.urls import hostname

if TYPE_CHECKING:
    from scrapy.crawler import Crawler


class HostSlots:
    """Host numbers, the politeness of each, and when each is ready."""

    def __init__(self, crawler: Crawler, politeness: Politeness,
                 on_change: Callable[[int], None],
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.crawler = crawler
        self.politeness = politeness
        self.on_change = on_change
        self.clock = clock
        self.names: list[str] = []
        self._numbers: dict[str, int] = {}
        self._open: dict[Request, tuple[int, bool]] = {}  # not ended -> (host, reached)
        self._times: list[tuple[float, int]] = []  # (when a host is ready, host)

    def _receivers(self) -> list[tuple[Any, Any]]:
        return [(self.reached, signals.request_reached_downloader),
                (self.left, signals.request_left_downloader),
                (self.wait, tw_signals.host_wait),
                (self.go, tw_signals.host_go),
                (self.delay, tw_signals.host_delay)]

    def open(self) -> None:
        for receiver, signal in self._receivers():
            self.crawler.signals.connect(receiver, signal=signal)

    def close(self) -> None:
        for receiver, signal in self._receivers():
            self.crawler.signals.disconnect(receiver, signal=signal)

    def key(self, request: Request) -> str:
        """The downloader's slot key (Downloader.get_slot_key without per-IP slots)."""
        slot = request.meta.get(meta.DOWNLOAD_SLOT)
        if slot is not None:
            return slot
        # Read off the url when it is of the usual shape: a shared crawl's node pushes the
        # links it finds to Redis, and a parse cached on their Request objects is never used.
        host = hostname(request.url)
        return host if host is not None else urlparse_cached(request).hostname or ""

    def number(self, name: str) -> int:
        number = self._numbers.get(name)
        if number is None:
            number = self._numbers[name] = len(self.names)
            self.names.append(name)
        return number

    def ready(self, host: int) -> bool:
        """Whether the host may be sent a request now; if it will be at a known time, that
        time is kept for ``due``."""
        at = self.politeness.ready_at(self.names[host])
        if at <= self.clock():
            return True
        if at != math.inf:
            heapq.heappush(self._times, (at, host))
        return False

    def due(self) -> list[int]:
        """The hosts whose time has come since they were found not ready."""
        now, times, hosts = self.clock(), self._times, []
        while times and times[0][0] <= now:
            hosts.append(heapq.heappop(times)[1])
        return hosts

    def next_due(self) -> float | None:
        """When the next host waiting for its time is ready (monotonic seconds), if any."""
        return self._times[0][0] if self._times else None

    # --- what happens to requests --------------------------------------------------------

    def handed_out(self, request: Request, host: int) -> None:
        self._open[request] = (host, False)
        self.politeness.handed(self.names[host])
        self.on_change(host)

    def reached(self, request: Request, **_: Any) -> None:
        """The request is in its downloader slot: the frontier's starts now (the slot's own
        delay goes: the frontier kept it). One not the frontier's (robots.txt read again)
        waits there for the host's delay, if it is not over."""
        name = request.meta.get(meta.DOWNLOAD_SLOT) or self.key(request)
        now, wait = self.clock(), 0.0
        opened = self._open.get(request)
        if opened is None:
            host = self.number(name)
            wait = max(0.0, self.politeness.start_at(name) - now)
            self.politeness.handed(name)
        else:
            host = opened[0]
        self._open[request] = (host, True)
        self.politeness.started(name, now + wait)
        slot = _downloader_slot(self.crawler, name)
        if slot is not None:
            slot.delay, slot.jitter = wait, 0
            if wait:
                slot.lastseen = now
        self.on_change(host)

    def left(self, request: Request, **_: Any) -> None:
        """The request's download ended (an answer, or an error)."""
        self._end(request, reached=True)

    def finished(self, request: Request) -> None:
        """The engine is done with a request the frontier handed out; it ends here if it
        never reached the downloader (a middleware refused it, or sent it back)."""
        self._end(request, reached=False)

    def _end(self, request: Request, reached: bool) -> None:
        opened = self._open.pop(request, None)
        if opened is None:
            return
        host, started = opened
        self.politeness.ended(self.names[host], self.clock(), reached=reached and started)
        self.on_change(host)

    # --- what middlewares say of hosts ---------------------------------------------------

    def wait(self, key: str, until: float, reason: str, **_: Any) -> None:
        self.politeness.wait(key, until, reason)
        self.on_change(self.number(key))

    def go(self, key: str, reason: str, **_: Any) -> None:
        self.politeness.go(key, reason)
        self.on_change(self.number(key))

    def delay(self, key: str, seconds: float | None, **_: Any) -> None:
        self.politeness.set_crawl_delay(key, seconds, self.clock())
        self.on_change(self.number(key))


def _downloader_slot(crawler: Crawler, name: str) -> Any:
    engine = engine_of(crawler)
    return engine.downloader.slots.get(name) if engine is not None else None


def engine_of(crawler: Crawler) -> Any:
    """The crawler's engine, or None before the crawl starts (a component built alone)."""
    try:
        return crawler.engine
    except RuntimeError:  # Scrapy 2.19 raises rather than return None
        return None
