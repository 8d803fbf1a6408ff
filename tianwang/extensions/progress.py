"""A progress line every TIANWANG_PROGRESS_INTERVAL seconds, for an operator watching a crawl:

    progress: stored 1,204 pages (18.3/s), fetched 1,390, pending 5,120 (w5 12, w4 310,
    w3 4,798), refused 75, failed 3

read from the stats alone (the scheduler keeps the pending counts there), so it reaches
into no other component. Scrapy's own per-minute "Crawled N pages" line stays.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

from scrapy import signals
from scrapy.exceptions import NotConfigured
from scrapy.utils.asyncio import create_looping_call

from tianwang.config import get_seconds
from tianwang.outcome import failures, refusals

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)
PENDING = "tianwang/frontier/pending"


class ProgressLog:
    def __init__(self, stats: Any, interval: float) -> None:
        self.stats = stats
        self.interval = interval
        self.task: Any = None
        self.last = (0, time.monotonic())

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> ProgressLog:
        interval = get_seconds(crawler.settings, "TIANWANG_PROGRESS_INTERVAL")
        if not interval:
            raise NotConfigured
        extension = cls(crawler.stats, interval)
        crawler.signals.connect(extension.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(extension.spider_closed, signal=signals.spider_closed)
        return extension

    def spider_opened(self) -> None:
        self.last = (0, time.monotonic())
        self.task = create_looping_call(self.log)
        self.task.start(self.interval, now=False)

    def spider_closed(self) -> None:
        if self.task is not None and self.task.running:
            self.task.stop()

    def log(self) -> None:
        logger.info("progress: %s", self.line(self.stats.get_stats(), time.monotonic()))

    def line(self, stats: dict[str, Any], now: float) -> str:
        stored = stats.get("tianwang/storage/records", 0)
        before, then = self.last
        self.last = (stored, now)
        rate = (stored - before) / max(now - then, 1e-9)
        pending = sorted(((int(key[len(PENDING) + 2:]), n) for key, n in stats.items()
                          if key.startswith(f"{PENDING}/w") and n), reverse=True)
        by_weight = ", ".join(f"w{weight} {n:,}" for weight, n in pending)
        # refused and failed counted as the closing line counts them (tianwang/outcome.py)
        return (f"stored {stored:,} pages ({rate:.1f}/s), "
                f"fetched {stats.get('response_received_count', 0):,}, "
                f"pending {stats.get(PENDING, 0):,}" + (f" ({by_weight})" if by_weight else "")
                + f", refused {sum(refusals(stats).values()):,}, "
                f"failed {sum(failures(stats).values()):,}")
