"""HostFilterMiddleware: unit checks, a crawl of the junk test web, a direct fetch of a name
that resolves to 127.0.0.1, and the raw hostile web's names no DNS can hold and names of this
machine or its cloud (tests/hostile_web.py), through a proxy and without one."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scrapy import Request
from scrapy.exceptions import IgnoreRequest

from tests import hostile_web
from tests.conftest import TestWeb, project_crawler, scrapy_crawl
from tests.filters_crawl import JunkCrawls
from tests.hostile_web_crawl import run_crawl
from tests.truth import load_truth, reach
from tianwang.config import SettingError
from tianwang.hosts import HostRules, SpamList, parse_url_host
from tianwang.middlewares.hostfilter import HostFilterMiddleware
from tianwang.testweb.launcher import write_seeds

REFUSED_THROUGH_A_PROXY = {"ip", "port", "spam", "digit", "private"}  # localhost: by name


def run(coro):  # the middleware awaits only when it resolves a name; these never do
    try:
        coro.send(None)
    except StopIteration as done:
        return done.value
    raise AssertionError("process_request waited on something")


class Stats:
    def __init__(self) -> None:
        self.values: dict[str, int] = {}

    def inc_value(self, key: str, count: int = 1) -> None:
        self.values[key] = self.values.get(key, 0) + count


def middleware(spam: str = "", **options: bool) -> HostFilterMiddleware:
    rules = HostRules(SpamList.from_lines(spam.splitlines()), **options)
    return HostFilterMiddleware(rules, block_private=False, stats=Stats())


def reason_of(mw: HostFilterMiddleware, url: str) -> str | None:
    try:
        run(mw.process_request(Request(url)))
    except IgnoreRequest as exc:
        return str(exc).rpartition(": ")[2]
    return None


@pytest.mark.parametrize(
    "url, reason",
    [
        ("http://www.pku.edu.cn/", None),
        ("http://www.pku.edu.cn:80/", None),
        ("https://www.pku.edu.cn:443/", None),
        ("http://www.pku.edu.cn:8080/", "port"),
        ("https://www.pku.edu.cn:80/", "port"),
        ("http://www.pku.edu.cn:443/", "port"),
        ("http://162.105.129.12/", "ip"),
        ("http://162.105.129.12:8080/", "ip"),
        ("http://2130706433/", "ip"),
        ("http://0x7f.1/", "ip"),
        ("http://0177.0.0.1/", "ip"),
        ("http://[::1]/", "ip"),
        ("http://[2001:db8::1]:8080/", "ip"),
        ("http://396393918.fangwen.com/", "spam"),
        ("http://a2329115.fangwen.com/", "spam"),
        ("http://fangwen.com/", "spam"),
        ("http://notfangwen.com/", None),
        ("http://u123.a8blog.cn/", "spam"),
        ("http://x123.a8blog.cn/", None),
        ("http://5566771.qqhome.net/", "digit"),
        ("http://www.163.com/", None),
        ("http://1.2.3.4.5/", "malformed"),
        ("http://09.1/", "malformed"),
    ],
)
def test_each_rule_drops_with_its_own_reason(url: str, reason: str | None) -> None:
    mw = middleware("fangwen.com\n# comment\n^u[0-9]+\\.a8blog\\.cn$\n")
    assert reason_of(mw, url) == reason
    if reason:
        assert mw.stats.values == {f"tianwang/filter/{reason}": 1}


def test_rules_can_be_switched_off() -> None:
    mw = middleware(drop_other_ports=False, drop_digit_hosts=False)
    assert reason_of(mw, "http://5566771.qqhome.net:8080/") is None
    assert reason_of(mw, "http://127.0.0.1:8080/") == "ip"  # IP literals always go


def test_first_drop_per_host_and_reason_is_logged_once(caplog: pytest.LogCaptureFixture) -> None:
    mw = middleware()
    with caplog.at_level(logging.INFO, logger="tianwang.middlewares.hostfilter"):
        for path in ("a", "b", "c"):
            reason_of(mw, f"http://1.2.3.4/{path}")
        reason_of(mw, "http://5.6.7.8/")
    assert len(caplog.records) == 2
    assert mw.stats.values == {"tianwang/filter/ip": 4}


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=60), st.sampled_from(["http://", "https://", "HTTP://", ""]))
def test_no_url_makes_the_middleware_raise_anything_but_ignore(tail: str, scheme: str) -> None:
    try:
        request = Request(scheme + tail)
    except (ValueError, TypeError):  # Scrapy itself refuses it: it never reaches a middleware
        return
    mw = middleware("fangwen.com\n^u[0-9]+\\.a8blog\\.cn$\n")
    try:
        run(mw.process_request(request))
    except IgnoreRequest:
        pass


@pytest.mark.parametrize(
    "url",
    ["http://a b.com/", "http://%zz.com/", "http://exa%00mple.com/", "http://1.2.3.4.5/",
     "http://09.1/", "http://0x100000000/"],
)
def test_a_malformed_url_scrapy_accepts_is_dropped_with_its_own_reason(url: str) -> None:
    mw = middleware()
    assert reason_of(mw, url) == "malformed"
    assert mw.stats.values == {"tianwang/filter/malformed": 1}


def reason_of_request(mw: HostFilterMiddleware, request: Request) -> str | None:
    try:
        run(mw.process_request(request))
    except IgnoreRequest as exc:
        return str(exc).rpartition(": ")[2]
    return None


# -- settings -----------------------------------------------------------------------------


def test_spam_list_file_is_read_at_start(tmp_path: Path) -> None:
    spam = tmp_path / "spam.txt"
    spam.write_text("# junk\nfangwen.com\n", encoding="utf-8")
    mw = HostFilterMiddleware.from_crawler(project_crawler(TIANWANG_SPAM_LIST=str(spam)))
    assert mw.rules.spam.matches("a1.fangwen.com")


@pytest.mark.parametrize("content", [None, "fangwen.com\n([unclosed\n"])
def test_a_missing_file_or_a_bad_regex_stops_the_crawl_at_start(
    tmp_path: Path, content: str | None
) -> None:
    spam = tmp_path / "spam.txt"
    if content is not None:
        spam.write_text(content, encoding="utf-8")
    with pytest.raises(SettingError, match="TIANWANG_SPAM_LIST") as error:
        HostFilterMiddleware.from_crawler(project_crawler(TIANWANG_SPAM_LIST=str(spam)))
    if content:
        assert "line 2" in str(error.value)


def test_a_bad_spam_list_stops_a_real_crawl_before_any_request(
    testweb: TestWeb, tmp_path: Path
) -> None:
    result = scrapy_crawl(
        "site",
        {"seeds": next(iter(testweb.truth))},
        {"TIANWANG_PROXY": testweb.address, "TIANWANG_SPAM_LIST": str(tmp_path / "none.txt"),
         "TIANWANG_DATA_DIR": str(tmp_path / "data")},
        cwd=tmp_path,
    )
    assert result.returncode != 0
    assert "TIANWANG_SPAM_LIST" in result.stderr


# -- proxy or not: when the private check resolves --------------------------------------


class Resolver:
    """Records the names asked for; answers 127.0.0.1, or each of `answers` in turn (a unit
    fake beside the real test below)."""

    def __init__(self, answers: list[str] | None = None) -> None:
        self.asked: list[str] = []
        self.answers = answers

    def resolveHostName(self, receiver, host: str, port: int = 0, *args, **kwargs):
        self.asked.append(host)
        receiver.resolutionBegan(None)
        address = self.answers.pop(0) if self.answers else "127.0.0.1"
        receiver.addressResolved(type("Address", (), {"host": address})())
        receiver.resolutionComplete()


def private_middleware(proxy: str = "", env: dict | None = None) -> HostFilterMiddleware:
    reactor = type("Reactor", (), {"nameResolver": Resolver()})()
    rules = HostRules(SpamList())
    return HostFilterMiddleware(rules, True, Stats(), proxy=proxy, env_proxies=env,
                                reactor=reactor)


@pytest.mark.parametrize(
    "proxy, env, meta, resolves",
    [
        ("", {}, {}, True),
        ("http://127.0.0.1:3128", {}, {}, False),  # TIANWANG_PROXY: the proxy connects
        ("", {"http": "http://127.0.0.1:3128"}, {}, False),  # http_proxy in the environment
        ("", {"https": "http://127.0.0.1:3128"}, {}, True),  # a proxy for another scheme
        ("", {}, {"proxy": "http://127.0.0.1:3128"}, False),
        ("http://127.0.0.1:3128", {}, {"proxy": None}, True),  # meta proxy None: direct
    ],
)
def test_only_a_direct_fetch_resolves_the_host(proxy, env, meta, resolves, monkeypatch) -> None:
    # The fake answers at once: its Deferred has fired, and awaiting it returns the addresses.
    monkeypatch.setattr("tianwang.middlewares.hostfilter.maybe_deferred_to_future", lambda d: d)
    mw = private_middleware(proxy, env)
    request = Request("http://intranet.example.com/", meta=meta)
    outcome = reason_of_request(mw, request)
    assert mw.reactor.nameResolver.asked == (["intranet.example.com"] if resolves else [])
    assert outcome == ("private" if resolves else None)


def test_a_verdict_lives_as_long_as_the_dns_answer_it_was_made_from(monkeypatch) -> None:
    """No verdict is kept beside the resolver's own cache (Scrapy's dnscache, which answers a
    known name from memory): a name the resolver answers anew (evicted from its cache, or
    no cache) is judged on the new answer, so a name rebound from a public address to a
    private one is refused from then on."""
    monkeypatch.setattr("tianwang.middlewares.hostfilter.maybe_deferred_to_future", lambda d: d)
    mw = private_middleware()
    mw.reactor.nameResolver.answers = ["61.135.169.125", "61.135.169.125", "127.0.0.1"]
    outcomes = [reason_of_request(mw, Request(f"http://rebind.example.com/{path}"))
                for path in ("a", "b", "c")]
    assert outcomes == [None, None, "private"]
    assert mw.reactor.nameResolver.asked == ["rebind.example.com"] * 3


# -- a real direct fetch of a name that resolves to 127.0.0.1 ----------------------------


def direct_crawl(testweb: TestWeb, tmp_path: Path, block: bool) -> tuple[list[dict], str]:
    """Crawl http://localhost:<test web port>/ with no proxy; the server's lines it caused."""
    port = urlsplit(testweb.address).port
    tmp_path.mkdir()
    start = len(testweb.access_log.read_text(encoding="utf-8").splitlines())
    seeds = write_seeds(tmp_path / "seeds.txt", [f"http://localhost:{port}/"])
    result = scrapy_crawl(
        "site",
        {"seeds": str(seeds)},
        {
            "TIANWANG_PROXY": "",  # and crawl_command drops http_proxy: a direct fetch
            "TIANWANG_BLOCK_PRIVATE": str(block),
            # The port rule would refuse the test web's port first; off, so the private
            # check is the one that must refuse it.
            "TIANWANG_DROP_OTHER_PORTS": "False",
            # The test web answers 502 for this host, robots.txt too, and a 5xx robots.txt
            # holds a host back (RobotsMiddleware): robots.txt is not what this test is about.
            "ROBOTSTXT_OBEY": "False",
            "TIANWANG_DATA_DIR": str(tmp_path / "data"),
        },
        cwd=tmp_path,
    )
    # Refused, or answered 502: either way nothing is stored, and the exit status says so.
    assert result.returncode == 1, result.stderr[-3000:]
    lines = testweb.access_log.read_text(encoding="utf-8").splitlines()[start:]
    return [json.loads(line) for line in lines], result.stderr


