"""Cookies bounded as a browser bounds them (tianwang/middlewares/cookies.py): each bound
alone, then a real crawl of a host that floods its Cookie header, read from its access log."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from scrapy import Request
from scrapy.http import HtmlResponse

from tests.conftest import ROOT, scrapy_crawl
from tests.filters_crawl import final_stats
from tianwang.middlewares.cookies import BoundedCookiesMiddleware
from tianwang.testweb.floods import COOKIE_FLOOD
from tianwang.testweb.launcher import TestWebProcess


class Stats:
    def __init__(self) -> None:
        self.counts: dict[str, int] = {}

    def inc_value(self, key: str, count: int = 1) -> None:
        self.counts[key] = self.counts.get(key, 0) + count


def middleware(max_size: int = 4096, per_domain: int = 180, max_header: int = 8190,
               max_bytes: int = 1 << 24) -> BoundedCookiesMiddleware:
    return BoundedCookiesMiddleware(max_size, per_domain, max_header, max_bytes, Stats())


def visit(cookies: BoundedCookiesMiddleware, url: str, set_cookies: list[str]) -> bytes:
    """Send a request (its Cookie header returned) and take a response setting cookies."""
    request = Request(url)
    cookies.process_request(request)
    response = HtmlResponse(url, headers={"Set-Cookie": set_cookies}, body=b"", request=request)
    cookies.process_response(request, response)
    return request.headers.get("Cookie") or b""


def sent(cookies: BoundedCookiesMiddleware, url: str) -> list[bytes]:
    return [pair.split(b"=")[0] for pair in visit(cookies, url, []).split(b"; ") if pair]


def test_cookies_come_back_as_scrapys_do() -> None:
    cookies = middleware()
    visit(cookies, "http://www.example.com/", ["a=1; Path=/", "b=2; Path=/; Domain=example.com"])
    assert sent(cookies, "http://www.example.com/x") == [b"a", b"b"]
    assert sent(cookies, "http://img.example.com/") == [b"b"]  # the domain cookie only
    assert sent(cookies, "http://www.other.com/") == []


def test_a_cookie_for_a_public_suffix_stays_with_its_host() -> None:
    cookies = middleware()
    visit(cookies, "http://www.example.com/", ["all=1; Domain=com", "blog=1; Domain=blogspot.com"])
    assert sent(cookies, "http://www.other.com/") == []
    visit(cookies, "http://a.blogspot.com/", ["all=1; Domain=blogspot.com", "mine=1"])
    assert sent(cookies, "http://b.blogspot.com/") == []
    assert sent(cookies, "http://a.blogspot.com/") == [b"mine"]


def test_a_cookie_too_big_is_not_kept() -> None:
    cookies = middleware(max_size=100)
    visit(cookies, "http://www.example.com/", ["big=" + "v" * 98, "fits=" + "v" * 96])
    assert sent(cookies, "http://www.example.com/") == [b"fits"]
    assert cookies.stats.counts == {"tianwang/cookies/too_big": 1}


def test_a_domain_keeps_its_first_cookies_and_may_replace_them() -> None:
    cookies = middleware(per_domain=3)
    visit(cookies, "http://www.example.com/", [f"c{n}=1" for n in range(5)])
    assert sent(cookies, "http://www.example.com/") == [b"c0", b"c1", b"c2"]
    visit(cookies, "http://www.example.com/", ["c1=new"])  # a cookie it holds: replaced
    assert b"c1=new" in visit(cookies, "http://www.example.com/", [])
    visit(cookies, "http://www.other.com/", ["o=1"])  # another domain has its own count
    assert sent(cookies, "http://www.other.com/") == [b"o"]


def test_the_cookie_header_is_cut_to_its_limit() -> None:
    cookies = middleware(max_header=50)
    visit(cookies, "http://www.example.com/", [f"c{n}={'v' * 10}" for n in range(10)])
    header = visit(cookies, "http://www.example.com/", [])
    assert len(header) <= 50 and header.startswith(b"c") and header.count(b"=") == 3
    assert cookies.stats.counts["tianwang/cookies/header_cut"] == 1


def test_the_jars_forget_the_domains_used_longest_ago() -> None:
    cookies = middleware(max_bytes=300)
    for site in ("a", "b", "c"):
        visit(cookies, f"http://www.{site}.com/", [f"{site}={'v' * 99}"])
    assert sent(cookies, "http://www.a.com/") == [b"a"]  # used again: a is the newest now
    visit(cookies, "http://www.d.com/", [f"d={'v' * 99}"])  # past 300 bytes: b goes
    assert sent(cookies, "http://www.b.com/") == []
    assert [sent(cookies, f"http://www.{s}.com/") for s in "acd"] == [[b"a"], [b"c"], [b"d"]]


def test_a_request_may_keep_out_of_the_jar_or_bring_its_own_cookies() -> None:
    cookies = middleware()
    visit(cookies, "http://www.example.com/", ["a=1"])
    alone = Request("http://www.example.com/", meta={"dont_merge_cookies": True})
    cookies.process_request(alone)
    assert b"Cookie" not in alone.headers
    own = Request("http://www.example.com/", cookies={"given": "yes"})
    cookies.process_request(own)
    assert own.headers.get("Cookie") in (b"a=1; given=yes", b"given=yes; a=1")


def test_the_suffix_list_is_never_downloaded(tmp_path: Path) -> None:
    """The list comes from the snapshot in tldextract's package: with every connection
    refused and a home of its own, registered domains are known and nothing is written."""
    code = (
        "import socket\n"
        "def refuse(*a, **k): raise OSError('no network here')\n"
        "socket.socket.connect = refuse\n"
        "socket.create_connection = refuse\n"
        "from tianwang.domains import registered_domain, is_public_suffix\n"
        "print(registered_domain('a.b.pku.edu.cn'), registered_domain('x.blogspot.com'),\n"
        "      is_public_suffix('com'))\n"
    )
    env = {**os.environ, "HOME": str(tmp_path), "XDG_CACHE_HOME": str(tmp_path / "cache"),
           "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["pku.edu.cn", "x.blogspot.com", "True"]
    assert not list(tmp_path.rglob("*"))


@pytest.fixture(scope="module")
def flood_crawl(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[dict], dict]:
    workdir = tmp_path_factory.mktemp("cookies")
    log = workdir / "access.jsonl"
    with TestWebProcess(1, 2, 10, access_log=log, extra_args=("--floods",)) as web:
        result = scrapy_crawl("site", {"seeds": f"http://{COOKIE_FLOOD}/"},
                              {"TIANWANG_PROXY": web.address, "CLOSESPIDER_PAGECOUNT": "100",
                               "TIANWANG_MAX_LEVELS": "0",
                               "TIANWANG_DATA_DIR": str(workdir / "data")}, cwd=workdir)
    assert result.returncode == 0, result.stderr[-3000:]
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    return [line for line in lines if COOKIE_FLOOD in line["url"]], final_stats(result.stderr)


def test_a_cookie_flood_never_floods_the_requests_it_gets_back(flood_crawl) -> None:
    """Every page of the host sets 20 cookies of 4 KB: the server sees at most 8190 bytes of
    Cookie header, from at most 180 cookies, however long the crawl."""
    requests, stats = flood_crawl
    sizes = [line.get("cookie_bytes", 0) for line in requests]
    assert len(requests) >= 100 and max(sizes) > 4000  # cookies came back...
    assert max(sizes) <= 8190  # ...within the header's bound
    assert stats["tianwang/cookies/domain_full"] > 0
    assert stats["tianwang/cookies/header_cut"] > 0
