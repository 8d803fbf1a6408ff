"""Keep a share's crawl out of the key paths of other shares (site partition, docs/design.md 9).

The rule is the spider's share (tianwang/share.py, from `-a partition= -a share=`), which the
spider announces with tianwang.signals.share_opened as it opens; a crawl without one is not
filtered. As Scrapy's OffsiteMiddleware, a request is refused when it is
scheduled, so it never waits in the frontier, and again before download for one that
bypassed the scheduler. A redirect is a new request and passes through both: a share never
follows a redirect into another share's key path, except the homepage's own redirects (the
homepage is every share's). robots.txt is always allowed: every share obeys its site's rules,
and it is no page of the site.
"""

from __future__ import annotations

import logging
from typing import Any

from scrapy import Request
from scrapy import signals as scrapy_signals
from scrapy.exceptions import IgnoreRequest

from tianwang import meta, signals
from tianwang.recent import RecentSet
from tianwang.share import Share
from tianwang.urls import path_key

logger = logging.getLogger(__name__)


class PartitionMiddleware:
    def __init__(self, stats: Any) -> None:
        self.stats = stats
        self.share: Share | None = None
        self._logged = RecentSet()  # key paths whose first refusal was logged, the newest
        self.signals: Any = None

    @classmethod
    def from_crawler(cls, crawler: Any) -> PartitionMiddleware:
        middleware = cls(crawler.stats)
        middleware.signals = crawler.signals
        crawler.signals.connect(middleware.share_opened, signal=signals.share_opened)
        return middleware

    def share_opened(self, share: Share | None) -> None:
        self.share = share
        if share is not None:
            # Only a share's crawl listens: a signal's every receiver costs each scheduled
            # request (a page's links, mostly already seen), 1% of a crawl's CPU.
            self.signals.connect(self.request_scheduled, signal=scrapy_signals.request_scheduled)
            logger.info("Crawling share %d of %d of the partition of %d sites",
                        share.index, share.plan_file.crawlers, len(share.plan_file.sites))

    def request_scheduled(self, request: Request) -> None:
        self.process_request(request)

    def process_request(self, request: Request) -> None:
        share = self.share
        if share is None or _is_robots(request.url):
            return
        chain = request.meta.get(meta.REDIRECT_URLS)  # set by RedirectMiddleware
        if share.allows(request.url, chain[0] if chain else None):
            return
        self.stats.inc_value("tianwang/partition/refused")
        key = path_key(request.url)
        if key not in self._logged:  # one line per key path, not one per url
            self._logged.add(key)
            logger.info("Refused %s: key path %s is another share's (first for it)", request, key)
        raise IgnoreRequest(f"partition: {key} is another share's key path")


def _is_robots(url: str) -> bool:
    rest = url.partition("://")[2]
    return rest.split("?", 1)[0].endswith("/robots.txt") and rest.count("/") == 1
