"""robots.txt in full (tianwang/middlewares/robots.py), against the protocol hosts' truth and
the test web's access log: Crawl-delay, 4xx allow all, 5xx and unreachable wait, the cache."""

from __future__ import annotations

import pytest

from tests.conftest import project_crawler, scrapy_crawl
from tests.filters_crawl import final_stats
from tests.protocols_crawl import (
    MAX_CRAWL_DELAY,
    ROBOTS_RETRIES,
    ROBOTS_RETRY_DELAY,
    ROBOTS_TTL,
)
from tianwang.config import SettingError
from tianwang.middlewares.robots import RobotsConfig, RobotsParser
from tianwang.testweb import protocols as web


def _paths(crawl, host: str) -> list[str]:
    return [line["url"].split(host, 1)[1] for line in crawl.requests(host)]


def _stored_of(crawl, truth, host: str) -> tuple[set[str], set[str]]:
    pages = {url for url, page in truth.items() if page["host"] == host
             and page["content_type"] == "text/html"}
    return pages & set(crawl.stored), pages


def _gaps(crawl, host: str) -> list[float]:
    times = [line["time"] for line in crawl.requests(host)]
    assert len(times) >= 6  # robots.txt, the homepage, four pages
    return [later - earlier for earlier, later in zip(times, times[1:], strict=False)]


def test_crawl_delay_spaces_every_request_to_the_host(protocols_crawls) -> None:
    gaps = _gaps(protocols_crawls.off, web.CRAWL_DELAY_HOST)
    assert min(gaps) >= web.CRAWL_DELAY, gaps
    assert protocols_crawls.off.stats["tianwang/robots/crawl_delay_hosts"] == 1


def test_crawl_delay_is_capped_by_the_setting(protocols_crawls) -> None:
    gaps = _gaps(protocols_crawls.on, web.CRAWL_DELAY_HOST)  # TIANWANG_MAX_CRAWL_DELAY=0.5
    assert min(gaps) >= MAX_CRAWL_DELAY, gaps
    assert min(gaps) < web.CRAWL_DELAY, gaps
    assert protocols_crawls.on.stats["tianwang/robots/crawl_delay_capped"] >= 1


def test_crawl_delay_host_is_crawled_whole_but_its_disallowed_page(protocols_crawls) -> None:
    crawl, truth = protocols_crawls.off, protocols_crawls.truth
    stored, pages = _stored_of(crawl, truth, web.CRAWL_DELAY_HOST)
    assert stored == {url for url in pages if truth[url]["fetched"]}
    assert "/private/secret.html" not in _paths(crawl, web.CRAWL_DELAY_HOST)


def test_slow_host_does_not_hold_back_the_others(protocols_crawls) -> None:
    crawl = protocols_crawls.off
    slow = crawl.requests(web.CRAWL_DELAY_HOST)
    start, end = slow[0]["time"], slow[-1]["time"]
    others = [line for line in crawl.log if start < line["time"] < end
              and web.CRAWL_DELAY_HOST not in line["url"]]
    assert len(others) >= 10  # the other hosts' pages came while it waited


def test_robots_4xx_allows_all_whatever_its_body_says(protocols_crawls) -> None:
    # The 404 body reads "Disallow: /": Scrapy's middleware would parse it and fetch nothing.
    stored, pages = _stored_of(protocols_crawls.off, protocols_crawls.truth, web.ROBOTS_404_HOST)
    assert stored == pages and len(pages) == 3


@pytest.mark.parametrize("host", [web.ROBOTS_503_HOST, web.ROBOTS_DOWN_HOST])
def test_robots_unavailable_means_nothing_fetched_after_its_retries(protocols_crawls,
                                                                      host: str) -> None:
    crawl = protocols_crawls.off
    requests = crawl.requests(host)
    assert [line["url"] for line in requests] == [f"http://{host}/robots.txt"] * (
        1 + ROBOTS_RETRIES)
    gaps = [b["time"] - a["time"] for a, b in zip(requests, requests[1:], strict=False)]
    assert min(gaps) >= ROBOTS_RETRY_DELAY
    assert crawl.stats["tianwang/robots/unavailable_dropped"] == 2


