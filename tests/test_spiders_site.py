"""The `site` spider against the 200-host test web, checked against its ground truth, and
against the raw hostile web's session ids and broken status lines (tests/hostile_web.py)."""

from __future__ import annotations

import email.utils
import hashlib
import json
from collections import Counter
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests import hostile_web
from tests.conftest import TestWeb, project_crawler, scrapy_crawl, tianwang_cli
from tests.spec_reader import http_parts, read_records
from tests.truth import host_of, is_stored_page, load_truth, reach
from tianwang import default_settings as project_settings
from tianwang.config import SettingError
from tianwang.spiders.site import get_session_ids, record_protocol
from tianwang.testweb.launcher import TestWebProcess, write_seeds
from tianwang.testweb.model import SyntheticWeb

# Seed most hosts, not all: the rest must never be fetched while links stay in-host.
SEEDED_SHARE = 0.75


def read_tree(data_dir: Path) -> list[dict]:
    """Every record of a tree, parsed by the independent spec reader."""
    records = []
    for path in sorted(data_dir.glob("data_*/*/page.dat")):
        for record in read_records(path.read_bytes()):
            record["path"] = path
            records.append(record)
    return records


def access_log(web: TestWeb, since: int) -> list[dict]:
    lines = web.access_log.read_text(encoding="utf-8").splitlines()[since:]
    return [json.loads(line) for line in lines]


