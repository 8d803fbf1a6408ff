"""Sitemaps as a url source (tianwang/spiders/sitemaps.py), against the protocol hosts'
truth: pages only a sitemap leads to are fetched with TIANWANG_SITEMAPS on and only then, and
the sitemap bomb stays within every bound."""

from __future__ import annotations

import re

from scrapy import Request
from scrapy.http import XmlResponse

from tests.protocols_crawl import (
    REFRESH_NOW,
    SITEMAP_MAX_DEPTH,
    SITEMAP_MAX_FILES,
    SITEMAP_MAX_URLS,
)
from tianwang import meta
from tianwang.formats.history import HistoryStore
from tianwang.formats.linksfile import iter_pages
from tianwang.items import SitemapLastmodItem
from tianwang.pipelines.changes import w3c_datetime
from tianwang.spiders.sitemaps import SitemapConfig, SitemapReader
from tianwang.testweb import protocols as web
from tianwang.urls import url_host

STORED = "text/html"


def _pages(truth: dict, *, sitemap_only: bool | None = None) -> set[str]:
    return {url for url, page in truth.items() if page["content_type"] == STORED
            and page["host"] != web.BOMB_HOST and page["status"] == 200
            and (page["fetched"] or (sitemap_only is not False and page["sitemap_only"]))}


def test_sitemap_only_pages_are_fetched_with_sitemaps_on(protocols_crawls) -> None:
    truth, crawl = protocols_crawls.truth, protocols_crawls.on
    stored = {url for url in crawl.stored if web.BOMB_HOST not in url}
    assert stored == _pages(truth)
    hidden = {url for url, page in truth.items() if page["sitemap_only"] and url in stored}
    assert len(hidden) == 6  # h1-h3 from the index (one gzip), h4 linked from h1, o1-o2


def test_sitemap_only_pages_are_not_fetched_with_sitemaps_off(protocols_crawls) -> None:
    truth, crawl = protocols_crawls.truth, protocols_crawls.off
    stored = {url for url in crawl.stored if web.BOMB_HOST not in url}
    assert stored == _pages(truth, sitemap_only=False)
    requested = {line["url"] for line in crawl.log}
    assert not {url for url, page in truth.items() if page["sitemap_only"]} & requested
    assert not [url for url in requested if web.BOMB_HOST in url and "/bomb/" in url]


def test_sitemap_urls_are_level_one(protocols_crawls) -> None:
    # A sitemap's url is an entry point, like a seed: it has no parent in the link graph.
    parents = {page.url: page.parent for page in iter_pages(protocols_crawls.on.data)}
    assert parents[f"http://{web.SITEMAP_HOST}/hidden/h1.html"] == ""
    assert parents[f"http://{web.SITEMAP_HOST}/hidden/h4.html"] == (
        f"http://{web.SITEMAP_HOST}/hidden/h1.html")


def test_sitemap_bomb_stays_within_its_bounds(protocols_crawls) -> None:
    crawl = protocols_crawls.on
    paths = [line["url"].split(web.BOMB_HOST, 1)[1] for line in crawl.requests(web.BOMB_HOST)]
    sitemaps = [p for p in paths if p.endswith((".xml", ".xml.gz"))]
    assert 0 < len(sitemaps) <= SITEMAP_MAX_FILES
    depths = [int(m.group(1)) for p in sitemaps if (m := re.match(r"/bomb/deep-(\d+)", p))]
    assert depths and max(depths) <= SITEMAP_MAX_DEPTH
    from_huge = [p for p in paths if re.fullmatch(r"/bomb/u\d+\.html", p)]
    assert len(from_huge) == SITEMAP_MAX_URLS  # of the 5,000 it lists
    assert not [p for p in paths if re.fullmatch(r"/bomb/z\d+\.html", p)]  # the gzip bomb
    assert crawl.stats["tianwang/sitemap/limit/too_big"] == 1
    assert len([url for url in crawl.stored if web.BOMB_HOST in url]) <= (
        1 + SITEMAP_MAX_URLS + SITEMAP_MAX_FILES)


