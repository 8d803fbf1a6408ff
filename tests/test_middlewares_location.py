"""BadLocationMiddleware: a redirect to a Location no request can be made of is counted and
logged once per host, never an ERROR traceback from Scrapy's redirect middleware."""

from __future__ import annotations

import pytest
from scrapy import Request
from scrapy.exceptions import IgnoreRequest
from scrapy.http import Response

from tests.conftest import project_crawler
from tests.hostile_crawl import HostileCrawl
from tianwang.middlewares.location import BadLocationMiddleware, redirect_target
from tianwang.testweb.junk import BAD_LOCATIONS, LOCATION_HOST


@pytest.mark.parametrize(
    "location, target",
    [(b"/b.html", "http://a.com/b.html"), (b"//c.com/x", "http://c.com/x"),
     (b"https://a.com:8443/", "https://a.com:8443/"), (b"javascript:alert(1)", None),
     (b"http://[bad/", None), (b"http://a.com:99999999/", None), (b"mailto:x@a.com", None)],
)
def test_redirect_target(location: bytes, target: str | None) -> None:
    assert redirect_target("http://a.com/a.html", location) == target


def test_a_bad_location_is_refused_a_good_one_left_to_the_redirect_middleware() -> None:
    mw = BadLocationMiddleware.from_crawler(project_crawler())
    request = Request("http://a.com/")
    good = Response("http://a.com/", status=302, headers={"Location": "/next"})
    assert mw.process_response(request, good) is good
    bad = Response("http://a.com/", status=301, headers={"Location": "http://[bad/"})
    with pytest.raises(IgnoreRequest):
        mw.process_response(request, bad)
    asked = Request("http://a.com/", meta={"dont_redirect": True})  # the request's own 3xx
    assert mw.process_response(asked, bad) is bad
    assert mw.stats.get_value("tianwang/error/bad_location") == 1


def test_the_junk_webs_bad_locations_are_counted_once_logged(hostile_crawl: HostileCrawl) -> None:
    urls = [f"http://{LOCATION_HOST}{path}" for path in BAD_LOCATIONS]
    asked = {line["url"] for line in hostile_crawl.log}
    assert set(urls) <= asked and not set(urls) & set(hostile_crawl.stored)
    assert hostile_crawl.stats["tianwang/error/bad_location"] == len(BAD_LOCATIONS)
    lines = [line for line in hostile_crawl.stderr.splitlines()
             if "[tianwang.middlewares.location]" in line]
    assert len(lines) == 1 and LOCATION_HOST in lines[0]
    assert "Traceback" not in hostile_crawl.stderr and "ERROR" not in hostile_crawl.stderr
