"""The `site` spider: per-host breadth-first crawl of a seed list, CWT200g style.

    scrapy crawl site -a seeds=seeds.txt
    scrapy crawl site -a seeds=http://www.example.com/,www.example.org

Each seed page is level 1; links are followed up to TIANWANG_MAX_LEVELS, within the page's
own host unless TIANWANG_STAY_IN_HOST is off. Pages of TIANWANG_STORE_TYPES become items.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterator
from typing import Any
from urllib.parse import urlsplit

from scrapy import Request, Spider
from scrapy.http import HtmlResponse, Response, TextResponse
from scrapy.linkextractors import IGNORED_EXTENSIONS

from tianwang.config import get_bool, get_int, get_str_list
from tianwang.items import PageItem
from tianwang.seeds import load_seeds
from tianwang.urls import safe_url, url_host

_SKIPPED_EXTENSIONS = frozenset(f".{ext}" for ext in IGNORED_EXTENSIONS)
_LINK_XPATH = "//a/@href | //area/@href"


class SiteSpider(Spider):
    name = "site"
    # Set by from_crawler from the settings (defaults in tianwang/settings.py).
    seed_urls: list[str]
    max_levels: int
    stay_in_host: bool
    store_types: frozenset[str]

    def __init__(self, seeds: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.seeds_arg = seeds

    @classmethod
    def from_crawler(cls, crawler: Any, *args: Any, **kwargs: Any) -> SiteSpider:
        spider = super().from_crawler(crawler, *args, **kwargs)
        settings = crawler.settings
        spider.max_levels = get_int(settings, "TIANWANG_MAX_LEVELS", minimum=0)
        spider.stay_in_host = get_bool(settings, "TIANWANG_STAY_IN_HOST")
        spider.store_types = frozenset(get_str_list(settings, "TIANWANG_STORE_TYPES"))
        # Bad seeds stop the crawl here, before anything is fetched.
        spider.seed_urls = load_seeds(spider.seeds_arg)
        return spider

    async def start(self) -> AsyncIterator[Request]:
        for url in self.seed_urls:
            yield Request(url, callback=self.parse)

    def parse(self, response: Response) -> Iterator[PageItem | Request]:
        level = response.meta.get("depth", 0) + 1
        mime = media_type(response)
        links = extract_links(response) if mime == "text/html" else []
        if mime in self.store_types:
            yield page_item(response, level, links)
        else:
            self.crawler.stats.inc_value(f"tianwang/skipped/{mime or 'unknown'}")
        if self.max_levels and level >= self.max_levels:
            return
        page_host = url_host(response.url)
        for url in links:
            if self.follows(page_host, url):
                yield Request(url, callback=self.parse)

    def follows(self, page_host: str, link: str) -> bool:
        """Whether a link of a page on page_host is worth a request."""
        if _extension(urlsplit(link).path) in _SKIPPED_EXTENSIONS:
            return False  # images, archives, media: never stored, not worth a fetch
        try:
            return not self.stay_in_host or url_host(link) == page_host
        except ValueError:  # a bad port or no host: a broken link, not a reason to stop
            return False


def media_type(response: Response) -> str:
    """The response's media type, lowercase, without parameters ("" if unknown)."""
    header = response.headers.get(b"Content-Type")
    if header:
        return header.split(b";")[0].strip().decode("latin-1").lower()
    if isinstance(response, HtmlResponse):  # Scrapy sniffed the body
        return "text/html"
    return "text/plain" if type(response) is TextResponse else ""


def extract_links(response: Response) -> list[str]:
    """Absolute http(s) out-links of an HTML page: fragment removed, duplicates dropped."""
    if not isinstance(response, TextResponse):
        return []
    links: dict[str, None] = {}
    for href in response.xpath(_LINK_XPATH).getall():
        url = _absolute(response, href.strip())
        if url:
            links[url] = None
    return list(links)


def _absolute(response: TextResponse, href: str) -> str | None:
    if not href or href.startswith(("#", "javascript:", "mailto:")):
        return None
    try:
        url = response.urljoin(href)  # honours <base href>
    except ValueError:  # e.g. "http://[bad" from a broken page
        return None
    if not url.startswith(("http://", "https://")):
        return None
    return safe_url(url.split("#", 1)[0], encoding=response.encoding)


def _extension(path: str) -> str:
    name = path.rsplit("/", 1)[-1]
    return name[name.rfind(".") :].lower() if "." in name else ""


def page_item(response: Response, level: int, links: list[str]) -> PageItem:
    redirects = response.meta.get("redirect_urls") or [response.url]
    return PageItem(
        url=response.url,
        requested_url=redirects[0],
        status=response.status,
        headers=[(name, value) for name, values in response.headers.items() for value in values],
        body=response.body,
        ip=str(response.ip_address) if response.ip_address else None,
        fetched_at=time.time(),
        level=level,
        protocol=response.protocol or "HTTP/1.1",
        links=links,
        parent=(response.request.headers.get("Referer") or b"").decode("latin-1") or None,
    )
