"""Extension for benchmarks: write the crawl's stats as JSON when it closes."""

from __future__ import annotations

import json
from datetime import datetime

from scrapy import signals


class StatsDump:
    def __init__(self, crawler, path: str) -> None:
        self.crawler = crawler
        self.path = path

    @classmethod
    def from_crawler(cls, crawler):
        ext = cls(crawler, crawler.settings.get("BENCH_STATS_FILE"))
        crawler.signals.connect(ext.closed, signal=signals.spider_closed)
        return ext

    def closed(self, spider, reason) -> None:
        stats = {
            key: value.isoformat() if isinstance(value, datetime) else value
            for key, value in self.crawler.stats.get_stats().items()
        }
        with open(self.path, "w", encoding="utf-8") as fh:
            json.dump(stats, fh)
