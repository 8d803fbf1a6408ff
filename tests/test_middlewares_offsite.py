"""The offsite filter: Scrapy's decisions, without its work for a spider allowing any domain."""

from __future__ import annotations

import pytest
from scrapy import Request, Spider
from scrapy.downloadermiddlewares.offsite import OffsiteMiddleware as ScrapyOffsite
from scrapy.exceptions import IgnoreRequest
from scrapy.utils.test import get_crawler

from tianwang.middlewares.offsite import OffsiteMiddleware

URLS = ["http://www.example.com/a", "http://sub.example.com/b", "http://other.org/c",
        "http://example.com.evil.net/d", "data:,x", "http:///nohost"]


def decisions(middleware_class: type, allowed: list[str] | None) -> list[bool]:
    """For each url: whether the middleware lets the scheduled request through."""

    class Probe(Spider):
        name = "probe"

    if allowed is not None:
        Probe.allowed_domains = allowed
    crawler = get_crawler(Probe)
    crawler.spider = Probe.from_crawler(crawler)
    middleware = middleware_class.from_crawler(crawler)
    middleware.spider_opened(crawler.spider)
    passed = []
    for url in URLS:
        try:
            middleware.request_scheduled(Request(url), crawler.spider)
            middleware.process_request(Request(url))
            passed.append(True)
        except IgnoreRequest:
            passed.append(False)
    return passed


@pytest.mark.parametrize("allowed", [None, [], ["example.com"], ["other.org", "example.com"]])
def test_it_decides_as_scrapys(allowed: list[str] | None) -> None:
    assert decisions(OffsiteMiddleware, allowed) == decisions(ScrapyOffsite, allowed)


def test_domains_the_spider_sets_later_are_obeyed() -> None:
    class Probe(Spider):
        name = "probe"

    crawler = get_crawler(Probe)
    crawler.spider = Probe.from_crawler(crawler)
    middleware = OffsiteMiddleware.from_crawler(crawler)
    middleware.spider_opened(crawler.spider)
    middleware.request_scheduled(Request("http://other.org/"), crawler.spider)  # all allowed
    crawler.spider.allowed_domains = ["example.com"]
    with pytest.raises(IgnoreRequest):
        middleware.request_scheduled(Request("http://other.org/"), crawler.spider)
