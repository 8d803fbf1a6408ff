"""The test web's protocol hosts (tianwang/testweb/protocols.py): what they answer, and that
`--protocols` adds them to serve, truth and hosts."""

from __future__ import annotations

import gzip
import json

from tests.conftest import tianwang_cli
from tianwang.testweb import protocols as web
from tianwang.testweb.model import SyntheticWeb


def test_busy_host_answers_429_then_200() -> None:
    model = SyntheticWeb(3, 1, protocols=True)
    first = model.respond(f"http://{web.BUSY_HOST}/")
    assert (first.status, first.header("Retry-After")) == (429, str(web.RETRY_AFTER))
    assert model.respond(f"http://{web.BUSY_HOST}/").status == 200
    dated = model.respond(f"http://{web.BUSY_HOST}/b2.html")
    assert dated.status == 503 and dated.header("Retry-After").endswith(" GMT")


def test_robots_cases() -> None:
    model = SyntheticWeb(3, 1, protocols=True)

    def robots(host: str) -> int:
        return model.respond(f"http://{host}/robots.txt").status

    assert robots(web.ROBOTS_404_HOST) == 404
    assert [robots(web.ROBOTS_503_HOST) for _ in range(3)] == [503, 503, 503]
    assert [robots(web.ROBOTS_FLAKY_HOST) for _ in range(2)] == [503, 200]
    assert b"Crawl-delay: 1" in model.respond(f"http://{web.CRAWL_DELAY_HOST}/robots.txt").body


def test_sitemap_bomb_is_what_it_says() -> None:
    model = SyntheticWeb(3, 1, protocols=True)
    huge = model.respond(f"http://{web.BOMB_HOST}/bomb/huge.xml").body
    assert huge.count(b"<url>") == web.BOMB_URLS
    bomb = model.respond(f"http://{web.BOMB_HOST}/bomb/zip.xml.gz").body
    assert len(bomb) < 100_000 and len(gzip.decompress(bomb)) > web.BOMB_INFLATED
    nested = model.respond(f"http://{web.BOMB_HOST}/bomb/deep-7-2.xml").body
    assert b"deep-8-0.xml" in nested and b"<sitemapindex" in nested


def test_charset_page_needs_gb18030() -> None:
    model = SyntheticWeb(3, 1, protocols=True)
    page = model.respond(f"http://{web.CHARSET_HOST}/gb18030.html")
    assert "gb2312" in page.header("Content-Type")
    body = page.body.decode("gb18030")
    assert "㐀" in body and "€" in body
    try:
        page.body.decode("gb2312")
    except UnicodeDecodeError:
        pass
    else:
        raise AssertionError("the page must not be plain GB2312")


def test_cli_adds_the_hosts_only_with_the_flag() -> None:
    plain = tianwang_cli("testweb", "hosts", "--seed", "3", "--hosts", "2").stdout.split()
    flagged = tianwang_cli("testweb", "hosts", "--seed", "3", "--hosts", "2",
                           "--protocols").stdout.split()
    assert flagged == plain + [f"http://{host}/" for host in web.ProtocolWeb.hosts]
    truth = tianwang_cli("testweb", "truth", "--seed", "3", "--hosts", "2",
                         "--protocols").stdout.splitlines()
    kinds = [json.loads(line)["kind"] for line in truth]
    assert kinds.count("protocols") == len(web.ProtocolWeb().pages)
