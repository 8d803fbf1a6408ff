"""Back-off (tianwang/middlewares/backoff.py): a 429 or 503 with Retry-After pauses its host,
seen in the test web's access log, and costs no retry and no page."""

from __future__ import annotations

from email.utils import formatdate

import pytest

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
