"""The `refresh` spider: revisit the stored pages that are due (docs/design.md 8, issue 6).

    scrapy crawl refresh -s TIANWANG_DATA_DIR=data [-a now=EPOCH] [-a all=1]

Reads the visit history a crawl with TIANWANG_CHANGES=1 left in TIANWANG_DATA_DIR, picks the
urls due under TIANWANG_REVISIT_POLICY (tianwang/analysis/revisits.py) and asks each with
If-None-Match / If-Modified-Since. A 304 is recorded as an unchanged visit; a page whose
content blocks changed is stored as a new record (the change pipeline drops an unchanged
one). Order: class F1, then F2, entry pages first within a class. On an entry page, links
the history has never seen (in-host, in content or navigation blocks) are fetched before any
further revisit, and recorded as first visits.

With TIANWANG_PAGE_TYPES (on by default) the history's urls are typed as seed 001 does
(tianwang/analysis/pagetypes.py: entry, stable, link; TIANWANG_LINK_PAGE_MIN_LINKS block
links make a link page) and the policy's classes follow the types: an entry page is F1, a
stable page F2 whatever its estimate, so a stable page is not revisited like a hub.

`now` is the time revisits are due by (default: this machine's clock; a test web's clock
for tests); `all=1` revisits every url whatever its due time.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

from scrapy import Request, Spider
from scrapy.http import Response

from tianwang.analysis.blocks import block_links, segment
from tianwang.analysis.entry import in_host_links, is_entry, new_link_share
from tianwang.analysis.pagetypes import PAGE_TYPES, page_types
from tianwang.analysis.revisits import POLICIES, Due, due, url_rates
from tianwang.config import SettingError, get_bool, get_int, get_nonempty_str, get_share
from tianwang.formats.history import FILE_NAME, HistoryStore
from tianwang.httpheaders import charset
from tianwang.items import NotModifiedItem
from tianwang.spiders.site import media_type, page_item

NEW_LINK_PRIORITY = 100  # new links of entry pages go before every revisit
CLASS_PRIORITY = {1: 20, 2: 10}  # F1 before F2 ...
ENTRY_PRIORITY = 5  # ... and entry pages first within a class


class RefreshSpider(Spider):
    name = "refresh"
    custom_settings = {
        "TIANWANG_CHANGES": True,
        # Scrapy's own scheduler: revisit order is Request.priority, not the URL weight.
        "SCHEDULER": "scrapy.core.scheduler.Scheduler",
        "HTTPCACHE_ENABLED": False,  # a cached answer would hide the server's 304 or change
    }
    plan: list[Due]
    known: set[str]
    previous_links: dict[str, tuple[str, ...]]

    def __init__(self, now: str | None = None, all: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.now_arg, self.everything = now, all not in (None, "", "0", "false")

    @classmethod
    def from_crawler(cls, crawler: Any, *args: Any, **kwargs: Any) -> RefreshSpider:
        spider = super().from_crawler(crawler, *args, **kwargs)
        settings = crawler.settings
        policy = settings.get("TIANWANG_REVISIT_POLICY")
        if policy not in POLICIES:
            raise SettingError("TIANWANG_REVISIT_POLICY", policy, " or ".join(POLICIES))
        low = get_int(settings, "TIANWANG_MIN_REVISIT", minimum=1)
        high = get_int(settings, "TIANWANG_MAX_REVISIT", minimum=low)
        budget = get_int(settings, "TIANWANG_REVISIT_BUDGET", minimum=0)
        spider.min_links = get_int(settings, "TIANWANG_ENTRY_MIN_LINKS", minimum=1)
        spider.min_share = get_share(settings, "TIANWANG_ENTRY_NEW_SHARE")
        spider.typed = get_bool(settings, "TIANWANG_PAGE_TYPES")
        spider.link_min = get_int(settings, "TIANWANG_LINK_PAGE_MIN_LINKS", minimum=1)
        spider.load(get_nonempty_str(settings, "TIANWANG_DATA_DIR"), policy, budget, low, high)
        return spider

    def load(self, data_dir: str, policy: str, budget: int, low: int, high: int) -> None:
        now = self._now()
        if not (Path(data_dir) / FILE_NAME).is_file():
            raise SettingError("TIANWANG_DATA_DIR", data_dir, "a data directory with a visit "
                               "history (crawl it first with TIANWANG_CHANGES=1)")
        try:
            with HistoryStore(data_dir) as store:
                visits = list(store.visits())
                states = list(store.pages())
                lastmods = store.lastmods()
        except OSError as exc:  # HistoryDamaged says itself
            raise SettingError("TIANWANG_DATA_DIR", data_dir,
                               f"a crawl's data directory ({exc})") from None
        self.known = {state.url for state in states}
        self.previous_links = {state.url: state.links for state in states}
        rates = url_rates(visits)
        types, self.type_counts = None, Counter()
        if self.typed:
            types = page_types(visits, {s.url: len(s.links) for s in states}, self.link_min)
            self.type_counts = Counter(types.values())
            self.logger.info("page types: %s", ", ".join(
                f"{kind} {self.type_counts[kind]}" for kind in PAGE_TYPES))
        self.plan = due(rates, now, policy, budget or len(rates), low, high, self.everything,
                        types)
        changed = sitemap_due(states, lastmods, now)
        if changed:  # first: the site itself says these changed since their last visit
            urls = {item.url for item in changed}
            self.plan = changed + [item for item in self.plan if item.url not in urls]
            self.logger.info("%d urls due because their sitemap lastmod is later than their "
                             "last visit", len(changed))
        # Pages revisited or found in this run: every planned url from the start, so a new
        # link that redirects to one (an alias, /index.htm -> /) is not recorded twice.
        self.visited = {item.url for item in self.plan}
        self.logger.info("%d of %d urls due at %s (%s)", len(self.plan), len(rates),
                         time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(now)), policy)

    def _now(self) -> float:
        if self.now_arg in (None, ""):
            return time.time()
        try:
            return float(self.now_arg)
        except ValueError:
            raise ValueError(f"now={self.now_arg!r}: expected epoch seconds") from None

    async def start(self) -> AsyncIterator[Request]:
        for kind, count in self.type_counts.items():  # the stats exist once the crawl runs
            self.crawler.stats.set_value(f"tianwang/refresh/type/{kind}", count)
        for item in self.plan:
            headers = {}
            if item.etag:
                headers["If-None-Match"] = item.etag
            if item.last_modified:
                headers["If-Modified-Since"] = item.last_modified
            priority = CLASS_PRIORITY[item.cls] + (ENTRY_PRIORITY if item.entry else 0)
            yield Request(item.url, callback=self.parse, headers=headers, priority=priority,
                          dont_filter=True, meta={"handle_httpstatus_list": [304]})

    def parse(self, response: Response) -> Iterator[Any]:
        if response.status == 304:
            self.crawler.stats.inc_value("tianwang/refresh/not_modified")
            yield NotModifiedItem(response.url, _headers(response), time.time())
            return
        yield page_item(response, 1, [])
        yield from self.new_links(response)

    def parse_new(self, response: Response) -> Iterator[Any]:
        if response.url in self.visited:  # an alias redirected to a page seen this run
            return
        self.visited.add(response.url)
        self.crawler.stats.inc_value("tianwang/refresh/new_pages")
        yield page_item(response, 2, [])

    def new_links(self, response: Response) -> Iterator[Request]:
        """Requests for the links of an entry page that no visit has seen yet."""
        if media_type(response) != "text/html":
            return
        blocks = segment(response.body, charset(_headers(response)))
        links = in_host_links(response.url, block_links(blocks, response.url))
        share = new_link_share(links, self.previous_links.get(response.url))
        if not is_entry(response.url, share, len(links), self.min_links, self.min_share):
            return
        for url in links:
            if url not in self.known:
                self.known.add(url)
                yield Request(url, callback=self.parse_new, priority=NEW_LINK_PRIORITY)


def sitemap_due(states: list[Any], lastmods: dict[str, float], now: float) -> list[Due]:
    """Urls whose sitemap lastmod is later than their last visit, oldest visit first.

    A lastmod later than `now` is a site's mistake (or a clock's), not news: it is ignored,
    else the url would be due at every refresh for ever.
    """
    found = []
    for state in states:
        lastmod = lastmods.get(state.url)
        if lastmod is not None and state.time < lastmod <= now:
            found.append(Due(state.url, 1, state.entry, 0.0, 0.0, now - lastmod, state.etag,
                             state.last_modified))
    found.sort(key=lambda item: (-item.overdue, item.url))
    return found


def _headers(response: Response) -> list[tuple[bytes, bytes]]:
    return [(name, value) for name, values in response.headers.items() for value in values]

