"""robots.txt in full (tianwang/middlewares/robots.py), against the protocol hosts' truth and
the test web's access log: Crawl-delay, 4xx allow all, 5xx and unreachable wait, the cache;
and against the raw hostile web's (tests/hostile_web.py): files over every limit, byte order
marks, a body that cannot be read."""

from __future__ import annotations

import pytest

from tests import hostile_web
from tests.conftest import project_crawler, scrapy_crawl
from tests.filters_crawl import final_stats
from tests.protocols_crawl import (
    MAX_CRAWL_DELAY,
    ROBOTS_RETRIES,
    ROBOTS_RETRY_DELAY,
    ROBOTS_TTL,
)
from tianwang.config import SettingError
from tianwang.middlewares.robots import MAX_ROBOTS_BYTES, RobotsConfig, RobotsParser
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


# A retry delay of 0 too: the request that waited for the last try is dropped by its
# outcome, however late it comes back (before, each return past the delay asked again).
@pytest.mark.parametrize("retry_delay", ["0.2", "0"])
def test_unreachable_robots_is_retried_then_the_request_dropped(tmp_path, retry_delay) -> None:
    """No server at all (a refused connection, fetched directly): as a 5xx, not allow all."""
    import socket

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    result = scrapy_crawl("site", {"seeds": f"http://localhost:{port}/"}, {
        "TIANWANG_PROXY": "", "TIANWANG_BLOCK_PRIVATE": "False",
        "TIANWANG_DROP_OTHER_PORTS": "False", "TIANWANG_DATA_DIR": str(tmp_path / "data"),
        "TIANWANG_ROBOTS_RETRY_DELAY": retry_delay, "TIANWANG_ROBOTS_RETRIES": "1",
    }, cwd=tmp_path, timeout=60)
    # Nothing could be stored: the crawl did not do its job (docs/crawling.md, exit status).
    assert result.returncode == 1, result.stderr[-3000:]
    assert result.stderr.rstrip().splitlines()[-1].endswith(
        "crawl FAILED (no page stored): stored 0, kept 0 already stored, "
        "refused 1 (unavailable_dropped 1), failed 2 (refused 2)")  # both robots.txt tries
    stats = final_stats(result.stderr)
    assert stats["robotstxt/request_count"] == 2  # robots.txt, then once more
    assert stats["tianwang/robots/unavailable_dropped"] == 1
    assert "downloader/request_count" in stats and stats["downloader/request_count"] == 2


# -- RFC 9309 2.5 and its encodings, against the raw hostile web (tests/hostile_web.py) ------


def test_oversized_robots_txt_is_obeyed_from_its_first_500_kib(hostile_web_crawl) -> None:
    """11 MB, 50 MB, chunked, 1 MB in 1-byte chunks, 12 MB of gzip, a gzip inflating to
    12 MB, a UTF-8 BOM, UTF-16 (LE, BE): `Disallow: /secret` on line 2 is obeyed on every
    host, the rest fetched."""
    crawl = hostile_web_crawl
    for host in hostile_web.ROBOTS_HOSTS:
        asked = crawl.asked(host)
        assert [p for p in asked if not hostile_web.robots_allowed(p)] == [], host
        assert set(asked) == {"/robots.txt", "/", "/open.html"}, (host, asked)
        assert {f"http://{host}/", f"http://{host}/open.html"} <= set(crawl.stored), host
    assert crawl.stats["robotstxt/forbidden"] == 2 * len(hostile_web.ROBOTS_HOSTS)
    # Of the five larger than 500 KiB, the first 500 KiB were read: a few network buffers
    # more at most, never the file (the server's own count of the bytes that left it). The
    # one in 1-byte chunks was read to its 65,536th chunk (tests/test_middlewares_failures.py:
    # each chunk costs a signal), and its last line, cut, dropped as any cut one.
    assert crawl.stats["tianwang/robots/cut"] == 6
    for host in ("www.robots-11mb.com", "www.robots-50mb.com", "www.robots-chunked.com",
                 "www.robots-tinychunks.com"):
        line = next(x for x in crawl.log if x["url"] == f"http://{host}/robots.txt")
        assert line["sent"] < 4 * 1024 * 1024 and not line["complete"], line


