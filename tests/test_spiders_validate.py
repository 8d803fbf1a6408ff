"""The validate spider (D1 -> D2): real crawls of the collection test web and of local sockets."""

from __future__ import annotations

import json
import socket
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from scrapy.settings import Settings

from tests.conftest import scrapy_crawl
from tests.fetchlog import fetch_log_settings, read_fetch_log, served_beyond_sent
from tests.slow_server import DRIP_BODY, read_log, slow_servers
from tianwang.config import SettingError
from tianwang.spiders.validate import ValidateSpider, homepage

ATTEMPTS = 2  # seed 004's wget -t 2: two fetches in all, TIANWANG_VALIDATE_TRIES = 2


def write_d1(path: Path, truth: dict[str, dict]) -> Path:
    """D1 as truth says `hosts clean` leaves it: every site but the malformed names."""
    rows = sorted((site, r["pages"]) for site, r in truth.items() if r["step"] != "D1")
    path.write_text("".join(f"{site}\t{pages}\n" for site, pages in rows), encoding="utf-8")
    return path


def read_table(path: Path) -> list[list[str]]:
    return [line.split("\t") for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.fixture(scope="module")
def validated(collection_web, tmp_path_factory: pytest.TempPathFactory) -> dict:
    work = tmp_path_factory.mktemp("validate")
    d1 = write_d1(work / "d1", collection_web.truth)
    log = collection_web.access_log
    log_start = log.stat().st_size if log.exists() else 0
    settings = {"TIANWANG_PROXY": collection_web.address,
                **fetch_log_settings(work / "sent.txt")}
    result = scrapy_crawl("validate", {"sites": str(d1), "out": str(work / "d2")}, settings,
                          cwd=work)
    assert result.returncode == 0, result.stderr[-3000:]
    with open(collection_web.access_log, encoding="utf-8") as log:
        log.seek(log_start)
        served = [json.loads(line)["url"] for line in log]
    # Counted from what the crawl sent; the server served just that (tests/fetchlog.py).
    sent = read_fetch_log(work / "sent.txt")
    assert served_beyond_sent(served, sent) == {}
    return {"work": work, "stderr": result.stderr, "asked": Counter(sent)}


def test_d2_holds_the_reachable_sites_with_their_homepage(validated: dict,
                                                          collection_web) -> None:
    truth = collection_web.truth
    expected = sorted([site, str(r["pages"]), "200", r["md5"], r["final_url"]]
                      for site, r in truth.items() if r["step"] not in ("D1", "D2"))
    assert read_table(validated["work"] / "d2") == expected
    # a redirect is followed: the row holds the url that answered, and its bytes' MD5
    redirected = [row for row in expected if row[4] != homepage(row[0])]
    assert len(redirected) == 1
    [target] = [row for row in expected if homepage(row[0]) == redirected[0][4]]
    assert redirected[0][3] == target[3]


def test_unreachable_sites_are_removed_with_their_reason(validated: dict, collection_web) -> None:
    expected = sorted([site, str(r["pages"]), r["reason"]]
                      for site, r in collection_web.truth.items() if r["step"] == "D2")
    assert read_table(validated["work"] / "d2.removed") == expected
    counts = Counter(row[2] for row in expected)
    reachable = sum(1 for r in collection_web.truth.values() if r["step"] not in ("D1", "D2"))
    parts = ", ".join(f"{reason} {n}" for reason, n in sorted(
        counts.items(), key=lambda item: (-item[1], item[0])))
    assert (f"D2: {reachable} sites reachable of {reachable + len(expected)}; "
            f"{len(expected)} removed: {parts}") in validated["stderr"]
    # an unreachable site is a row of the removals file, not a log line of its own
    assert " ERROR: " not in validated["stderr"]
    assert "Ignoring response" not in validated["stderr"]


def test_each_homepage_is_asked_once_and_a_failing_one_twice_in_all(
        validated: dict, collection_web) -> None:
    asked = validated["asked"]
    checked = {s: r for s, r in collection_web.truth.items() if r["step"] != "D1"}
    redirected_to = Counter(r["final_url"] for s, r in checked.items()
                            if r["final_url"] != homepage(s))
    for site, record in checked.items():
        url = homepage(site)
        expected = ATTEMPTS if record["reason"] in ("http-502", "http-504") else 1
        assert asked[url] == expected + redirected_to[url], url
    assert all(url.endswith("/") and url.count("/") == 3 for url in asked)  # homepages only


def test_settings_map_to_scrapys_own() -> None:
    settings = Settings()
    settings.setmodule("tianwang.default_settings", priority="project")
    ValidateSpider.update_settings(settings)
    assert settings.getint("TIANWANG_IDLE_TIMEOUT") == 20  # wget -T: seconds without a byte
    assert settings.getint("DOWNLOAD_TIMEOUT") == 300  # the bound wget does not have
    assert settings.getint("RETRY_TIMES") == 1  # wget -t 2: one retry after the first try
    assert settings.getint("CONCURRENT_REQUESTS") == 200
    settings.set("TIANWANG_VALIDATE_TIMEOUT", 0, priority="cmdline")
    with pytest.raises(SettingError, match="TIANWANG_VALIDATE_TIMEOUT"):
        ValidateSpider.update_settings(settings)


@pytest.mark.parametrize(("name", "value", "message"), [
    ("TIANWANG_VALIDATE_TRIES", 0, "TIANWANG_VALIDATE_TRIES=0 is invalid"),
    ("TIANWANG_VALIDATE_RETRIES", 2, "give TIANWANG_VALIDATE_TRIES"),
])
def test_tries_count_every_fetch_and_the_old_name_is_refused(name: str, value: int,
                                                             message: str) -> None:
    settings = Settings()
    settings.setmodule("tianwang.default_settings", priority="project")
    settings.set(name, value, priority="cmdline")
    with pytest.raises(SettingError, match=message):
        ValidateSpider.update_settings(settings)


@pytest.mark.parametrize(("site", "url"), [
    ("http://www.a.com:80/", "http://www.a.com/"),
    ("https://www.a.com:443/", "https://www.a.com/"),
    ("http://www.a.com:8080/", "http://www.a.com:8080/"),
    ("http://[::1]:80/", "http://[::1]/"),
])
def test_homepage_url_leaves_out_the_default_port(site: str, url: str) -> None:
    assert homepage(site) == url


@pytest.fixture
def dead_ports() -> Iterator[tuple[int, int]]:
    """A port that accepts connections and never answers, and a port nobody listens on."""
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(16)
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))  # bound, not listening: connections are refused
    yield silent.getsockname()[1], closed.getsockname()[1]
    silent.close()
    closed.close()


