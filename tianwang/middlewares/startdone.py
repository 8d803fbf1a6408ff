"""Say when the spider's start requests are all out (a spider middleware).

Scrapy's public process_start hook hands each middleware the spider's start iterator; this
one passes every start request through unchanged and, when the iterator ends (or fails), sends
tianwang.signals.start_requests_done. The Redis scheduler waits for it before telling the
other nodes that this node's seeds are all pushed (a crawl must not be seen finished while a
node is still seeding it).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from tianwang import signals


class StartDoneMiddleware:
    def __init__(self, crawler: Any) -> None:
        self.crawler = crawler

    @classmethod
    def from_crawler(cls, crawler: Any) -> StartDoneMiddleware:
        return cls(crawler)

    async def process_start(self, start: AsyncIterator[Any]) -> AsyncIterator[Any]:
        try:
            async for item_or_request in start:
                yield item_or_request
        finally:  # a start iterator that fails is done too (the engine drops it)
            self.crawler.signals.send_catch_log(signals.start_requests_done)
