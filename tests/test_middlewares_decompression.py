"""BoundedDecompressionMiddleware: decoded bodies held to TIANWANG_MAX_PAGE_BYTES, for pages
and robots.txt alike, and binary bodies declared text refused; then a crawl of the junk
web's bombs and fake text pages, checked against its truth and the crawl's peak RSS."""

from __future__ import annotations

import gzip
import hashlib
import zlib

import brotli
import pytest
from backports import zstd
from scrapy import Request
from scrapy.exceptions import IgnoreRequest
from scrapy.http import HtmlResponse, Response

from tests.conftest import project_crawler
from tests.hostile_crawl import HostileCrawl
from tianwang import meta
from tianwang.middlewares.decompression import BoundedDecompressionMiddleware
from tianwang.middlewares.failures import DownloadFailed
from tianwang.testweb.junk import BOMB_HOSTS, BOMB_PAGE, FAKE_TEXT, TEXT_HOST

MB = 1024 * 1024
ENCODE = {"gzip": gzip.compress, "deflate": zlib.compress, "br": brotli.compress,
          "zstd": zstd.compress}


def middleware(limit: int = MB) -> BoundedDecompressionMiddleware:
    return BoundedDecompressionMiddleware.from_crawler(
        project_crawler(TIANWANG_MAX_PAGE_BYTES=limit))


def response(url: str, body: bytes, encoding: str, mime: str = "text/html") -> Response:
    headers = {"Content-Type": mime, "Content-Encoding": encoding}
    return Response(url, body=ENCODE[encoding](body), headers=headers)


@pytest.mark.parametrize("encoding", sorted(ENCODE))
@pytest.mark.parametrize("url", ["http://a.com/page.html", "http://a.com/robots.txt"])
def test_a_body_inflating_past_the_limit_is_refused_and_counted(encoding: str, url: str) -> None:
    mw = middleware()
    request = Request(url, meta={"dont_obey_robotstxt": url.endswith("robots.txt")})
    with pytest.raises(IgnoreRequest, match="too_big"):
        mw.process_response(request, response(url, bytes(MB + 1), encoding))
    assert mw.stats.get_value("tianwang/filter/too_big") == 1


@pytest.mark.parametrize("encoding", sorted(ENCODE))
def test_a_body_within_the_limit_is_decoded_as_scrapy_does(encoding: str) -> None:
    body = "<html><body>天网 ok</body></html>".encode() * 1000
    decoded = middleware().process_response(Request("http://a.com/"),
                                            response("http://a.com/", body, encoding))
    assert isinstance(decoded, HtmlResponse) and decoded.body == body
    assert b"Content-Encoding" not in decoded.headers  # what is stored, as before


def test_a_broken_stream_is_a_counted_bad_encoding() -> None:
    mw = middleware()
    broken = Response("http://a.com/", body=b"\x1f\x8b\x08garbage", headers={
        "Content-Type": "text/html", "Content-Encoding": "deflate"})
    with pytest.raises(IgnoreRequest, match="bad_encoding"):
        mw.process_response(Request("http://a.com/"), broken)
    assert mw.stats.get_value("tianwang/error/bad_encoding") == 1


ROBOTS = b"User-agent: *\nDisallow: /secret\n" + b"".join(
    b"# %d %s\n" % (k, hashlib.md5(b"%d" % k).hexdigest().encode()) for k in range(60000))


@pytest.mark.parametrize("encoding", sorted(ENCODE))
def test_a_robots_txt_is_decoded_to_its_first_bytes_never_refused(encoding: str) -> None:
    """meta.KEEP_FIRST (RobotsMiddleware's 500 KiB): the first bytes of a longer file, of a
    stream cut where ContentTypeMiddleware stopped it too, under any page limit."""
    keep = 500 * 1024
    mw = middleware(limit=100 * 1024)
    request = Request("http://a.com/robots.txt", meta={
        "dont_obey_robotstxt": True, meta.KEEP_FIRST: keep})
    whole = response("http://a.com/robots.txt", ROBOTS, encoding, "text/plain")
    assert len(ROBOTS) > 2 * keep
    assert mw.process_response(request, whole).body == ROBOTS[:keep]
    cut = whole.replace(body=whole.body[: len(whole.body) // 3])
    decoded = mw.process_response(request, cut).body
    assert 0 < len(decoded) <= keep and ROBOTS.startswith(decoded)
    garbage = whole.replace(body=b"\x00garbage, not compressed" * 40)
    with pytest.raises(DownloadFailed, match="bad_encoding"):  # unavailable, not allow-all
        mw.process_response(request, garbage)
    assert mw.stats.get_value("tianwang/filter/too_big") is None


@pytest.mark.parametrize("path", ["/photo.html", "/tool.txt", "/raw"])
def test_binary_declared_text_is_refused_once_decoded(path: str) -> None:
    mime, body, reason = FAKE_TEXT[path]
    mw = middleware()
    with pytest.raises(IgnoreRequest, match=reason):
        mw.process_response(Request(f"http://a.com{path}"),
                            response(f"http://a.com{path}", body, "gzip", mime or ""))


# -- a crawl of the bombs and the fake text (tests/hostile_crawl.py) --------------------------


def test_bombs_as_pages_and_robots_txt_are_refused_counted_and_cost_no_memory(
    hostile_crawl: HostileCrawl,
) -> None:
    asked = {line["url"] for line in hostile_crawl.log}
    for host in BOMB_HOSTS:  # each asked for, as robots.txt and as a page, and not stored
        for path in ("/robots.txt", BOMB_PAGE):
            assert f"http://{host}{path}" in asked
            assert f"http://{host}{path}" not in hostile_crawl.stored
        assert f"http://{host}/" in hostile_crawl.stored  # the host's homepage is
    # The pages are refused; of a robots.txt bomb the first 500 KiB are read (RFC 9309),
    # zeros: no rules, and the homepage is fetched.
    assert hostile_crawl.stats["tianwang/filter/too_big"] == len(BOMB_HOSTS)
    assert hostile_crawl.stats["tianwang/robots/cut"] == len(BOMB_HOSTS)
    # Six gigabytes were offered; before the bound one bomb took the crawl past 1 GB (the
    # three pages at once: 6.3 GB, bench/RESULTS.md). The bound: a crawl's baseline
    # (a Scrapy process, under 256 MB) plus 4 x TIANWANG_MAX_PAGE_BYTES (10 MiB) for each of
    # the six bombs that may be in flight at once. Seen: 161-171 MB alone, 435 MB once on a
    # loaded machine.
    bound_mb = 256 + 4 * 10 * 2 * len(BOMB_HOSTS)
    assert hostile_crawl.max_rss_kb < bound_mb * 1024, hostile_crawl.max_rss_kb
    assert "Traceback" not in hostile_crawl.stderr


def test_binary_declared_text_is_not_stored_and_real_text_is(hostile_crawl: HostileCrawl) -> None:
    stored, truth = hostile_crawl.stored, hostile_crawl.truth
    for path, (_mime, body, reason) in FAKE_TEXT.items():
        url = f"http://{TEXT_HOST}{path}"
        assert truth[url]["filter"] == reason
        if reason:
            assert url not in stored, url
        else:  # the body as served, GBK and UTF-8 Chinese alike
            assert hashlib.md5(stored[url].split(b"\r\n\r\n", 1)[1]).hexdigest() == \
                truth[url]["md5"] == hashlib.md5(body).hexdigest()
    stats = hostile_crawl.stats
    assert stats["tianwang/filter/not_text"] == 2 and stats["tianwang/filter/content_type"] == 1
