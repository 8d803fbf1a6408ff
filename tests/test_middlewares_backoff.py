"""Back-off (tianwang/middlewares/backoff.py): a 429 or 503 with Retry-After pauses its host,
seen in the test web's access log, and costs no retry and no page."""

from __future__ import annotations

from email.utils import formatdate
from types import SimpleNamespace
from urllib.parse import urlsplit

import pytest
from scrapy import Request
from scrapy.http import Response
from scrapy.statscollectors import MemoryStatsCollector

from tests.conftest import project_crawler
from tianwang.config import SettingError
from tianwang.middlewares.backoff import BackoffMiddleware, retry_after_seconds
from tianwang.testweb import protocols as web


def _after(crawl, status: int) -> tuple[dict, dict]:
    """The busy host's answer with `status`, and the host's next request after it."""
    requests = crawl.requests(web.BUSY_HOST)
    index = next(i for i, line in enumerate(requests) if line["status"] == status)
    return requests[index], requests[index + 1]


@pytest.mark.parametrize("status", [429, 503])
def test_nothing_goes_to_the_host_during_its_pause(protocols_crawls, status: int) -> None:
    for crawl in (protocols_crawls.on, protocols_crawls.off):
        answer, following = _after(crawl, status)
        assert following["time"] - answer["time"] >= web.RETRY_AFTER
        again = [line for line in crawl.requests(web.BUSY_HOST)
                 if line["url"] == answer["url"] and line["time"] > answer["time"]]
        assert [line["status"] for line in again] == [200]  # asked for again, once


def test_other_hosts_are_fetched_during_the_pause(protocols_crawls) -> None:
    crawl = protocols_crawls.off
    answer, following = _after(crawl, 429)
    others = [line for line in crawl.log if answer["time"] < line["time"] < following["time"]
              and web.BUSY_HOST not in line["url"]]
    assert len({line["url"].split("/")[2] for line in others}) >= 3


def test_paused_pages_are_stored_without_spending_retries(protocols_crawls) -> None:
    crawl, truth = protocols_crawls.off, protocols_crawls.truth
    pages = {url for url, page in truth.items() if page["host"] == web.BUSY_HOST}
    assert pages <= set(crawl.stored)
    assert crawl.stats["tianwang/backoff/paused"] == 2
    assert crawl.stats["tianwang/backoff/status/429"] == 1
    assert crawl.stats["tianwang/backoff/status/503"] == 1
    assert "retry/count" not in crawl.stats  # nothing else on the protocol hosts is retried


def test_retry_after_seconds_and_dates() -> None:
    now = 1_800_000_000.0
    assert retry_after_seconds(b"120", now) == 120
    assert retry_after_seconds(" 7 ", now) == 7
    assert retry_after_seconds(formatdate(now + 30, usegmt=True), now) == pytest.approx(30)
    assert retry_after_seconds(formatdate(now - 30, usegmt=True), now) == 0  # already past
    for bad in (None, b"", b"soon", b"-5", b"1.5"):
        assert retry_after_seconds(bad, now) is None


def test_bad_setting_is_refused() -> None:
    with pytest.raises(SettingError, match="TIANWANG_MAX_RETRY_AFTER"):
        BackoffMiddleware.from_crawler(project_crawler(TIANWANG_MAX_RETRY_AFTER="long"))


# -- the pause alone, told to the frontier (the crawls above show it end to end) --


class _Downloader:
    """The public part of Scrapy's Downloader the middleware uses."""

    def get_slot_key(self, request: Request) -> str:
        return urlsplit(request.url).hostname or ""


def _middleware() -> tuple[BackoffMiddleware, list[dict]]:
    from tianwang import signals

    crawler = project_crawler()
    crawler.stats = MemoryStatsCollector(crawler)
    crawler.engine = SimpleNamespace(downloader=_Downloader())
    told: list[dict] = []
    crawler.signals.connect(lambda **kw: told.append(kw), signal=signals.host_wait, weak=False)
    return BackoffMiddleware(crawler, max_pause=60, max_pauses=2), told


def _answer(status: int, retry_after: str | None, url: str = "http://h.example/p") -> tuple:
    request = Request(url)
    headers = {"Retry-After": retry_after} if retry_after is not None else {}
    return request, Response(url, status=status, headers=headers, request=request)


def test_a_pause_is_told_to_the_frontier_and_the_request_goes_back_unretried() -> None:
    import time

    middleware, told = _middleware()
    request, response = _answer(429, "30")
    again = middleware.process_response(request, response)
    assert isinstance(again, Request) and again.url == request.url and again.dont_filter
    assert "retry_times" not in again.meta and again.meta["tianwang_backoff_pauses"] == 1
    (said,) = told
    assert said["key"] == "h.example" and said["reason"] == "retry_after"
    assert said["until"] - time.monotonic() == pytest.approx(30, abs=1)


def test_no_retry_after_or_too_many_pauses_goes_to_scrapys_retries() -> None:
    middleware, _told = _middleware()
    request, response = _answer(503, None)
    assert middleware.process_response(request, response) is response
    request, response = _answer(429, "1")
    request.meta["tianwang_backoff_pauses"] = 2
    assert middleware.process_response(request, response) is response
    assert middleware.stats.get_value("tianwang/backoff/gave_up") == 1
    request, response = _answer(500, "1")
    assert middleware.process_response(request, response) is response
