"""CheckedMetaRefreshMiddleware: a <meta refresh> to no url is ignored as browsers ignore it
(the page kept, counted, logged once per host), any other left to Scrapy's middleware."""

from __future__ import annotations

import pytest
from scrapy import Request
from scrapy.http import HtmlResponse

from tests import hostile_web
from tests.conftest import project_crawler
from tianwang.middlewares.refresh import CheckedMetaRefreshMiddleware


def page_refreshing_to(target: str) -> HtmlResponse:
    body = f'<html><head><meta http-equiv="refresh" content="0; url={target}"></head></html>'
    return HtmlResponse("http://a.com/x.html", body=body.encode())


@pytest.mark.parametrize("target", ["javascript:alert(1)", "http://a.com:99999999/",
                                    "http://[bad/", "mailto:x@a.com"])
def test_a_refresh_to_no_url_is_ignored_and_counted(target: str) -> None:
    mw = CheckedMetaRefreshMiddleware.from_crawler(project_crawler())
    response = page_refreshing_to(target)
    assert mw.process_response(Request("http://a.com/x.html"), response) is response
    assert mw.stats.get_value("tianwang/urls/bad_refresh") == 1


def test_a_good_refresh_is_still_followed() -> None:
    mw = CheckedMetaRefreshMiddleware.from_crawler(project_crawler())
    followed = mw.process_response(Request("http://a.com/x.html"), page_refreshing_to("/y.html"))
    assert isinstance(followed, Request) and followed.url == "http://a.com/y.html"
    assert mw.stats.get_value("tianwang/urls/bad_refresh") is None


def test_replaces_scrapys_middleware_in_the_project_settings() -> None:
    middlewares = project_crawler().settings.getdict("DOWNLOADER_MIDDLEWARES")
    assert middlewares["scrapy.downloadermiddlewares.redirect.MetaRefreshMiddleware"] is None
    assert middlewares["tianwang.middlewares.refresh.CheckedMetaRefreshMiddleware"] == 580


def test_pages_refreshing_to_no_url_are_stored_and_logged_once(hostile_web_crawl) -> None:
    crawl = hostile_web_crawl
    hosts = ["www.refresh-js.com", "www.refresh-port.com"]
    for host in hosts:
        assert crawl.stored[f"http://{host}/"].split(b"\r\n\r\n", 1)[1] == \
            hostile_web.FAULTS[host][0].body
    assert crawl.stats["tianwang/urls/bad_refresh"] == len(hosts)
    lines = [line for line in crawl.stderr.splitlines() if "[tianwang.middlewares.refresh]" in line]
    assert len(lines) == len(hosts)
    assert "Traceback" not in crawl.stderr
