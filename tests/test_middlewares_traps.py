"""TrapFilterMiddleware and the spider's session-id stripping: the junk web's traps
(endless session ids, an endless calendar, /a/a/a/..., a growing query) crawled with no
level limit stay under their bounds, counted from the test web's access log."""

from __future__ import annotations

from collections import Counter

import pytest
from scrapy import Request
from scrapy.exceptions import IgnoreRequest

from tests.conftest import project_crawler
from tests.fetchlog import served_beyond_sent
from tests.hostile_crawl import HOST_PAGES, HostileCrawl
from tianwang.config import SettingError
from tianwang.middlewares.traps import TrapFilterMiddleware
from tianwang.testweb.junk import SESSION_PAGES, TRAP_HOSTS
from tianwang.urls import url_host

TRAP = {kind: host for host, kind in TRAP_HOSTS.items()}


def middleware(**settings: object) -> TrapFilterMiddleware:
    return TrapFilterMiddleware.from_crawler(project_crawler(**settings))


@pytest.mark.parametrize(
    "url, reason",
    [("http://a.com/a/a/", None), ("http://a.com/a/a/a/", "repeated_path"),
     ("http://a.com/x/a/b/a/b/a/b/c.html", "repeated_path"), ("http://a.com/2026/01/01/", None),
     ("http://a.com/?q=/a/a/a/a/", None), ("http://a.com/" + "x" * 2100, "url_length")],
)
def test_each_request_is_checked(url: str, reason: str | None) -> None:
    mw = middleware(TIANWANG_MAX_PATH_REPEATS=2)
    if reason is None:
        assert mw.process_request(Request(url)) is None
        return
    with pytest.raises(IgnoreRequest, match=reason):
        mw.process_request(Request(url))
    assert mw.stats.get_value(f"tianwang/filter/{reason}") == 1


def test_a_host_has_a_budget_robots_txt_and_retries_outside_it() -> None:
    mw = middleware(TIANWANG_MAX_HOST_PAGES=2)
    for path in ("/1", "/2"):
        mw.process_request(Request(f"http://a.com{path}"))
    mw.process_request(Request("http://a.com/2", meta={"retry_times": 1}))
    mw.process_request(Request("http://a.com/robots.txt", meta={"dont_obey_robotstxt": True}))
    mw.process_request(Request("http://b.com/1"))  # another host has its own
    with pytest.raises(IgnoreRequest, match="host_budget"):
        mw.process_request(Request("http://a.com/3"))


def test_zero_turns_each_bound_off() -> None:
    mw = middleware(TIANWANG_MAX_HOST_PAGES=0, TIANWANG_MAX_URL_LENGTH=0,
                    TIANWANG_MAX_PATH_REPEATS=0)
    for _ in range(3):
        assert mw.process_request(Request("http://a.com/a/a/a/a/" + "x" * 3000)) is None


@pytest.mark.parametrize("name", ["TIANWANG_MAX_HOST_PAGES", "TIANWANG_MAX_URL_LENGTH",
                                  "TIANWANG_MAX_PATH_REPEATS"])
def test_a_bad_bound_stops_the_crawl_at_start(name: str) -> None:
    with pytest.raises(SettingError, match=name):
        middleware(**{name: -1})


# -- the traps of the junk web, crawled with TIANWANG_MAX_LEVELS=0 ---------------------------


def trap_requests(crawl: HostileCrawl, kind: str) -> list[str]:
    """The urls of a trap host the crawl sent (robots.txt aside), from its own FetchLog; the
    server served just those (a url perhaps once more: a pooled connection's resend)."""
    host = TRAP[kind]
    served = [line["url"] for line in crawl.log if url_host(line["url"]) == host]
    assert served_beyond_sent(served, [url for url in crawl.sent if url_host(url) == host]) == {}
    return [url for url in crawl.sent
            if url_host(url) == host and not url.endswith("/robots.txt")]


def test_session_ids_are_stripped_so_the_trap_is_its_real_pages(
    hostile_crawl: HostileCrawl,
) -> None:
    asked = trap_requests(hostile_crawl, "session")
    # The homepage and its pages, each once, and never a url with a session id.
    assert sorted(asked) == sorted({f"http://{TRAP['session']}/"} | {
        f"http://{TRAP['session']}/p{k}.html" for k in range(SESSION_PAGES)})
    assert not any("sid=" in url for url in asked)
    assert hostile_crawl.stats["tianwang/urls/session_ids_stripped"] > SESSION_PAGES


def test_repeated_segments_and_long_urls_are_refused(hostile_crawl: HostileCrawl) -> None:
    asked = trap_requests(hostile_crawl, "repeat")
    # /a/ five times served, six times refused (TIANWANG_MAX_PATH_REPEATS: 5)
    assert max(url.split("?")[0].split("/")[3:].count("a") for url in asked) == 5
    assert max(len(url) for url in asked) <= 2048
    assert any(len(url) > 1900 for url in asked)  # the growing query went to its bound
    stats = hostile_crawl.stats
    assert stats["tianwang/filter/repeated_path"] >= 1 and stats["tianwang/filter/url_length"] == 1


def test_the_calendar_is_held_to_the_host_budget(hostile_crawl: HostileCrawl) -> None:
    asked = trap_requests(hostile_crawl, "calendar")
    assert len(asked) == HOST_PAGES == len(set(asked))
    assert hostile_crawl.stats["tianwang/filter/host_budget"] >= 1
    budgets = Counter(url_host(url) for url in hostile_crawl.sent)
    assert max(budgets.values()) <= HOST_PAGES + 1  # + robots.txt
