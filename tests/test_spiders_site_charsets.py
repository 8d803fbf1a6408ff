"""Links of real pages' charsets and content codings (tianwang/spiders/site.py), against the
protocol hosts' truth: GB2312 declared but GB18030 used, a charset only in <meta>, a BOM that
contradicts the header; gzip, deflate and br bodies stored and read back."""

from __future__ import annotations

from tests.conftest import tianwang_cli
from tests.spec_reader import http_parts
from tianwang.formats.linksfile import out_links
from tianwang.testweb import protocols as web
from tianwang.testweb.protocols import ENCODED_PAGES, ProtocolWeb


def test_charset_pages_give_the_truths_links(protocols_crawls) -> None:
    truth, crawl = protocols_crawls.truth, protocols_crawls.off
    pages = [url for url, page in truth.items() if page["host"] == web.CHARSET_HOST]
    assert len(pages) == 8
    for url in pages:
        assert url in crawl.stored
        assert out_links(crawl.data, url, web.CHARSET_HOST) == truth[url]["links"], url
    assert not [line for line in crawl.requests(web.CHARSET_HOST) if line["status"] == 404
                and not line["url"].endswith("/robots.txt")]


def test_encoded_bodies_are_stored_and_read_back(protocols_crawls, tmp_path) -> None:
    truth, crawl = protocols_crawls.truth, protocols_crawls.off
    plain = ProtocolWeb()
    for path in ENCODED_PAGES:
        url = f"http://{web.ENCODING_HOST}{path}"
        assert out_links(crawl.data, url, web.ENCODING_HOST) == truth[url]["links"]
        result = tianwang_cli("records", "cat", str(crawl.data), "--url", url, "--body")
        assert result.returncode == 0, result.stderr
        assert result.stdout == plain.plain_body(url).decode()


def test_records_hold_the_bytes_as_sent_less_the_content_coding(protocols_crawls) -> None:
    """DESIGN: the body undecoded (no charset transcoding), Content-Encoding and a
    Content-Length that no longer matches dropped once the coding is undone."""
    crawl, served = protocols_crawls.off, ProtocolWeb()
    for url, page in protocols_crawls.truth.items():
        if page["host"] == web.CHARSET_HOST:
            _status, headers, body = http_parts(crawl.stored[url])
            assert body == served.pages[url][0].body, url  # GB18030, GBK, BOM: as they came
        elif page["host"] == web.ENCODING_HOST:
            _status, headers, body = http_parts(crawl.stored[url])
            assert "content-encoding" not in headers
            assert headers.get("content-length", str(len(body))) == str(len(body))
            assert body == served.plain_body(url)
