"""Python's cyclic garbage collector paced for a crawl's heap.

CPython 3.11 collects its youngest generation every 700 net new objects and, once enough
objects have survived into the oldest one, scans the whole heap. A polite crawl of 10,000
hosts keeps its pending requests alive for the host's delay, so they all reach the oldest
generation, and a full collection of 200,000 to 300,000 objects ran every 3.5 s for 100 to
200 ms: the event loop stood still while 64 downloads waited (the same pause, 0.6 s over
1.7 million objects, in the test web's server). The garbage a crawl makes in cycles is
Twisted's per-request client objects (parser, request, response, headers: about 30 small
objects a request, no body), so a younger generation 70 times larger holds a few MB of it
at most and lets almost every request's objects die young. While the crawl runs the
thresholds are TIANWANG_GC_THRESHOLD; they are put back when it closes.
"""

from __future__ import annotations

import gc
import time
from typing import TYPE_CHECKING, Any

from scrapy import signals
from scrapy.exceptions import NotConfigured

from tianwang.config import SettingError

if TYPE_CHECKING:
    from scrapy.crawler import Crawler


def thresholds(values: list) -> tuple[int, ...]:
    """The setting's values as gc.set_threshold takes them: one to three whole numbers >= 0,
    the first above 0 (0 would turn automatic collection off, which a crawl must not)."""
    try:
        numbers = tuple(int(value) for value in values)
    except (TypeError, ValueError):
        numbers = ()
    if not 1 <= len(numbers) <= 3 or min(numbers) < 0 or numbers[0] == 0:
        raise SettingError("TIANWANG_GC_THRESHOLD", ",".join(map(str, values)),
                           "one to three whole numbers >= 0, the first above 0 "
                           "(gc.set_threshold's), or nothing for Python's own")
    return numbers


class GarbageCollection:
    def __init__(self, wanted: tuple[int, ...], stats: Any) -> None:
        self.wanted, self.stats = wanted, stats
        self.before: tuple[int, ...] | None = None
        self.started = 0.0

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> GarbageCollection:
        try:
            values = crawler.settings.getlist("TIANWANG_GC_THRESHOLD")
        except (TypeError, ValueError):  # one number, as a project's settings.py may write it
            values = [crawler.settings.get("TIANWANG_GC_THRESHOLD")]
        if not values:
            raise NotConfigured("TIANWANG_GC_THRESHOLD is empty: Python's own thresholds")
        extension = cls(thresholds(values), crawler.stats)
        crawler.signals.connect(extension.engine_started, signal=signals.engine_started)
        crawler.signals.connect(extension.engine_stopped, signal=signals.engine_stopped)
        return extension

    def engine_started(self) -> None:
        self.before = gc.get_threshold()
        gc.set_threshold(*self.wanted)
        gc.callbacks.append(self.collected)

    def engine_stopped(self) -> None:
        if self.before is not None:
            gc.set_threshold(*self.before)
            gc.callbacks.remove(self.collected)
            self.before = None

    def collected(self, phase: str, info: dict[str, int]) -> None:
        """Counts each generation's collections and the longest pause (the report's
        `gc/` figures: what the event loop stood still for)."""
        if phase == "start":
            self.started = time.perf_counter()
            return
        self.stats.inc_value(f"gc/collections/{info['generation']}")
        pause = round(1000 * (time.perf_counter() - self.started), 1)
        self.stats.max_value("gc/longest_pause_ms", pause)
