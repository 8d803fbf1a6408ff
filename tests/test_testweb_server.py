"""The test web served over HTTP: what a client gets through the proxy equals the truth.

The server runs as users run it (`python -m tianwang.cli testweb serve --port 0`) and is
reached as a proxy with urllib; links are parsed here with the standard library's parser.
"""

from __future__ import annotations

import gc
import hashlib
import http.client
import json
import random
import re
import socket
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urldefrag, urljoin, urlsplit
from urllib.robotparser import RobotFileParser

import pytest

from tests.truth import load_truth
from tianwang.testweb.launcher import TestWebError, TestWebProcess

ROOT = Path(__file__).resolve().parent.parent
SEED, HOSTS = 5, 40
META_CHARSET = re.compile(rb"""<meta[^>]*charset=["']?([\w-]+)""", re.IGNORECASE)


@pytest.fixture(scope="module")
def server() -> Iterator[TestWebProcess]:
    running = TestWebProcess(SEED, HOSTS)
    running.start()
    yield running
    assert running.stop() == 0  # SIGTERM ends it cleanly


@pytest.fixture(scope="module")
def truth() -> dict[str, dict]:
    """The truth as the `testweb truth` command prints it."""
    return load_truth(SEED, HOSTS)


class NoRedirects(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None  # the test looks at the 301/302 itself


Fetched = tuple[int, http.client.HTTPMessage, bytes]


def fetch(server: TestWebProcess, url: str, method: str = "GET") -> Fetched:
    opener = urllib.request.build_opener(
        urllib.request.ProxyHandler({"http": server.address}), NoRedirects
    )
    request = urllib.request.Request(url, method=method)
    try:
        with opener.open(request, timeout=10) as response:
            return response.status, response.headers, response.read()
    except urllib.error.HTTPError as error:
        with error:
            return error.code, error.headers, error.read()


class LinkParser(HTMLParser):
    """<a href> and <area href>; html.parser already unescapes attribute values (&amp;)."""

    def __init__(self, base: str) -> None:
        super().__init__(convert_charrefs=True)
        self.base, self.links = base, []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("a", "area"):
            for name, value in attrs:
                if name == "href" and value is not None:
                    url = urldefrag(urljoin(self.base, value.strip()))[0]
                    if urlsplit(url).scheme == "http":
                        self.links.append(url)


def parse_links(text: str, base: str) -> list[str]:
    parser = LinkParser(base)
    parser.feed(text)
    parser.close()
    return list(dict.fromkeys(parser.links))


def declared_charset(content_type: str, body: bytes) -> str | None:
    match = re.search(r"charset=([\w-]+)", content_type)
    if match:
        return match[1].lower()
    meta = META_CHARSET.search(body)
    return meta[1].decode().lower() if meta else None


def sample(truth: dict[str, dict]) -> list[str]:
    """Every url of three hosts, and up to 25 urls of every kind from the whole web."""
    hosts = list(dict.fromkeys(r["host"] for r in truth.values()))[:3]
    urls = [url for url, r in truth.items() if r["host"] in hosts]
    by_kind: dict[str, list[str]] = {}
    for url, record in truth.items():
        by_kind.setdefault(record["kind"], []).append(url)
    rng = random.Random(0)
    for kind_urls in by_kind.values():
        urls += rng.sample(kind_urls, min(25, len(kind_urls)))
    return list(dict.fromkeys(urls))


def test_served_responses_equal_the_truth(server: TestWebProcess, truth: dict[str, dict]) -> None:
    kinds = set()
    for url in sample(truth):
        record = truth[url]
        status, headers, body = fetch(server, url)
        content_type = headers.get("Content-Type", "")
        assert status == record["status"], url
        assert content_type.split(";")[0].strip() == record["content_type"], url
        assert headers.get("Location") == record["location"], url
        assert len(body) == record["bytes"] and hashlib.md5(body).hexdigest() == record["md5"]
        if record["content_type"].startswith("text/"):
            assert declared_charset(content_type, body) == record["charset"], url
            text = body.decode(record["charset"])
            if record["content_type"] == "text/html":
                assert parse_links(text, url) == record["links"], url
        kinds.add(record["kind"])
    assert len(kinds) == 10


def test_gbk_pages_are_gbk_and_utf8_pages_utf8(
    server: TestWebProcess, truth: dict[str, dict]
) -> None:
    pages = [r for r in truth.values() if r["kind"] == "html"]
    for charset in ("gbk", "utf-8"):
        chosen = [r for r in pages if r["charset"] == charset][:10]
        assert chosen, charset
        for record in chosen:
            body = fetch(server, record["url"])[2]
            assert re.search("[\u4e00-\u9fff]", body.decode(charset))
            if charset == "gbk":
                with pytest.raises(UnicodeDecodeError):
                    body.decode("utf-8")
    # Both ways of declaring GBK occur: in the header, and only in a <meta>.
    gbk = [r for r in pages if r["charset"] == "gbk"][:100]
    ways = {"charset" in fetch(server, r["url"])[1]["Content-Type"] for r in gbk}
    assert ways == {True, False}


def test_robots_txt_agrees_with_robots_allowed(
    server: TestWebProcess, truth: dict[str, dict]
) -> None:
    hosts = list(dict.fromkeys(r["host"] for r in truth.values()))
    blocked = 0
    for host in hosts:
        status, _headers, body = fetch(server, f"http://{host}/robots.txt")
        parser = RobotFileParser()
        parser.parse(body.decode("utf-8").splitlines() if status == 200 else [])
        for record in truth.values():
            if record["host"] == host:
                assert parser.can_fetch("*", record["url"]) == record["robots_allowed"]
                blocked += not record["robots_allowed"]
    assert blocked


def test_head_unknown_hosts_and_paths(server: TestWebProcess, truth: dict[str, dict]) -> None:
    page = next(r for r in truth.values() if r["kind"] == "html")
    status, headers, body = fetch(server, page["url"], "HEAD")
    assert (status, body) == (200, b"")
    assert int(headers["Content-Length"]) == page["bytes"]
    assert fetch(server, "http://www.nosuchhost.com/")[0] == 502
    status, headers, _body = fetch(server, f"http://{page['host']}/no/such/page.html")
    assert status == 404 and headers["Content-Type"].startswith("text/html")


def test_keep_alive_and_origin_form_requests(
    server: TestWebProcess, truth: dict[str, dict]
) -> None:
    pages = [r for r in truth.values() if r["kind"] in ("home", "html")][:5]
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    try:
        sockets = []
        for record in pages:  # absolute-form, as a client talks to a proxy
            connection.request("GET", record["url"])
            body = connection.getresponse().read()
            assert hashlib.md5(body).hexdigest() == record["md5"]
            sockets.append(connection.sock)
        assert all(sock is sockets[0] for sock in sockets)  # one connection for all
        record = pages[-1]
        parts = urlsplit(record["url"])
        target = parts.path + (f"?{parts.query}" if parts.query else "")
        connection.request("GET", target, headers={"Host": parts.hostname or ""})
        body = connection.getresponse().read()
        assert hashlib.md5(body).hexdigest() == record["md5"]
    finally:
        connection.close()


def test_access_log_and_clean_stop(tmp_path: Path, truth: dict[str, dict]) -> None:
    log = tmp_path / "access.jsonl"
    running = TestWebProcess(SEED, HOSTS, access_log=log)
    running.start()
    try:
        records = list(truth.values())[:6]
        asked = [(r["url"], "GET") for r in records] + [(records[0]["url"], "HEAD")]
        asked.append((f"http://{records[0]['host']}/missing.html", "GET"))
        started = time.time()
        for url, method in asked:
            fetch(running, url, method)
        lines = log.read_text(encoding="utf-8").splitlines()  # flushed per line, before stop
    finally:
        assert running.stop() == 0
    entries = [json.loads(line) for line in lines]
    assert [(e["url"], e["method"]) for e in entries] == asked
    times = [e["time"] for e in entries]
    assert times == sorted(times) and started - 1 <= times[0] <= time.time()
    for entry, record in zip(entries, records, strict=False):
        assert (entry["status"], entry["bytes"]) == (record["status"], record["bytes"])
    assert entries[-2]["bytes"] == 0 and entries[-1]["status"] == 404


def fetched_at_once(records: list[dict], *args: str) -> tuple[list[tuple[float, Fetched]], float]:
    """The records fetched all at once from a test web started with these arguments: each
    answer with the seconds it took, and the seconds they took together."""
    from concurrent.futures import ThreadPoolExecutor

    running = TestWebProcess(SEED, HOSTS, extra_args=args)
    running.start()
    try:
        def timed(record: dict) -> tuple[float, Fetched]:
            started = time.monotonic()
            answer = fetch(running, record["url"])
            return time.monotonic() - started, answer

        with ThreadPoolExecutor(len(records)) as pool:
            started = time.monotonic()
            answers = list(pool.map(timed, records))
            together = time.monotonic() - started
    finally:
        assert running.stop() == 0
    return answers, together


def test_latency_delays_every_answer_but_holds_none_up(truth: dict[str, dict]) -> None:
    """`--latency 0.6`: each answer comes at least 0.6 s after its request, the same answer
    as without, and eight requests at once all come back in about 0.6 s, not 8 x 0.6."""
    records = list(truth.values())[:8]
    answers, together = fetched_at_once(records, "--latency", "0.6")
    for (took, (status, _, body)), record in zip(answers, records, strict=True):
        assert took >= 0.6
        assert (status, hashlib.md5(body).hexdigest()) == (record["status"], record["md5"])
    assert together < 0.6 * 3


def test_a_latency_spread_draws_each_answers_wait_within_its_band(
    truth: dict[str, dict],
) -> None:
    """`--latency 1.0 --latency-spread 0.9`: each answer waits 0.1 to 1.9 s, drawn for it,
    so eight requests at once come back at different times (a timer never fires early; the
    draws are seeded: these eight wait 0.57 to 1.62 s, so a loaded machine may delay the
    earliest answer by 0.7 s before the spread asked here is lost)."""
    answers, _together = fetched_at_once(list(truth.values())[:8],
                                         "--latency", "1.0", "--latency-spread", "0.9")
    took = sorted(seconds for seconds, _answer in answers)
    assert took[0] >= 0.5
    assert took[-1] - took[0] >= 0.3  # 1.05 s apart as drawn: without a spread, all 1.0


def test_a_server_that_cannot_listen_says_why() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        busy = str(taken.getsockname()[1])
        said = f"did not start: '' tianwang testweb serve: cannot listen on 127.0.0.1:{busy}"
        reason = re.escape(said) + ".*(?i:address already in use)"
        with pytest.raises(TestWebError, match=reason):
            TestWebProcess(SEED, HOSTS, extra_args=("--port", busy)).start()


def test_what_survives_a_full_collection_is_left_out_of_the_next_ones() -> None:
    from tianwang.testweb.server import _freeze_survivors

    assert gc.get_freeze_count() == 0
    try:
        _freeze_survivors("stop", {"generation": 1, "collected": 0, "uncollectable": 0})
        assert gc.get_freeze_count() == 0  # a young generation's: nothing frozen
        _freeze_survivors("stop", {"generation": 2, "collected": 0, "uncollectable": 0})
        assert gc.get_freeze_count() > 1000  # the whole heap, caches and all
    finally:
        gc.unfreeze()