def test_robots_that_fails_once_is_waited_for_then_obeyed(protocols_crawls) -> None:
    crawl, truth = protocols_crawls.off, protocols_crawls.truth
    requests = crawl.requests(web.ROBOTS_FLAKY_HOST)
    assert [line["status"] for line in requests[:2]] == [503, 200]
    assert requests[0]["url"].endswith("/robots.txt") and requests[1]["url"].endswith("/robots.txt")
    assert requests[1]["time"] - requests[0]["time"] >= ROBOTS_RETRY_DELAY
    stored, pages = _stored_of(crawl, truth, web.ROBOTS_FLAKY_HOST)
    assert stored == {url for url in pages if truth[url]["fetched"]} and len(stored) == 2
    assert "/nope.html" not in _paths(crawl, web.ROBOTS_FLAKY_HOST)


def test_robots_txt_is_fetched_again_after_its_ttl(protocols_crawls) -> None:
    requests = protocols_crawls.on.requests(web.CRAWL_DELAY_HOST)
    robots = [line["time"] for line in requests if line["url"].endswith("/robots.txt")]
    assert len(robots) >= 2  # the host is crawled for longer than the TTL
    assert min(b - a for a, b in zip(robots, robots[1:], strict=False)) >= ROBOTS_TTL
    # With the default TTL (a day) the same host's robots.txt is asked for once.
    assert [p for p in _paths(protocols_crawls.off, web.CRAWL_DELAY_HOST)
            if p == "/robots.txt"] == ["/robots.txt"]


def test_parser_reads_crawl_delay_and_sitemaps() -> None:
    parser = RobotsParser(b"User-agent: *\nCrawl-delay: 2.5\nDisallow: /x\n"
                          b"Sitemap: http://h.example/s.xml\n")
    assert parser.crawl_delay("tianwang/0.1") == 2.5
    assert parser.sitemaps == ["http://h.example/s.xml"]
    assert not parser.allowed("http://h.example/x", "tianwang/0.1")
    assert parser.allowed("http://h.example/y", "tianwang/0.1")


@pytest.mark.parametrize(("name", "value"), [
    ("TIANWANG_ROBOTS_TTL", 86401),  # RFC 9309: a day at most
    ("TIANWANG_ROBOTS_TTL", 0),
    ("TIANWANG_ROBOTS_RETRY_DELAY", "soon"),
    ("TIANWANG_ROBOTS_RETRIES", -1),
    ("TIANWANG_MAX_CRAWL_DELAY", -1),
])
def test_bad_settings_are_refused(name: str, value: object) -> None:
    with pytest.raises(SettingError, match=name):
        RobotsConfig.from_settings(project_crawler(**{name: value}).settings)


def test_replaces_scrapys_middleware_in_the_project_settings() -> None:
    crawler = project_crawler()
    middlewares = crawler.settings.getdict("DOWNLOADER_MIDDLEWARES")
    assert middlewares["scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware"] is None
    assert middlewares["tianwang.middlewares.robots.RobotsMiddleware"] == 100


def test_unreachable_robots_is_retried_then_the_request_dropped(tmp_path) -> None:
    """No server at all (a refused connection, fetched directly): as a 5xx, not allow all."""
    import socket

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    result = scrapy_crawl("site", {"seeds": f"http://localhost:{port}/"}, {
        "TIANWANG_PROXY": "", "TIANWANG_BLOCK_PRIVATE": "False",
        "TIANWANG_DROP_OTHER_PORTS": "False", "TIANWANG_DATA_DIR": str(tmp_path / "data"),
        "TIANWANG_ROBOTS_RETRY_DELAY": "0.2", "TIANWANG_ROBOTS_RETRIES": "1",
    }, cwd=tmp_path, timeout=60)
    # Nothing could be stored: the crawl did not do its job (README, exit status).
    assert result.returncode == 1, result.stderr[-3000:]
    assert result.stderr.rstrip().splitlines()[-1].endswith(
        "crawl FAILED (no page stored): stored 0, kept 0 already stored, "
        "refused 1 (unavailable_dropped 1), failed 2 (refused 2)")  # both robots.txt tries
    stats = final_stats(result.stderr)
    assert stats["robotstxt/request_count"] == 2  # robots.txt, then once more
    assert stats["tianwang/robots/unavailable_dropped"] == 1
    assert "downloader/request_count" in stats and stats["downloader/request_count"] == 2