def test_a_name_resolving_to_loopback_is_refused_when_fetched_directly(
    testweb: TestWeb, tmp_path: Path
) -> None:
    refused, stderr = direct_crawl(testweb, tmp_path / "on", block=True)
    assert refused == []  # not even robots.txt reached the server
    assert "'tianwang/filter/private': 1" in stderr
    # The same crawl with the check off does reach the server: the name really leads there.
    allowed, _ = direct_crawl(testweb, tmp_path / "off", block=False)
    assert {urlsplit(line["url"]).hostname for line in allowed} == {"localhost"}
    assert any(urlsplit(line["url"]).path == "/" for line in allowed)


# -- a crawl of the junk test web ---------------------------------------------------------


def hosts_by_filter(crawls: JunkCrawls) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for page in crawls.truth.values():
        found.setdefault(page.get("filter") or "", set()).add(page["host"])
    return found


def netloc(url: str) -> str:
    return urlsplit(url).netloc.lower()


def test_no_request_reaches_a_filtered_host(junk_crawls: JunkCrawls) -> None:
    refused = set().union(*(hosts_by_filter(junk_crawls)[r] for r in REFUSED_THROUGH_A_PROXY))
    asked = {netloc(line["url"]) for line in junk_crawls.on.log}
    assert asked & refused == set()
    # Without the filters the same crawl asks every one of them (robots.txt or more).
    asked_off = {netloc(line["url"]) for line in junk_crawls.off.log}
    assert refused <= asked_off


