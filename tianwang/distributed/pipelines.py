"""Marks in Redis, right after the storage pipeline, that a leased request's page is stored.

Why: a node killed after storing a page and before acking its request would have the page
fetched and stored again by the node its lease goes to. With this mark (set in the same
call chain as the write, one round trip later) the next node parses that page for its links
but stores nothing (meta "tianwang_stored", read by the site spider). Placed just after
TianwangStoragePipeline in ITEM_PIPELINES; off (silently) in a local crawl.
"""

from __future__ import annotations

from typing import Any

from scrapy.exceptions import NotConfigured

from tianwang.frontier.slots import engine_of


class StoredMarkPipeline:
    def __init__(self, crawler: Any) -> None:
        self.crawler = crawler

    @classmethod
    def from_crawler(cls, crawler: Any) -> StoredMarkPipeline:
        if not crawler.settings.get("TIANWANG_REDIS_URL"):
            raise NotConfigured  # no message: Scrapy would log it as a warning
        return cls(crawler)

    def process_item(self, item: Any) -> Any:
        engine = engine_of(self.crawler)
        scheduler = getattr(getattr(engine, "_slot", None), "scheduler", None)
        page_stored = getattr(scheduler, "page_stored", None)
        if page_stored is not None:
            page_stored(item)
        return item
