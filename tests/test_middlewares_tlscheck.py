"""TLSCheckMiddleware: the handler's tls:<reason> flags counted once per host, logged once
(a unit test of the counting; tests/test_tlscheck.py crawls the --https test web)."""

from __future__ import annotations

import logging

import pytest
from scrapy import Request
from scrapy.http import Response

from tests.conftest import project_crawler
from tianwang.middlewares.tlscheck import TLSCheckMiddleware


def response(url: str, *flags: str) -> Response:
    return Response(url, status=200, flags=list(flags), request=Request(url))


def test_each_host_and_reason_is_counted_and_logged_once(caplog: pytest.LogCaptureFixture
                                                         ) -> None:
    crawler = project_crawler()
    crawler.stats.open_spider()
    middleware = TLSCheckMiddleware.from_crawler(crawler)
    pages = [response("https://a.cn/", "tls:expired", "tls:wrong_name"),
             response("https://a.cn/x.html", "tls:expired"),
             response("https://b.cn/", "tls:expired"),
             response("https://c.cn/"), response("http://d.cn/", "cached")]
    with caplog.at_level(logging.WARNING):
        for page in pages:
            assert middleware.process_response(page.request, page) is page
    stats = {k: v for k, v in crawler.stats.get_stats().items() if k.startswith("tianwang/tls")}
    assert stats == {"tianwang/tls/expired": 2, "tianwang/tls/wrong_name": 1,
                     "tianwang/tls/responses": 3}
    assert len([r for r in caplog.records if "Certificate of" in r.getMessage()]) == 3
