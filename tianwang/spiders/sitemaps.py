"""Sitemaps as a source of urls for the site spider (TIANWANG_SITEMAPS, off by default).

Where they come from: the `Sitemap:` lines of each host's robots.txt (RobotsMiddleware sends
its rules on Scrapy's robots_parsed signal), or `/sitemap.xml` of a host whose robots.txt
names none (or of each seed's host, when robots.txt is not obeyed). A sitemap is a urlset,
a sitemap index (its entries are sitemaps), either of them gzip-compressed.

Bounded like any page and more: a sitemap's body (inflated, if gzip) is at most
TIANWANG_MAX_PAGE_BYTES, else dropped whole; at most TIANWANG_SITEMAP_MAX_URLS urls are
taken from one sitemap, at most TIANWANG_SITEMAP_MAX_FILES sitemap files are fetched per
host, and an index in an index is followed only TIANWANG_SITEMAP_MAX_DEPTH deep. Each limit
reached is counted (tianwang/sitemap/...) and logged once.

Levels: a url a sitemap lists is an entry point the site names, as a seed is: it is level 1
(the sitemap's own level does not count), so its links are followed as a seed's are. Only
urls the spider would follow from a page of the sitemap's host are taken (the same host,
unless TIANWANG_STAY_IN_HOST is off); `lastmod` rides on the request (meta tianwang_lastmod)
and, with TIANWANG_CHANGES, goes to the visit history as a SitemapLastmodItem: the refresh
spider revisits a url whose lastmod is later than its last visit.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from scrapy import Request
from scrapy.http import Response
from scrapy.utils.gz import gunzip
from scrapy.utils.sitemap import Sitemap

from tianwang import meta
from tianwang.config import get_bool, get_int
from tianwang.items import SitemapLastmodItem
from tianwang.urls import url_host

logger = logging.getLogger(__name__)

GZIP_MAGIC = b"\x1f\x8b\x08"


@dataclass(frozen=True, slots=True)
class SitemapConfig:
    enabled: bool
    max_urls: int
    max_files: int
    max_depth: int
    max_bytes: int
    lastmod_items: bool  # TIANWANG_CHANGES: lastmods go to the visit history

    @classmethod
    def from_settings(cls, settings: Any) -> SitemapConfig:
        return cls(
            enabled=get_bool(settings, "TIANWANG_SITEMAPS"),
            max_urls=get_int(settings, "TIANWANG_SITEMAP_MAX_URLS", minimum=1),
            max_files=get_int(settings, "TIANWANG_SITEMAP_MAX_FILES", minimum=1),
            max_depth=get_int(settings, "TIANWANG_SITEMAP_MAX_DEPTH", minimum=0),
            max_bytes=get_int(settings, "TIANWANG_MAX_PAGE_BYTES", minimum=0),
            lastmod_items=get_bool(settings, "TIANWANG_CHANGES"),
        )


class SitemapReader:
    """Requests for a host's sitemaps, and the requests a fetched sitemap leads to."""

    def __init__(self, config: SitemapConfig, crawler: Any, follows: Callable[[str, str], bool],
                 page_callback: Callable, sitemap_callback: Callable) -> None:
        self.config, self.crawler, self.follows = config, crawler, follows
        self.page_callback, self.sitemap_callback = page_callback, sitemap_callback
        self.files: Counter[str] = Counter()  # host -> sitemap files requested
        self.hosts: set[str] = set()  # hosts whose sitemaps were looked for
        self._logged: set[str] = set()

    @property
    def stats(self) -> Any:
        return self.crawler.stats  # set only when the crawl starts, after from_crawler

    def for_robots(self, robots_url: str, parser: Any) -> Iterator[Request]:
        """The sitemaps a host's robots.txt names, else its /sitemap.xml."""
        named = list(getattr(parser, "sitemaps", None) or [])
        host = url_host(robots_url)
        if host in self.hosts:
            return  # robots.txt read again (its TTL passed): its sitemaps were requested
        self.hosts.add(host)
        if not named:
            named = [robots_url.rsplit("/", 1)[0] + "/sitemap.xml"]
        for url in dict.fromkeys(named):
            request = self.request(url, host, 0)
            if request is not None:
                yield request

    def request(self, url: str, host: str, depth: int) -> Request | None:
        """A request for one sitemap file speaking for `host`, if the host's budget allows."""
        if not url.startswith(("http://", "https://")):
            return None
        if self.files[host] >= self.config.max_files:
            self._limit("files", "sitemap files of %s past TIANWANG_SITEMAP_MAX_FILES=%d "
                        "not fetched (logged once)", host, self.config.max_files)
            return None
        self.files[host] += 1
        self.stats.inc_value("tianwang/sitemap/requested")
        # depth 0: a sitemap is no page of the site's levels (its urls are level 1).
        return Request(url, callback=self.sitemap_callback,
                       meta={meta.SITEMAP: (host, depth), "depth": 0, "depth_reset": True})

    def parse(self, response: Response) -> Iterator[Request | SitemapLastmodItem]:
        """The urls (or sitemaps) of a fetched sitemap, within every bound."""
        host, depth = response.meta[meta.SITEMAP]
        body = self._body(response)
        if body is None:
            return
        try:
            sitemap = Sitemap(body)
        except Exception as exc:  # lxml's errors on a body that is no XML at all
            self.stats.inc_value("tianwang/sitemap/malformed")
            logger.info("sitemap %s unreadable: %s", response.url, exc)
            return
        self.stats.inc_value(f"tianwang/sitemap/{sitemap.type or 'unknown'}")
        if sitemap.type == "sitemapindex":
            yield from self._index(sitemap, host, depth)
        elif sitemap.type == "urlset":
            yield from self._urls(sitemap, host)

    def _index(self, sitemap: Sitemap, host: str, depth: int) -> Iterator[Request]:
        if depth >= self.config.max_depth:
            self._limit("depth", "sitemap index nested past TIANWANG_SITEMAP_MAX_DEPTH=%d "
                        "in %s not followed (logged once)", self.config.max_depth, host)
            return
        for entry in sitemap:
            request = self.request(entry.get("loc", ""), host, depth + 1)
            if request is None and self.files[host] >= self.config.max_files:
                return
            if request is not None:
                yield request

    def _urls(self, sitemap: Sitemap, host: str) -> Iterator[Request | SitemapLastmodItem]:
        taken = 0
        for entry in sitemap:
            url = entry.get("loc", "")
            if not url.startswith(("http://", "https://")) or not self.follows(host, url):
                continue
            if taken >= self.config.max_urls:
                self._limit("urls", "urls of a sitemap of %s past TIANWANG_SITEMAP_MAX_URLS=%d "
                            "not taken (logged once)", host, self.config.max_urls)
                return
            taken += 1
            self.stats.inc_value("tianwang/sitemap/urls")
            keys: dict[str, Any] = {"depth_reset": True}  # level 1, as a seed
            if entry.get("lastmod"):
                keys[meta.LASTMOD] = entry["lastmod"]
                if self.config.lastmod_items:  # even for a url the crawl has seen already
                    yield SitemapLastmodItem(url, entry["lastmod"])
            yield Request(url, callback=self.page_callback, meta=keys)

    def _body(self, response: Response) -> bytes | None:
        body = response.body
        if body[:3] != GZIP_MAGIC:
            return body
        try:
            return gunzip(body, max_size=self.config.max_bytes)
        except ValueError:  # past max_size (Scrapy's _DecompressionMaxSizeExceeded)
            self._limit("too_big", "sitemap %s inflates past TIANWANG_MAX_PAGE_BYTES=%d: "
                        "dropped (logged once)", response.url, self.config.max_bytes)
        except (OSError, EOFError):
            self.stats.inc_value("tianwang/sitemap/malformed")
        return None

    def _limit(self, what: str, message: str, *args: Any) -> None:
        self.stats.inc_value(f"tianwang/sitemap/limit/{what}")
        if what not in self._logged:
            self._logged.add(what)
            logger.info(message, *args)