def test_each_drop_is_counted_and_each_host_logged_once(junk_crawls: JunkCrawls) -> None:
    by_filter = hosts_by_filter(junk_crawls)
    for reason in REFUSED_THROUGH_A_PROXY:
        hosts = by_filter[reason]
        logged = junk_crawls.on.stderr.count(f"host filter '{reason}' (first for this host)")
        assert logged == len(hosts), reason  # every one seeded, each logged once
        assert junk_crawls.on.stats[f"tianwang/filter/{reason}"] >= len(hosts)


def test_every_normal_host_is_crawled_as_fully_as_without_the_filters(
    junk_crawls: JunkCrawls,
) -> None:
    truth = junk_crawls.truth
    seeds = [url for url, page in truth.items() if page["kind"] in ("home", "junk-home")]
    # Stored: a 200 text page (an untyped one too: its first bytes say text) of a host no
    # filter refuses. The crawls have no level limit: everything linked is reached.
    expected = {
        url for url in reach(truth, seeds, max_levels=0, stay_in_host=False).levels
        if url in truth and truth[url]["status"] == 200 and truth[url].get("filter") is None
        and truth[url]["content_type"] in ("text/html", "text/plain", None)
    }
    normal_hosts = {truth[url]["host"] for url in expected}

    def normal(stored: dict) -> set[str]:
        return {url for url in stored if netloc(url) in normal_hosts}

    assert expected  # hundreds of pages of 20 hosts
    assert normal(junk_crawls.on.stored) == expected
    too_big = {url for url in truth if truth[url].get("filter") == "too_big"}
    assert normal(junk_crawls.off.stored) - too_big == expected