def test_a_robots_txt_that_cannot_be_read_is_unavailable_not_allow_all(hostile_web_crawl) -> None:
    crawl, host = hostile_web_crawl, hostile_web.UNREADABLE_ROBOTS_HOST
    # Asked twice (TIANWANG_ROBOTS_RETRIES=1), nothing else of the host: complete disallow.
    assert crawl.asked(host) == ["/robots.txt", "/robots.txt"]
    assert not [url for url in crawl.stored if host in url]
    assert crawl.stats["tianwang/robots/unavailable_dropped"] == 1
    assert crawl.stats["tianwang/error/bad_encoding"] == 2


@pytest.mark.parametrize("body", [
    b"\xef\xbb\xbfUser-agent: *\nDisallow: /secret\n",
    "User-agent: *\nDisallow: /secret\n".encode("utf-16"),  # BOM, this machine's order
    b"\xff\xfe" + "User-agent: *\nDisallow: /secret\n".encode("utf-16-le"),
    b"\xfe\xff" + "User-agent: *\nDisallow: /secret\n".encode("utf-16-be"),
    b"User-agent: *\r\nDisallow: /secret\r\n",
])
def test_a_byte_order_mark_is_no_rule(body: bytes) -> None:
    parser = RobotsParser(body)
    assert not parser.allowed("http://a.com/secret/x.html", "tianwang")
    assert parser.allowed("http://a.com/open.html", "tianwang")


def test_the_line_the_500_kib_limit_cuts_is_dropped_not_read_as_a_shorter_rule() -> None:
    head = b"User-agent: *\nDisallow: /secret\n"
    filler = b"# " + b"x" * 97 + b"\n"
    body = head + filler * ((MAX_ROBOTS_BYTES - len(head)) // len(filler))
    body += b"Disallow: /" + b" " * (MAX_ROBOTS_BYTES - len(body) - 11) + b"private/\n"
    assert len(body) > MAX_ROBOTS_BYTES  # the limit falls inside the last rule
    parser = RobotsParser(body)
    assert parser.allowed("http://a.com/open.html", "tianwang")  # "Disallow: /" cut: dropped
    assert not parser.allowed("http://a.com/secret/x.html", "tianwang")
    # A download stopped anywhere is cut too, under the limit or not.
    assert RobotsParser(b"User-agent: *\nDisallow: /", cut=True).allowed("http://a.com/x", "t")
    assert not RobotsParser(b"User-agent: *\nDisallow: /").allowed("http://a.com/x", "t")


def test_a_host_slower_than_its_robots_ttl_is_still_crawled_whole(tmp_path) -> None:
    """DOWNLOAD_DELAY longer than TIANWANG_ROBOTS_TTL: every request of the host finds its
    robots.txt expired and waits for a fetch. Once that fetch is done it goes by the rules
    just read; asked to wait for another, it would wait for ever."""
    from tests.test_frontier_scheduler import read_tree
    from tests.truth import load_truth, reach
    from tianwang.testweb.launcher import TestWebProcess, write_seeds

    truth = load_truth(3, 2, 12)
    homes = [url for url, page in truth.items() if page["kind"] == "home"]
    expected = reach(truth, homes).stored(truth)
    assert len(expected) >= 4
    log = tmp_path / "access.jsonl"
    with TestWebProcess(3, 2, 12, access_log=log) as web:
        result = scrapy_crawl("site", {"seeds": str(write_seeds(tmp_path / "seeds.txt", homes))}, {
            "TIANWANG_PROXY": web.address, "TIANWANG_DATA_DIR": str(tmp_path / "data"),
            "TIANWANG_ROBOTS_TTL": "1", "DOWNLOAD_DELAY": "1.2",
            "CONCURRENT_REQUESTS_PER_DOMAIN": "1",
        }, cwd=tmp_path, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert set(read_tree(tmp_path / "data")) == expected
    lines = log.read_text().splitlines()
    robots = [line for line in lines if "/robots.txt" in line]
    assert len(robots) > len(homes)  # fetched again as they expired
    assert len(robots) <= len(lines) - len(robots)  # no request waited for two fetches