def test_timeouts_and_refusals_are_recorded_not_dropped(tmp_path: Path,
                                                        dead_ports: tuple[int, int]) -> None:
    silent, closed = dead_ports
    sites = {f"http://127.0.0.1:{silent}/": "timeout", f"http://127.0.0.1:{closed}/": "refused"}
    d1 = tmp_path / "d1"
    d1.write_text("".join(f"{site}\t12\n" for site in sorted(sites)))
    result = scrapy_crawl("validate", {"sites": str(d1), "out": str(tmp_path / "d2")},
                          {"TIANWANG_VALIDATE_TIMEOUT": "1", "TIANWANG_VALIDATE_TRIES": "2"},
                          cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert (tmp_path / "d2").read_text() == ""
    assert read_table(tmp_path / "d2.removed") == sorted(
        [site, "12", reason] for site, reason in sites.items())


IDLE = 5  # seconds without a byte (wget's -T) in the slow servers' crawls: the dripped
# homepage (a byte every 0.1 s) takes 8 s, and a loaded machine's stalls stay well below 5 s


def _log_of(log: Path, port: int) -> list[dict]:
    return [line for line in read_log(log) if line["port"] == port]


def test_idle_timeout_keeps_a_dripping_homepage_and_drops_a_silent_one(tmp_path: Path) -> None:
    """wget -T 5 -t 2 against three servers, judged from their access log: a homepage that
    trickles for longer than 5 s, never 5 s without a byte, is kept whole; a server that
    accepts and says nothing is asked twice, about 5 s apart; a refused connection is
    asked once (what the crawl sent: a refused connection reaches no server's log)."""
    log = tmp_path / "access.jsonl"
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))  # bound, not listening: connections are refused
    refused = f"http://127.0.0.1:{closed.getsockname()[1]}/"
    with closed, slow_servers(log, "drip", "silent") as ports:
        drip, silent = (f"http://127.0.0.1:{ports[m]}/" for m in ("drip", "silent"))
        d1 = tmp_path / "d1"
        d1.write_text("".join(f"{site}\t12\n" for site in sorted((drip, silent, refused))))
        result = scrapy_crawl("validate", {"sites": str(d1), "out": str(tmp_path / "d2")},
                              {"TIANWANG_VALIDATE_TIMEOUT": str(IDLE),
                               "TIANWANG_VALIDATE_MAX_SECONDS": "120",
                               **fetch_log_settings(tmp_path / "sent.txt")}, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    dripped = _log_of(log, ports["drip"])
    [done] = [line for line in dripped if line["event"] == "done"]
    # the test means something: the answer took longer than the idle timeout, no gap near it
    assert done["seconds"] > IDLE and done["max_gap"] < IDLE / 2
    assert [line["event"] for line in dripped] == ["request", "done"]  # asked once, kept
    assert read_table(tmp_path / "d2") == [[drip, "12", "200", _md5(DRIP_BODY), drip]]
    asked = [line for line in _log_of(log, ports["silent"]) if line["event"] == "request"]
    assert len(asked) == ATTEMPTS
    # the first try waited out its 5 s (counted from the download's start, a little before
    # the server logged the request it read)
    assert asked[1]["t"] - asked[0]["t"] >= IDLE - 0.5
    sent = Counter(read_fetch_log(tmp_path / "sent.txt"))
    assert sent == {drip: 1, silent: ATTEMPTS, refused: 1}
    assert read_table(tmp_path / "d2.removed") == sorted(
        [[silent, "12", "timeout"], [refused, "12", "refused"]])


def test_a_homepage_that_never_ends_is_cut_by_the_whole_download_bound(tmp_path: Path) -> None:
    """A trickle without end never trips the idle timeout: TIANWANG_VALIDATE_MAX_SECONDS
    ends each try, and the site is removed as a timeout after two tries."""
    log = tmp_path / "access.jsonl"
    with slow_servers(log, "forever") as ports:
        site = f"http://127.0.0.1:{ports['forever']}/"
        d1 = tmp_path / "d1"
        d1.write_text(f"{site}\t12\n")
        result = scrapy_crawl("validate", {"sites": str(d1), "out": str(tmp_path / "d2")},
                              {"TIANWANG_VALIDATE_TIMEOUT": str(IDLE),
                               "TIANWANG_VALIDATE_MAX_SECONDS": "4"}, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    events = [line for line in _log_of(log, ports["forever"])]
    assert [line["event"] for line in events if line["event"] == "request"] == ["request"] * 2
    cut = [line for line in events if line["event"] == "cut"]
    assert len(cut) == ATTEMPTS and all(line["seconds"] >= 4 for line in cut)
    assert read_table(tmp_path / "d2.removed") == [[site, "12", "timeout"]]


def test_a_crawl_that_did_not_finish_writes_nothing(tmp_path: Path,
                                                    dead_ports: tuple[int, int]) -> None:
    silent, _closed = dead_ports
    d1 = tmp_path / "d1"
    d1.write_text(f"http://127.0.0.1:{silent}/\t12\n")
    result = scrapy_crawl("validate", {"sites": str(d1), "out": str(tmp_path / "d2")},
                          {"TIANWANG_VALIDATE_TIMEOUT": "2", "TIANWANG_VALIDATE_TRIES": "1",
                           "CLOSESPIDER_TIMEOUT": "1"}, cwd=tmp_path)
    assert "crawl ended (closespider_timeout)" in result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d1"]


@pytest.mark.parametrize(("content", "message"), [
    (None, "d1: No such file or directory"),
    ("http://a.com:80/\t3\nhttp://b.com/\t3\n", "d1: line 2: expected <site>\\t<pages>"),
])
def test_bad_d1_stops_the_crawl_with_one_message(tmp_path: Path, content: str | None,
                                                 message: str) -> None:
    d1 = tmp_path / "d1"
    if content is not None:
        d1.write_text(content)
    result = scrapy_crawl("validate", {"sites": str(d1), "out": str(tmp_path / "d2")}, {},
                          cwd=tmp_path)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert result.stderr.splitlines()[-1].startswith(
        f"tianwang: error: validate: {tmp_path}/{message}")
    assert not (tmp_path / "d2").exists() and not (tmp_path / "d2.removed").exists()


def make_spider(tmp_path: Path, sites: dict[str, int]) -> ValidateSpider:
    from scrapy.utils.test import get_crawler

    import tianwang.settings as defaults

    d1 = tmp_path / "d1"
    d1.write_text("".join(f"{site}\t{pages}\n" for site, pages in sites.items()))
    project = {name: getattr(defaults, name) for name in dir(defaults) if name.isupper()}
    crawler = get_crawler(ValidateSpider, settings_dict=project)
    return ValidateSpider.from_crawler(crawler, sites=str(d1), out=str(tmp_path / "d2"))


@pytest.mark.parametrize(("status", "body", "reason"), [
    (200, b"", "empty"),
    (204, b"", "http-204"),
    (404, b"<html>gone</html>", "http-404"),
    (503, b"busy", "http-503"),
])
def test_only_a_200_with_a_body_is_reachable(tmp_path: Path, status: int, body: bytes,
                                             reason: str) -> None:
    from scrapy import Request
    from scrapy.http import HtmlResponse

    spider = make_spider(tmp_path, {"http://a.com:80/": 12, "http://b.com:80/": 30})
    for site, answer, code in (("http://a.com:80/", body, status),
                               ("http://b.com:80/", b"<html>home</html>", 200)):
        request = Request(homepage(site), meta={"tianwang_site": site})
        spider.parse(HtmlResponse(request.url, status=code, body=answer, request=request))
    assert spider.failed == {"http://a.com:80/": reason}
    [checked] = spider.checked.values()
    assert (checked.site, checked.pages, checked.md5) == (
        "http://b.com:80/", 30, _md5(b"<html>home</html>"))


def _md5(data: bytes) -> str:
    import hashlib

    return hashlib.md5(data).hexdigest()


@pytest.mark.parametrize(("error", "reason"), [
    ("DownloadTimeoutError", "timeout"),
    ("CannotResolveHostError", "dns"),
    ("DownloadConnectionRefusedError", "refused"),
    ("ResponseDataLossError", "connection-lost"),
    ("IgnoreRequest", "error-ignorerequest"),
])
def test_failure_reasons(error: str, reason: str) -> None:
    import scrapy.exceptions
    from twisted.python.failure import Failure

    from tianwang.spiders.validate import failure_reason

    assert failure_reason(Failure(getattr(scrapy.exceptions, error)("x"))) == reason