@pytest.fixture(scope="module")
def crawl(testweb: TestWeb, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """One default crawl (3 levels, in-host, robots obeyed) of most hosts' homepages."""
    workdir = tmp_path_factory.mktemp("crawl")
    homepages = [url for url, page in testweb.truth.items() if page["kind"] == "home"]
    seeds = homepages[: int(len(homepages) * SEEDED_SHARE)]
    log_start = len(testweb.access_log.read_text(encoding="utf-8").splitlines())
    result = scrapy_crawl(
        "site",
        {"seeds": str(write_seeds(workdir / "seeds.txt", seeds))},
        {"TIANWANG_PROXY": testweb.address, "TIANWANG_DATA_DIR": str(workdir / "data")},
        cwd=workdir,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return {
        "seeds": seeds,
        "data": workdir / "data",
        "records": read_tree(workdir / "data"),
        "log": access_log(testweb, log_start),
        "stderr": result.stderr,
        "reach": reach(testweb.truth, seeds),
    }


def test_every_text_page_within_three_levels_is_stored_exactly_once(
    crawl: dict, testweb: TestWeb
) -> None:
    stored = Counter(record["header"]["url"] for record in crawl["records"])
    expected = crawl["reach"].stored(testweb.truth)
    assert len(expected) > 1000  # the test web is big enough to mean something
    assert set(stored) == expected
    assert [url for url, count in stored.items() if count > 1] == []


def test_only_successful_text_pages_are_stored(crawl: dict, testweb: TestWeb) -> None:
    for record in crawl["records"]:
        status, headers, body = http_parts(record["data"])
        page = testweb.truth[record["header"]["url"]]
        assert status == 200 and is_stored_page(page)
        assert headers["content-type"].split(";")[0].strip() in ("text/html", "text/plain")
        # The body as the server sent it: GBK pages are not re-encoded.
        assert hashlib.md5(body).hexdigest() == page["md5"]


def test_no_page_of_another_host_is_stored_or_fetched(crawl: dict) -> None:
    seeded_hosts = {host_of(url) for url in crawl["seeds"]}
    assert {host_of(record["header"]["url"]) for record in crawl["records"]} == seeded_hosts
    fetched_hosts = {host_of(entry["url"]) for entry in crawl["log"]}
    assert fetched_hosts == seeded_hosts


def test_nothing_beyond_three_levels_or_disallowed_by_robots_is_fetched(
    crawl: dict, testweb: TestWeb
) -> None:
    fetched = {entry["url"] for entry in crawl["log"] if not entry["url"].endswith("/robots.txt")}
    beyond = fetched - set(crawl["reach"].levels)
    assert beyond == set()
    disallowed = {
        url
        for url in fetched
        if not testweb.truth.get(url, {"robots_allowed": True})["robots_allowed"]
    }
    assert disallowed == set()
    assert any(not page["robots_allowed"] for page in testweb.truth.values())  # the case exists


def test_redirected_pages_record_their_origin(crawl: dict, testweb: TestWeb) -> None:
    origins = {
        record["header"]["url"]: record["header"].get("origin") for record in crawl["records"]
    }
    seeds = set(crawl["seeds"])  # fetched first as seeds, so a redirect to one stores nothing
    moved = {
        page["location"]: url
        for url, page in testweb.truth.items()
        if page["location"]
        and url in crawl["reach"].levels
        and page["location"] not in seeds
        and is_stored_page(testweb.truth.get(page["location"]))
    }
    assert moved, "the crawl met no redirect to a fresh page"
    assert {target: origins[target] for target in moved} == moved
    assert [url for url, origin in origins.items() if origin and url not in moved] == []


def test_records_are_filed_by_host_and_pass_verify(crawl: dict) -> None:
    for record in crawl["records"]:
        assert record["path"].parent.name == host_of(record["header"]["url"])
        expected_k = (
            int.from_bytes(hashlib.md5(record["path"].parent.name.encode()).digest()[:4], "big")
            % 256
        )
        assert record["path"].parent.parent.name == f"data_{expected_k}"
    result = tianwang_cli("records", "verify", str(crawl["data"]))
    assert result.returncode == 0, result.stderr
    assert f"{len(crawl['records'])} records" in result.stdout


def test_record_header_has_date_and_ip(crawl: dict) -> None:
    started = min(entry["time"] for entry in crawl["log"])
    for record in crawl["records"]:
        header = record["header"]
        fetched = email.utils.parsedate_to_datetime(header["date"]).timestamp()
        assert header["date"].endswith(" GMT") and fetched >= int(started)
        assert header["ip"] == "127.0.0.1"  # the proxy the crawl went through


def test_crawl_log_reports_what_it_stored(crawl: dict) -> None:
    hosts = len({host_of(url) for url in crawl["seeds"]})
    assert f"stored {len(crawl['records'])} pages from {hosts} hosts" in crawl["stderr"]


@pytest.fixture(scope="module")
def small_web(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestWeb]:
    """A web small enough to crawl whole: 12 hosts of at most 30 pages."""
    log = tmp_path_factory.mktemp("smallweb") / "access.jsonl"
    with TestWebProcess(5, 12, max_pages=30, access_log=log) as web:
        yield TestWeb(web.address, log, load_truth(5, 12, max_pages=30), 5, 12)


@pytest.mark.parametrize(
    ("levels", "stay_in_host"),
    [(0, False), (2, True), (0, True)],
)
def test_levels_and_host_scope_settings(
    small_web: TestWeb, tmp_path: Path, levels: int, stay_in_host: bool
) -> None:
    seed = next(url for url, page in small_web.truth.items() if page["kind"] == "home")
    result = scrapy_crawl(
        "site",
        {"seeds": seed},
        {
            "TIANWANG_PROXY": small_web.address,
            "TIANWANG_DATA_DIR": str(tmp_path / "data"),
            "TIANWANG_MAX_LEVELS": str(levels),
            "TIANWANG_STAY_IN_HOST": str(stay_in_host),
            "TIANWANG_COMPRESS": "False",
        },
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    stored = Counter(record["header"]["url"] for record in read_tree(tmp_path / "data"))
    expected = reach(small_web.truth, [seed], max_levels=levels, stay_in_host=stay_in_host).stored(
        small_web.truth
    )
    assert set(stored) == expected and max(stored.values()) == 1
    hosts = {host_of(url) for url in stored}
    assert (len(hosts) > 1) == (not stay_in_host)


def test_plain_records_carry_no_unzip_length(tmp_path: Path, small_web: TestWeb) -> None:
    seed = next(url for url, page in small_web.truth.items() if page["kind"] == "home")
    settings = {
        "TIANWANG_PROXY": small_web.address,
        "TIANWANG_DATA_DIR": str(tmp_path / "data"),
        "TIANWANG_COMPRESS": "0",
    }
    assert scrapy_crawl("site", {"seeds": seed}, settings, cwd=tmp_path).returncode == 0
    records = read_tree(tmp_path / "data")
    assert records and all("unzip-length" not in record["header"] for record in records)


ONE_HOST = {"seeds": "www.example.com"}


@pytest.mark.parametrize(
    ("args", "settings", "named"),
    [
        ({"seeds": "missing-seeds.txt"}, {}, "seeds file not found: missing-seeds.txt"),
        (
            {"seeds": "http://ok.example.com/,http://[bad/"},
            {},
            "malformed seed url: 'http://[bad/'",
        ),
        ({}, {}, "no seeds"),
        (ONE_HOST, {"TIANWANG_MAX_LEVELS": "-1"}, "TIANWANG_MAX_LEVELS"),
        (ONE_HOST, {"TIANWANG_MAX_LEVELS": "three"}, "TIANWANG_MAX_LEVELS"),
        (ONE_HOST, {"TIANWANG_STAY_IN_HOST": "maybe"}, "TIANWANG_STAY_IN_HOST"),
        (ONE_HOST, {"TIANWANG_PROXY": "127.0.0.1:8080"}, "TIANWANG_PROXY"),
        (ONE_HOST, {"TIANWANG_MAX_OPEN_FILES": "0"}, "TIANWANG_MAX_OPEN_FILES"),
        (ONE_HOST, {"TIANWANG_COMPRESS_LEVEL": "10"}, "TIANWANG_COMPRESS_LEVEL"),
        (ONE_HOST, {"TIANWANG_KEYWORD_BOOST": "-1"}, "TIANWANG_KEYWORD_BOOST"),
        (ONE_HOST, {"TIANWANG_KEYWORDS": "news,,sports"}, "TIANWANG_KEYWORDS"),
    ],
)
def test_bad_seeds_or_settings_stop_the_crawl_at_start(
    tmp_path: Path, args: dict, settings: dict, named: str
) -> None:
    # A dead proxy: if the crawl started anyway it would fail loudly, not silently pass.
    settings = {
        "TIANWANG_PROXY": "http://127.0.0.1:9",
        "TIANWANG_DATA_DIR": str(tmp_path / "data"),
        **settings,
    }
    result = scrapy_crawl("site", args, settings, cwd=tmp_path, timeout=120)
    assert result.returncode != 0
    assert named in result.stderr.strip().splitlines()[-1]
    assert not list(tmp_path.glob("data/data_*"))


def test_no_code_executing_port_is_opened(crawl: dict) -> None:
    enabled = crawl["stderr"].split("Enabled extensions:", 1)[1].split("]", 1)[0]
    assert "CoreStats" in enabled  # the list is there and was read
    assert "RemoteControl" not in enabled and "TelnetConsole" not in enabled


# Phrases of the test web's running text (tianwang/testweb/text.py) that some pages hold and
# others do not; mixed case, since a keyword matches whatever the case.
KEYWORDS = ("Crawler 网络", "报告经济")


class _TextParser(HTMLParser):
    """The text nodes of an HTML page, by the standard library's parser, not the spider's."""

    def __init__(self) -> None:
        super().__init__()
        self.parts: list[str] = []

    def handle_data(self, data: str) -> None:
        self.parts.append(data)


def holds_keyword(web: SyntheticWeb, page: dict) -> bool:
    parser = _TextParser()
    parser.feed(web.respond(page["url"]).body.decode(page["charset"]))
    text = "\n".join(parser.parts).lower()
    return any(keyword.lower() in text for keyword in KEYWORDS)


def test_requests_from_pages_holding_a_keyword_carry_the_boost(
    small_web: TestWeb, tmp_path: Path
) -> None:
    seeds = [url for url, page in small_web.truth.items() if page["kind"] == "home"]
    log = tmp_path / "boost.jsonl"
    middlewares = {
        **project_settings.DOWNLOADER_MIDDLEWARES,
        "tests.boost_log.BoostLogMiddleware": 950,  # sees each request as it is sent
    }
    settings = {
        "TIANWANG_PROXY": small_web.address,
        "TIANWANG_DATA_DIR": str(tmp_path / "data"),
        "TIANWANG_KEYWORDS": ",".join(KEYWORDS),
        "TIANWANG_KEYWORD_BOOST": "3",
        "DOWNLOADER_MIDDLEWARES": json.dumps(middlewares),
        "BOOST_LOG_FILE": str(log),
    }
    seeds_file = write_seeds(tmp_path / "seeds.txt", seeds)
    result = scrapy_crawl("site", {"seeds": str(seeds_file)}, settings, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]

    web = SyntheticWeb(small_web.seed, small_web.hosts, max_pages=30)
    sent = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    made_from_pages = [line for line in sent if line["referer"]]
    keyword_pages = {
        url
        for url in {line["referer"] for line in made_from_pages}
        if holds_keyword(web, small_web.truth[url])
    }
    wrong = [
        line
        for line in made_from_pages
        if line["boost"] != (3 if line["referer"] in keyword_pages else None)
    ]
    assert wrong == []
    boosted = sum(line["boost"] == 3 for line in made_from_pages)
    assert 0 < boosted < len(made_from_pages)  # both kinds of page were met
    # Seeds and robots.txt come from no page, and carry no boost.
    assert {line["url"] for line in sent if not line["referer"]} >= set(seeds)
    assert all(line["boost"] is None for line in sent if not line["referer"])
    # Every html page fetched below the last level holds links to follow (its homepage, at
    # least): the stat counts those of them that hold a keyword.
    levels = reach(small_web.truth, seeds).levels
    expected_pages = {
        url
        for url, level in levels.items()
        if level < 3
        and is_stored_page(small_web.truth.get(url))
        and small_web.truth[url]["content_type"] == "text/html"
        and holds_keyword(web, small_web.truth[url])
    }
    assert keyword_pages <= expected_pages
    assert f"'tianwang/topical/pages': {len(expected_pages)}" in result.stderr


# --- link extraction: a parser target against Scrapy's selectors, on real pages ---


def selector_links(response) -> list[str]:
    """The links as the spider took them before: Scrapy's selectors (an lxml tree, XPath)."""
    from tianwang.spiders.site import _absolute

    links = (_absolute(response, href.strip())
             for href in response.xpath("//a/@href | //area/@href").getall())
    return list(dict.fromkeys(url for url in links if url))


def real_pages() -> Iterator[Path]:
    """HTML files Debian packages ship (their documentation), as a crawl meets them."""
    for pattern in ("**/*.html", "**/*.htm"):
        yield from [path for path in sorted(Path("/usr/share/doc").glob(pattern))
                    if path.is_file()][:400]


def test_links_are_those_scrapys_selectors_find_on_real_and_test_pages() -> None:
    """Each page's links, with hrefs resolved on the pages before it remembered (as a
    crawl's spider does), are those Scrapy's selectors find on it alone; lexbor's and lxml's
    hrefs are the same."""
    from scrapy.http import HtmlResponse

    from tianwang.spiders.site import LinkJoins, extract_links, page_hrefs

    pages = [(f"file:{path}", path.read_bytes()) for path in real_pages()]
    web = SyntheticWeb(WEB_SEED_FOR_LINKS, 30, junk=True)
    pages += [(url, web.respond(url).body) for url, page in
              list(load_truth(WEB_SEED_FOR_LINKS, 30, None, "--junk").items())[:2000]
              if page["content_type"] == "text/html" and page["status"] == 200]
    compared, joins = 0, LinkJoins()
    for url, body in pages:
        base = url if url.startswith("http") else "http://docs.example.com/" + url[5:].lstrip("/")
        response = HtmlResponse(base, body=body)
        assert extract_links(response, 0, joins) == (selector_links(response), 0), url
        # Both parsers (lexbor below LEXBOR_MAX_CHARS, lxml above) read the same hrefs.
        assert page_hrefs(response.text, 0) == page_hrefs(response.text), url
        compared += 1
    assert compared > 500
    assert joins.count > 1000  # hrefs were taken from earlier pages


_BASE_PART = st.text(alphabet="ab./;?#:%\t ", max_size=6)
_HREF = st.text(alphabet="ab./;?#:%\\\t\n /", max_size=10) | st.sampled_from(
    ["http://", "http://?q", "http:///a", "https://h/../x", "/\t/h/x", "a:b", "//h/x", ";p",
     "?q", "http:x", " a", "\x01a", "a\\b", "../../x", "./", ".."])


@given(dir_=_BASE_PART, name1=_BASE_PART, name2=_BASE_PART, href=_HREF,
       scheme=st.sampled_from(["http", "https"]))
@settings(max_examples=3000)
def test_an_href_shared_by_a_directory_makes_the_same_link_on_each_page_of_it(
        dir_: str, name1: str, name2: str, href: str, scheme: str) -> None:
    """What LinkJoins relies on: urljoin gives an href _SHARED_HREF matches the same link
    from any two pages whose urls (as urlparse reads them) share scheme, host, directory."""
    from urllib.parse import urlparse

    from tianwang.spiders.site import _SHARED_HREF, _joined

    pages = [f"{scheme}://h.example/{dir_}/{name}" for name in (name1, name2)]
    keys = {(p.scheme, p.netloc, p.path[: p.path.rfind("/") + 1])
            for p in map(urlparse, pages)}
    if len(keys) == 1 and _SHARED_HREF.match(href):
        assert _joined(pages[0], "utf-8", href) == _joined(pages[1], "utf-8", href)


_ABSOLUTE_HREF = st.builds(
    lambda scheme, host, path: f"{scheme}://{host}{path}",
    st.sampled_from(["http", "https"]), st.sampled_from(["h.example", "h.example:8080", "H.ex"]),
    st.text(alphabet="ab./;?#:%\\\t\n /", max_size=12))


@given(page1=st.tuples(st.text(alphabet="ab./;?", max_size=6), st.text(alphabet="ab.", max_size=4)),
       page2=st.tuples(st.text(alphabet="ab./;?", max_size=6), st.text(alphabet="ab.", max_size=4)),
       href=_ABSOLUTE_HREF, scheme=st.sampled_from(["http", "https"]))
@settings(max_examples=2000)
def test_an_absolute_href_makes_the_same_link_on_every_page_of_a_scheme(
        page1: tuple[str, str], page2: tuple[str, str], href: str, scheme: str) -> None:
    """What LinkJoins relies on for absolute hrefs: the link depends on the page only through
    its scheme (urljoin keeps an href of another scheme as it is)."""
    from tianwang.spiders.site import _SHARED_HREF, _joined

    pages = [f"{scheme}://{host}.example/{path}" for path, host in (page1, page2)]
    if _SHARED_HREF.match(href):
        assert _joined(pages[0], "utf-8", href) == _joined(pages[1], "utf-8", href)


def test_an_absolute_href_is_remembered_by_the_scheme_of_its_page() -> None:
    from scrapy.http import HtmlResponse

    from tianwang.spiders.site import LinkJoins, extract_links

    body = b'<a href="https://h.example/a;">a</a>'
    joins = LinkJoins()
    for page in ("http://a.example/", "https://b.example/", "http://c.example/d/"):
        response = HtmlResponse(page, body=body)
        # urljoin keeps an href of another scheme as it is, drops the empty ";" otherwise
        assert extract_links(response, 0, joins) == extract_links(response, 0)


WEB_SEED_FOR_LINKS = 4


def test_a_page_gives_at_most_its_limit_of_links_in_document_order() -> None:
    from scrapy.http import HtmlResponse

    from tianwang.spiders.site import extract_links

    body = "".join(f'<a href="/p{n}.html">{n}</a><a href="/p{n}.html">again</a>'
                   for n in range(100)).encode()
    response = HtmlResponse("http://www.example.com/", body=body)
    links, left_out = extract_links(response, 30)
    assert links == [f"http://www.example.com/p{n}.html" for n in range(30)]
    assert left_out == 200 - 59  # every href after the one that made the 30th link


def test_a_link_no_url_can_be_made_of_is_skipped_and_the_page_keeps_its_other_links() -> None:
    """A broken port or host in one href (w3lib refuses "host:port") was a traceback that
    lost the page's links and the page itself."""
    from scrapy.http import HtmlResponse

    from tianwang.spiders.site import LinkJoins, extract_links

    body = (b'<a href="/x">x</a><a href="http://b.example:port/">b</a>'
            b'<a href="http://[bad/">c</a><a href="/y">y</a>')
    response = HtmlResponse("http://a.example/", body=body)
    for joins in (None, LinkJoins()):
        assert extract_links(response, 0, joins) == (
            ["http://a.example/x", "http://a.example/y"], 0)


def test_no_request_is_made_for_a_page_parsed_already(tmp_path: Path) -> None:
    """The frontier would drop it (a url taken is no longer pending: no cash to credit);
    the page's out-link count, which shares its cash among its links, still counts it."""
    from scrapy import Request
    from scrapy.http import HtmlResponse

    from tianwang.spiders.site import SiteSpider

    crawler = project_crawler(TIANWANG_DATA_DIR=str(tmp_path), TIANWANG_MAX_LEVELS=0)
    spider = SiteSpider.from_crawler(crawler, seeds="http://a.example/")
    body = b'<a href="/done">d</a><a href="/moved">m</a><a href="/new">n</a>'
    home = HtmlResponse("http://a.example/", body=body, request=Request("http://a.example/"))
    done = HtmlResponse("http://a.example/done", body=b"<p>done</p>",
                        request=Request("http://a.example/done"))
    moved = HtmlResponse("http://a.example/final", body=b"<p>final</p>", request=Request(
        "http://a.example/final", meta={"redirect_urls": ["http://a.example/moved"]}))
    spider.parse(done)
    spider.parse(moved)
    out = spider.parse(home)
    requests = [r for r in out if isinstance(r, Request)]
    assert [r.url for r in requests] == ["http://a.example/new"]
    assert requests[0].meta["tianwang_outlinks"] == 3


def test_a_link_to_a_seeds_host_says_so_and_others_do_not(tmp_path: Path) -> None:
    """Scrapy feeds start requests lazily: a page's link may reach a seed's host before its
    seed reaches the frontier, which then must still count the host as a seed's."""
    from scrapy import Request
    from scrapy.http import HtmlResponse

    from tianwang import meta
    from tianwang.spiders.site import SiteSpider

    crawler = project_crawler(TIANWANG_DATA_DIR=str(tmp_path), TIANWANG_MAX_LEVELS=0,
                              TIANWANG_STAY_IN_HOST=False)
    spider = SiteSpider.from_crawler(crawler, seeds="http://a.example/,http://b.example/x/")
    body = (b'<a href="http://b.example/">b</a><a href="http://b.example/deep/p.html">p</a>'
            b'<a href="http://c.example/">c</a><a href="/own.html">own</a>')
    home = HtmlResponse("http://a.example/", body=body, request=Request("http://a.example/"))
    marked = {r.url: bool(r.meta.get(meta.SEED_HOST)) for r in spider.parse(home)
              if isinstance(r, Request)}
    assert marked == {"http://b.example/": True, "http://b.example/deep/p.html": True,
                      "http://c.example/": False, "http://a.example/own.html": True}


def test_parsed_urls_keep_the_last_generations() -> None:
    from tianwang.spiders.site import ParsedUrls

    parsed = ParsedUrls()
    parsed.GENERATION = 2
    for n in range(5):
        parsed.add(f"http://a.example/{n}")
    assert [f"http://a.example/{n}" in parsed for n in range(5)] == [
        False, False, True, True, True]


# -- session ids and a lowercase status line, on the raw hostile web (tests/hostile_web.py) --


def test_a_site_writing_session_ids_into_every_link_is_crawled_once(hostile_web_crawl) -> None:
    """Every link of the shop carries a fresh id, in six styles (osCsid, vBulletin's s=,
    ASP.NET's /(S(..))/, /sid/<id>/, SESSID, utm_*): each page is asked for once, under its
    plain url, and the urls whose parameters are no session id are asked as they are."""
    crawl, host = hostile_web_crawl, hostile_web.SESSION_HOST
    plain = ["/", *hostile_web.SESSION_PAGES, *hostile_web.KEPT_URLS]
    sent = [url for url in crawl.sent if url.startswith(f"http://{host}/")]
    assert sorted(sent) == sorted(f"http://{host}{path}" for path in [*plain, "/robots.txt"])
    assert {f"http://{host}{path}" for path in plain} <= set(crawl.stored)
    assert crawl.stats["tianwang/urls/session_ids_stripped"] > 0


def test_a_lowercase_status_line_is_stored_as_http_1_1(hostile_web_crawl) -> None:
    data = hostile_web_crawl.stored["http://www.lowercase-status.com/"]
    assert data.startswith(b"HTTP/1.1 200 OK\r\n")
    assert data.split(b"\r\n\r\n", 1)[1] == hostile_web.FAULTS["www.lowercase-status.com"][0].body


def test_a_folded_header_is_stored_as_one_header(hostile_web_crawl) -> None:
    data = hostile_web_crawl.stored["http://www.folded-header.com/"]
    assert b"\r\nX-Folded: first part second part\r\n" in data.split(b"\r\n\r\n", 1)[0] + b"\r\n"


@pytest.mark.parametrize("protocol, recorded", [
    ("HTTP/1.1", "HTTP/1.1"), ("http/1.1", "HTTP/1.1"), ("HTTP/1.0", "HTTP/1.0"),
    ("Foo/2.0", "HTTP/2.0"), ("h2", "h2"), (None, "HTTP/1.1"), ("", "HTTP/1.1"),
    ("ICY", "HTTP/1.1"),
])
def test_record_protocol(protocol: str | None, recorded: str) -> None:
    assert record_protocol(protocol) == recorded


def test_a_bad_session_entry_stops_the_crawl_at_start() -> None:
    crawler = project_crawler(TIANWANG_SESSION_PARAMS=["sid", "s=(["])
    with pytest.raises(SettingError, match="TIANWANG_SESSION_PARAMS"):
        get_session_ids(crawler.settings, "TIANWANG_SESSION_PARAMS")
    assert get_session_ids(project_crawler(TIANWANG_SESSION_PARAMS="").settings,
                           "TIANWANG_SESSION_PARAMS") is None


def test_kept_in_its_host_a_page_of_a_seeds_host_marks_its_links(tmp_path: Path) -> None:
    """TIANWANG_STAY_IN_HOST: every link followed is on the page's host, seed's or not."""
    from scrapy import Request
    from scrapy.http import HtmlResponse

    from tianwang import meta
    from tianwang.spiders.site import SiteSpider

    crawler = project_crawler(TIANWANG_DATA_DIR=str(tmp_path), TIANWANG_MAX_LEVELS=0,
                              TIANWANG_STAY_IN_HOST=True)
    spider = SiteSpider.from_crawler(crawler, seeds="http://a.example/")
    body = b'<a href="/own.html">own</a><a href="http://b.example/">b</a>'
    marked = {}
    for host in ("a.example", "c.example"):
        page = HtmlResponse(f"http://{host}/", body=body, request=Request(f"http://{host}/"))
        marked |= {r.url: bool(r.meta.get(meta.SEED_HOST)) for r in spider.parse(page)
                   if isinstance(r, Request)}
    assert marked == {"http://a.example/own.html": True, "http://c.example/own.html": False}
