"""Scrapy's OffsiteMiddleware, without its work for a spider that allows every domain.

Scrapy's checks each request twice (as it is scheduled, and before download): it reads the
spider's allowed_domains again, parses the url (urlparse_cached) and matches its host
against a regex, which for a spider without allowed_domains is "" and matches any host. A
page's links are mostly urls already seen, each scheduled and dropped by the frontier: on
real pages that check was 3% of a crawl's CPU for nothing. Here a spider without
allowed_domains (TIANWANG_ALLOWED_DOMAINS empty, and a spider of its own setting none) is
answered at once; one with them is Scrapy's, which it stays if the spider sets them later.
"""

from __future__ import annotations

from typing import Any

from scrapy import Request, Spider
from scrapy.downloadermiddlewares.offsite import OffsiteMiddleware as ScrapyOffsiteMiddleware


class OffsiteMiddleware(ScrapyOffsiteMiddleware):
    def should_follow(self, request: Request, spider: Spider) -> bool:
        if not getattr(spider, "allowed_domains", None):
            return True  # Scrapy's regex would be "": every host
        return super().should_follow(request, spider)

    def request_scheduled(self, request: Request, spider: Any = None) -> None:
        if getattr(self.crawler.spider, "allowed_domains", None):
            super().request_scheduled(request, spider)
