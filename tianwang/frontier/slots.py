"""Which download slots (hosts) are full, for the frontier's host-aware picks.

A slot is full when the requests in it reach its concurrency (CONCURRENT_REQUESTS_PER_DOMAIN
or its DOWNLOAD_SLOTS entry). In it means in Scrapy's downloader slot (``Slot.active``:
transferring or waiting out the slot's delay) or handed to the engine by the frontier and
not yet in the downloader (the engine starts the download on a later loop turn, and
robots.txt middleware holds a host's first request until robots.txt is in).

The slot delay is not a reason to skip a host: with one connection per host the one
request that waits out the delay is the host's only one, as with Scrapy's default
DownloaderAwarePriorityQueue, and skipping hosts in their delay could leave the engine
with nothing to do until its 5 s heartbeat.

Slot names are numbered, so the queue keeps one int per request.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

from scrapy import Request, signals
from scrapy.utils.httpobj import urlparse_cached

from tianwang import meta

if TYPE_CHECKING:
    from scrapy.crawler import Crawler


class DownloaderSlots:
    """Slot numbers, and whether a slot can take one more request now."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.names: list[str] = []
        self._numbers: dict[str, int] = {}
        self._handed: dict[Request, int] = {}  # handed to the engine, not yet in a slot
        self._handed_per_slot: Counter[int] = Counter()
        settings = crawler.settings
        self._default_concurrency = settings.getint("CONCURRENT_REQUESTS_PER_DOMAIN")
        self._per_slot = settings.getdict("DOWNLOAD_SLOTS")

    def open(self) -> None:
        self.crawler.signals.connect(self.reached, signal=signals.request_reached_downloader)

    def close(self) -> None:
        self.crawler.signals.disconnect(self.reached, signal=signals.request_reached_downloader)

    def key(self, request: Request) -> str:
        """The downloader's slot key (Downloader.get_slot_key without per-IP slots)."""
        slot = request.meta.get(meta.DOWNLOAD_SLOT)
        if slot is not None:
            return slot
        return urlparse_cached(request).hostname or ""

    def number(self, name: str) -> int:
        number = self._numbers.get(name)
        if number is None:
            number = self._numbers[name] = len(self.names)
            self.names.append(name)
        return number

    def full(self, number: int) -> bool:
        name = self.names[number]
        engine = engine_of(self.crawler)
        slot = engine.downloader.slots.get(name) if engine is not None else None
        if slot is None:
            active, concurrency = 0, self._concurrency(name)
        else:
            active, concurrency = len(slot.active), slot.concurrency
        return active + self._handed_per_slot[number] >= concurrency

    def _concurrency(self, name: str) -> int:
        return self._per_slot.get(name, {}).get("concurrency", self._default_concurrency)

    def handed_out(self, request: Request, number: int) -> None:
        self._handed[request] = number
        self._handed_per_slot[number] += 1

    def reached(self, request: Request) -> None:
        """The request is in its downloader slot now (or it finished without getting there)."""
        number = self._handed.pop(request, None)
        if number is not None:
            self._handed_per_slot[number] -= 1


def engine_of(crawler: Crawler) -> Any:
    """The crawler's engine, or None before the crawl starts (a component built alone)."""
    try:
        return crawler.engine
    except RuntimeError:  # Scrapy 2.19 raises rather than return None
        return None