# -- names no DNS can hold, names of this machine or its cloud (tests/hostile_web.py) -------


def test_a_host_no_dns_name_can_be_is_never_asked_for(hostile_web_crawl) -> None:
    """A 259-character name, a label of 64, "..": linked, refused, not one request made
    (the proxy would have answered each)."""
    bad = (hostile_web.LONG_HOST, hostile_web.LONG_LABEL_HOST, hostile_web.DOTS_HOST)
    asked = {line["url"].split("/")[2] for line in hostile_web_crawl.log}
    assert hostile_web.PROTOCOL_HOME in asked and not asked & set(bad)
    assert hostile_web_crawl.stats["tianwang/filter/malformed"] == len(bad)


def test_local_names_are_refused_through_a_proxy(hostile_web_crawl) -> None:
    asked = {line["url"].split("/")[2] for line in hostile_web_crawl.log}
    assert not asked & set(hostile_web.LOCAL_NAMES)
    assert f"http://{hostile_web.PUBLIC_CONTROL_HOST}/" in hostile_web_crawl.stored
    assert hostile_web_crawl.stats["tianwang/filter/private"] == len(hostile_web.LOCAL_NAMES)


def test_local_names_are_refused_without_a_proxy_before_any_lookup(tmp_path: Path) -> None:
    """Fetched directly, localhost resolves to 127.0.0.1 and the others not at all: each is
    refused by its name, none looked up (no dns failure), none connected to."""
    seeds = [f"http://{name}/" for name in hostile_web.LOCAL_NAMES]
    crawl = run_crawl(tmp_path, seeds, {}, proxy=False, timeout=120)
    assert crawl.returncode == 1, crawl.stderr[-3000:]  # nothing could be stored
    count = len(hostile_web.LOCAL_NAMES)
    assert crawl.summary().endswith(
        f"refused {count} (private {count}), failed 0"), crawl.summary()
    assert crawl.sent == [] and "Traceback" not in crawl.stderr


TESTWEB_MODES = ("--junk", "--mirrors", "--changing", "--protocols", "--hidden-roots",
                 "--https")


@pytest.mark.parametrize("mode", TESTWEB_MODES)
def test_the_test_webs_own_names_are_not_local(mode: str) -> None:
    """The test web serves its names through a proxy: none is taken for a local one, but
    the junk web's "localhost", which is there to be refused."""
    rules = HostRules(SpamList(), drop_other_ports=False, drop_digit_hosts=False,
                      drop_local_names=True)
    truth = load_truth(11, 200, None, mode)
    refused = {page["host"] for url, page in truth.items() if rules.reason(url) == "private"}
    assert refused == ({"localhost"} if mode == "--junk" else set())
    assert all(parse_url_host(url) for url in truth)
