"""The test web served over HTTP: what a client gets through the proxy equals the truth.

The server runs as users run it (`python -m tianwang.cli testweb serve --port 0`) and is
reached as a proxy with urllib; links are parsed here with the standard library's parser.
"""

from __future__ import annotations

import hashlib
import http.client
import json
import os
import random
import re
import selectors
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from typing import IO
from urllib.parse import urldefrag, urljoin, urlsplit
from urllib.robotparser import RobotFileParser

import pytest

from tests.truth import load_truth

ROOT = Path(__file__).resolve().parent.parent
SEED, HOSTS = 5, 40
META_CHARSET = re.compile(rb"""<meta[^>]*charset=["']?([\w-]+)""", re.IGNORECASE)


@dataclass
class Server:
    proc: subprocess.Popen[bytes]
    address: str
    stderr: IO[bytes]

    @property
    def port(self) -> int:
        return int(self.address.rsplit(":", 1)[1])

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        code = self.proc.wait(timeout=20)
        assert self.proc.stdout is not None
        self.proc.stdout.close()
        self.stderr.close()
        return code


def start_server(tmp: Path, *extra: str) -> Server:
    """The serve command in a subprocess; its first stdout line is its address."""
    command = [
        sys.executable,
        "-m",
        "tianwang.cli",
        "testweb",
        "serve",
        "--seed",
        str(SEED),
        "--hosts",
        str(HOSTS),
        "--port",
        "0",
        *extra,
    ]
    stderr = (tmp / "server.err").open("wb")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=stderr, env=env)
    assert proc.stdout is not None
    with selectors.DefaultSelector() as selector:
        selector.register(proc.stdout, selectors.EVENT_READ)
        ready = selector.select(timeout=60)
    address = proc.stdout.readline().decode().strip() if ready else ""
    server = Server(proc, address, stderr)
    if not re.fullmatch(r"http://127\.0\.0\.1:\d+", address):
        server.stop()
        pytest.fail(f"no address from the server: {address!r} {(tmp / 'server.err').read_text()}")
    return server


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    running = start_server(tmp_path_factory.mktemp("testweb"))
    yield running
    assert running.stop() == 0


@pytest.fixture(scope="module")
def truth() -> dict[str, dict]:
    """The truth as the `testweb truth` command prints it."""
    return load_truth(SEED, HOSTS)


class NoRedirects(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None  # the test looks at the 301/302 itself


Fetched = tuple[int, http.client.HTTPMessage, bytes]


def fetch(server: Server, url: str, method: str = "GET") -> Fetched:
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


def test_served_responses_equal_the_truth(server: Server, truth: dict[str, dict]) -> None:
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


def test_gbk_pages_are_gbk_and_utf8_pages_utf8(server: Server, truth: dict[str, dict]) -> None:
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


def test_robots_txt_agrees_with_robots_allowed(server: Server, truth: dict[str, dict]) -> None:
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


def test_head_unknown_hosts_and_paths(server: Server, truth: dict[str, dict]) -> None:
    page = next(r for r in truth.values() if r["kind"] == "html")
    status, headers, body = fetch(server, page["url"], "HEAD")
    assert (status, body) == (200, b"")
    assert int(headers["Content-Length"]) == page["bytes"]
    assert fetch(server, "http://www.nosuchhost.com/")[0] == 502
    status, headers, _body = fetch(server, f"http://{page['host']}/no/such/page.html")
    assert status == 404 and headers["Content-Type"].startswith("text/html")


def test_keep_alive_and_origin_form_requests(server: Server, truth: dict[str, dict]) -> None:
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
    running = start_server(tmp_path, "--access-log", str(log))
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
