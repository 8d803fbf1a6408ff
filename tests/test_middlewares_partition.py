"""PartitionMiddleware: the scope rule applied to requests, redirects included (the plan of
tests/test_share.py: /a and /b are share 0's key paths, /c and the root's share 1's)."""

from __future__ import annotations

import pytest
from scrapy import Request, Spider
from scrapy.downloadermiddlewares.redirect import RedirectMiddleware
from scrapy.exceptions import IgnoreRequest
from scrapy.http import HtmlResponse

from tests.conftest import project_crawler
from tests.test_share import PLAN_FILE
from tianwang import signals
from tianwang.middlewares.partition import PartitionMiddleware
from tianwang.share import Share


def opened(share: Share | None):
    """A crawler with the project's settings, its spider holding `share`, and its
    PartitionMiddleware told the share."""
    crawler = project_crawler()
    crawler.spider = Spider("site")
    crawler.stats.open_spider()
    middleware = PartitionMiddleware.from_crawler(crawler)
    crawler.signals.send_catch_log(signals.share_opened, share=share)  # as the spider opens
    return crawler, middleware


def refused(middleware: PartitionMiddleware, url: str) -> bool:
    try:
        middleware.request_scheduled(Request(url))
    except IgnoreRequest:
        return True
    return False


@pytest.mark.parametrize(
    ("url", "refused_by_share0"),
    [
        ("http://s.test/c/page.html", True),
        ("http://s.test/about.html", True),  # the root is share 1's key path
        ("http://s.test/", False),  # the homepage: every share's seed
        ("http://s.test/robots.txt", False),  # every share obeys the site's robots.txt
        ("http://s.test/a/page.html", False),
        ("http://s.test/elsewhere/", False),  # in no key path
        ("http://other.test/c/page.html", False),  # a host the plan does not name
    ],
)
def test_requests_outside_the_share_are_refused_and_counted(
    url: str, refused_by_share0: bool
) -> None:
    crawler, middleware = opened(Share(0, PLAN_FILE))
    assert refused(middleware, url) is refused_by_share0
    assert crawler.stats.get_value("tianwang/partition/refused", 0) == int(refused_by_share0)


def test_a_crawl_without_a_share_is_not_filtered() -> None:
    crawler, middleware = opened(None)
    assert not refused(middleware, "http://s.test/c/page.html")
    assert middleware.process_request(Request("http://s.test/c/page.html")) is None
    assert crawler.stats.get_value("tianwang/partition/refused") is None


def test_the_downloader_path_refuses_too() -> None:
    _, middleware = opened(Share(1, PLAN_FILE))
    with pytest.raises(IgnoreRequest):
        middleware.process_request(Request("http://s.test/a/page.html"))


def test_a_redirect_into_another_shares_key_path_is_refused() -> None:
    """Scrapy's RedirectMiddleware answers a 301 with a new request, which the engine
    schedules like any other: the scope rule sees the target, not only the first url."""
    crawler, middleware = opened(Share(0, PLAN_FILE))
    first = Request("http://s.test/a/old.html")
    assert not refused(middleware, first.url)
    moved = HtmlResponse(first.url, status=301, headers={"Location": "/c/new.html"},
                         request=first)
    follow = RedirectMiddleware.from_crawler(crawler).process_response(first, moved)
    assert isinstance(follow, Request) and follow.url == "http://s.test/c/new.html"
    with pytest.raises(IgnoreRequest):
        middleware.request_scheduled(follow)
    assert crawler.stats.get_value("tianwang/partition/refused") == 1


def test_the_homepages_redirect_is_followed_by_every_share() -> None:
    crawler, middleware = opened(Share(0, PLAN_FILE))
    home = Request("http://s.test/")
    moved = HtmlResponse(home.url, status=302, headers={"Location": "/index.html"},
                         request=home)
    follow = RedirectMiddleware.from_crawler(crawler).process_response(home, moved)
    assert isinstance(follow, Request) and follow.url == "http://s.test/index.html"
    middleware.request_scheduled(follow)  # the root is share 1's key path: not refused here
    assert refused(middleware, "http://s.test/index.html")  # linked, not redirected: refused
    assert crawler.stats.get_value("tianwang/partition/refused") == 1