def test_lastmods_go_to_the_visit_history(protocols_crawls) -> None:
    with HistoryStore(protocols_crawls.on.data, readonly=True) as store:
        lastmods = store.lastmods()
    expected = {url: w3c_datetime(page["lastmod"])
                for url, page in protocols_crawls.truth.items() if page["lastmod"]}
    assert lastmods == expected and len(expected) == 2


def test_refresh_revisits_what_a_sitemap_says_changed(protocols_crawls) -> None:
    truth, refresh = protocols_crawls.truth, protocols_crawls.refresh
    with HistoryStore(protocols_crawls.on.data, readonly=True) as store:
        visited = {state.url: state.time for state in store.pages()}
    changed = {url for url, page in truth.items() if page["lastmod"]
               and visited[url] < w3c_datetime(page["lastmod"]) <= REFRESH_NOW}
    requested = {line["url"] for line in refresh.log if not line["url"].endswith("/robots.txt")}
    assert requested == changed and len(changed) == 1


# -- the reader alone, on Scrapy responses built here (the crawls above run it for real) --


def _reader(**overrides: int) -> SitemapReader:
    from scrapy.statscollectors import MemoryStatsCollector
    from scrapy.utils.test import get_crawler

    crawler = get_crawler()
    crawler.stats = MemoryStatsCollector(crawler)
    config = SitemapConfig(**{"enabled": True, "max_urls": 3, "max_files": 4, "max_depth": 1,
                              "max_bytes": 10_000, "lastmod_items": True, **overrides})
    return SitemapReader(config, crawler, lambda host, url: url_host(url) == host,
                         lambda response: None, lambda response: None)


def _response(url: str, body: bytes, host: str = "h.example", depth: int = 0) -> XmlResponse:
    request = Request(url, meta={meta.SITEMAP: (host, depth)})
    return XmlResponse(url, body=body, request=request)


def test_reader_takes_urls_of_the_host_within_the_count() -> None:
    reader = _reader()
    urls = [f"http://h.example/{i}" for i in range(5)] + ["http://other.example/x"]
    body = ("<urlset>" + "".join(f"<url><loc>{u}</loc><lastmod>2026-01-0{i + 1}</lastmod></url>"
                                  for i, u in enumerate(urls)) + "</urlset>").encode()
    out = list(reader.parse(_response("http://h.example/s.xml", body)))
    requests = [r for r in out if isinstance(r, Request)]
    assert [r.url for r in requests] == urls[:3]
    assert all(r.meta["depth_reset"] for r in requests)
    assert [(i.url, i.lastmod) for i in out if isinstance(i, SitemapLastmodItem)] == [
        (urls[0], "2026-01-01"), (urls[1], "2026-01-02"), (urls[2], "2026-01-03")]


def test_reader_bounds_index_depth_and_files_per_host() -> None:
    reader = _reader()
    index = ("<sitemapindex>" + "".join(f"<sitemap><loc>http://h.example/{i}.xml</loc></sitemap>"
                                        for i in range(9)) + "</sitemapindex>").encode()
    first = list(reader.parse(_response("http://h.example/i.xml", index, depth=0)))
    assert [r.url for r in first] == [f"http://h.example/{i}.xml" for i in range(4)]
    assert list(reader.parse(_response("http://h.example/0.xml", index, depth=1))) == []
    assert reader.stats.get_value("tianwang/sitemap/limit/depth") == 1


def test_reader_drops_a_gzip_that_inflates_past_the_page_bound() -> None:
    import gzip

    reader = _reader()
    small = gzip.compress(b"<urlset><url><loc>http://h.example/a</loc></url></urlset>")
    assert [r.url for r in reader.parse(_response("http://h.example/s.xml.gz", small))] == [
        "http://h.example/a"]
    bomb = gzip.compress(b"<urlset>" + b" " * 20_000 + b"</urlset>")
    assert list(reader.parse(_response("http://h.example/b.xml.gz", bomb))) == []
    assert reader.stats.get_value("tianwang/sitemap/limit/too_big") == 1
    assert list(reader.parse(_response("http://h.example/c.xml", b"\x00not xml"))) == []
