"""The --https test web: its proxy tunnels CONNECT to TLS virtual hosts, each with the
certificate its kind says, and what a client gets over either scheme equals the truth.

Reached as users reach it: urllib through the proxy, Python's ssl with the CA file the
server wrote, links parsed with the standard library (tests/test_testweb_server.py).
"""

from __future__ import annotations

import hashlib
import json
import socket
import ssl
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urldefrag, urljoin, urlsplit

import pytest

from tests.test_testweb_server import LinkParser
from tests.truth import load_truth
from tianwang.testweb.https import KINDS, host_kind
from tianwang.testweb.launcher import TestWebProcess
from tianwang.testweb.model import SyntheticWeb

SEED, HOSTS, PAGES = 23, 14, 12


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestWebProcess]:
    directory = tmp_path_factory.mktemp("httpsserver")
    running = TestWebProcess(SEED, HOSTS, PAGES, access_log=directory / "access.jsonl",
                             extra_args=("--https", "--ca-file", str(directory / "ca.pem")))
    running.start()
    running.directory = directory  # type: ignore[attr-defined]
    yield running
    assert running.stop() == 0


@pytest.fixture(scope="module")
def truth() -> dict[str, dict]:
    return load_truth(SEED, HOSTS, PAGES, "--https")


def ca_file(server: TestWebProcess) -> str:
    return str(server.directory / "ca.pem")  # type: ignore[attr-defined]


class BothSchemes(LinkParser):
    """The server test's parser, keeping https links too."""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("a", "area"):
            for name, value in attrs:
                if name == "href" and value is not None:
                    url = urldefrag(urljoin(self.base, value.strip()))[0]
                    if urlsplit(url).scheme in ("http", "https"):
                        self.links.append(url)


def parse_links(text: str, base: str) -> list[str]:
    parser = BothSchemes(base)
    parser.feed(text)
    parser.close()
    return list(dict.fromkeys(parser.links))


class NoRedirects(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None


def fetch(server: TestWebProcess, url: str, context: ssl.SSLContext | None = None):
    if context is None:  # fetch whatever the certificate, as a crawler does
        context = ssl.create_default_context()
        context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    opener = urllib.request.build_opener(
        urllib.request.ProxyHandler({"http": server.address, "https": server.address}),
        urllib.request.HTTPSHandler(context=context), NoRedirects)
    try:
        with opener.open(url, timeout=10) as response:
            return response.status, response.headers, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.headers, error.read()


def host_cases(truth: dict[str, dict]) -> dict[str, str | None]:
    return {page["host"]: page["tls"] for page in truth.values() if page["scheme"] == "https"}


def test_every_url_over_either_scheme_is_served_as_the_truth_says(
        server: TestWebProcess, truth: dict[str, dict]) -> None:
    schemes = Counter()
    for url, record in truth.items():
        status, headers, body = fetch(server, url)
        assert status == record["status"], url
        assert headers.get("Location") == record["location"], url
        assert hashlib.md5(body).hexdigest() == record["md5"], url
        if record["content_type"] == "text/html" and record["status"] == 200:
            assert parse_links(body.decode(record["charset"]), url) == record["links"], url
        schemes[record["scheme"]] += 1
    assert schemes["https"] > 40 and schemes["http"] > 40


def test_each_host_has_the_certificate_its_case_says(
        server: TestWebProcess, truth: dict[str, dict]) -> None:
    strict = ssl.create_default_context(cafile=ca_file(server))
    expected = {"expired": "certificate has expired", "self_signed": "self-signed certificate",
                "wrong_name": "Hostname mismatch"}
    cases = host_cases(truth)
    assert set(cases.values()) == {"valid", *expected}
    for host, case in cases.items():
        url = f"https://{host}/"
        if case == "valid":
            assert fetch(server, url, strict)[0] == truth[url]["status"]
            continue
        with pytest.raises(urllib.error.URLError) as error:
            fetch(server, url, strict)
        assert expected[case] in str(error.value.reason), host


def connect(server: TestWebProcess, target: str) -> bytes:
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        sock.sendall(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode())
        return sock.recv(200)


def test_no_tls_where_the_host_has_none_and_no_plain_http_to_https_only(
        server: TestWebProcess, truth: dict[str, dict]) -> None:
    web = SyntheticWeb(SEED, HOSTS, PAGES, https=True)
    assert web.https is not None
    by_kind = {}
    for host in web.hosts:
        by_kind.setdefault(web.https.kinds[host], host)
    assert set(by_kind) == set(KINDS)
    assert connect(server, f"{by_kind['http']}:443").startswith(b"HTTP/1.1 502")
    assert connect(server, f"{by_kind['https']}:8443").startswith(b"HTTP/1.1 502")
    assert connect(server, f"{by_kind['https']}:443").startswith(b"HTTP/1.1 200")
    assert fetch(server, f"http://{by_kind['https']}/")[0] == 502
    status, headers, _body = fetch(server, f"http://{by_kind['redirect']}/any/path?q=1")
    assert (status, headers["Location"]) == (301, f"https://{by_kind['redirect']}/any/path?q=1")


def test_the_access_log_names_the_tunnel_and_its_https_urls(server: TestWebProcess) -> None:
    fetch(server, f"https://{SyntheticWeb(SEED, HOSTS, PAGES, https=True).hosts[1]}/")
    lines = [json.loads(line) for line in
             (server.directory / "access.jsonl").read_text().splitlines()]  # type: ignore
    connects = [line for line in lines if line["method"] == "CONNECT"]
    gets = [line["url"] for line in lines if line["method"] == "GET"]
    assert connects and all(":" in line["url"] for line in connects)
    assert any(url.startswith("https://") for url in gets)


def test_kinds_follow_the_seed_and_https_is_opt_in() -> None:
    assert [host_kind(5, i) for i in range(50)] == [host_kind(5, i) for i in range(50)]
    assert [host_kind(5, i) for i in range(50)] != [host_kind(6, i) for i in range(50)]
    plain = SyntheticWeb(SEED, HOSTS, PAGES)
    assert plain.https is None
    assert all(url.startswith("http://") for url in plain.homepages())
    with pytest.raises(ValueError, match="--https"):
        SyntheticWeb(SEED, HOSTS, PAGES, https=True, mirrors=True)


def test_without_https_connect_is_still_refused(tmp_path: Path) -> None:
    with TestWebProcess(SEED, 2, 3) as plain:
        assert connect(plain, "www.example.com:443").startswith(b"HTTP/1.1 405")
