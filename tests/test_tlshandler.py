"""https end to end: a crawl of the --https test web (300 hosts of every kind) through its
CONNECT proxy, checked against the truth and the access log; certificate problems are
fetched anyway, counted once per host and logged once (tianwang/tlshandler.py)."""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.conftest import TestWeb, scrapy_crawl, stats_of
from tests.truth import load_truth, reach
from tianwang.formats import iter_tree
from tianwang.formats.linksfile import iter_pages
from tianwang.formats.mirrors import iter_mirrors
from tianwang.testweb.launcher import TestWebProcess, write_seeds
from tianwang.tlshandler import TLSCheckConfig, reason_of
from tianwang.urls import safe_url

HTTPS_SEED, HTTPS_HOSTS, HTTPS_PAGES = 17, 300, 3
BAD = {"expired", "self_signed", "wrong_name"}
# Seeds on a port other than 443 (and 80): the port rule refuses them before any request.
PORT_SEEDS = ("https://{host}:8443/", "http://{host}:443/")
FAST = {"CONCURRENT_REQUESTS": "64", "CONCURRENT_REQUESTS_PER_DOMAIN": "8"}


@pytest.fixture(scope="module")
def https_web(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestWeb]:
    directory = tmp_path_factory.mktemp("httpsweb")
    log, ca = directory / "access.jsonl", directory / "ca.pem"
    extra = ("--https", "--ca-file", str(ca))
    with TestWebProcess(HTTPS_SEED, HTTPS_HOSTS, HTTPS_PAGES, access_log=log,
                        extra_args=extra) as web:
        truth = load_truth(HTTPS_SEED, HTTPS_HOSTS, HTTPS_PAGES, "--https")
        yield TestWeb(web.address, log, truth, HTTPS_SEED, HTTPS_HOSTS)


def host_kinds(truth: dict[str, dict]) -> dict[str, str]:
    """Each host's kind, read from the truth: which schemes its urls have and its tls."""
    schemes: defaultdict[str, set[str]] = defaultdict(set)
    tls: dict[str, str] = {}
    redirects = set()
    for page in truth.values():
        schemes[page["host"]].add(page["scheme"])
        if page["tls"]:
            tls[page["host"]] = page["tls"]
        if page["kind"] == "scheme_redirect":
            redirects.add(page["host"])
    kinds = {}
    for host, found in schemes.items():
        if host in redirects:
            kinds[host] = "redirect"
        elif found == {"http"}:
            kinds[host] = "http"
        elif found == {"http", "https"}:
            kinds[host] = "both"
        else:
            kinds[host] = "https" if tls[host] == "valid" else tls[host]
    return kinds


def seeds_of(truth: dict[str, dict]) -> list[str]:
    """Every homepage (both schemes of a `both` host), but a redirect host's http one."""
    homes = [url for url, page in truth.items()
             if page["kind"] == "home" and page["host"] not in redirect_hosts(truth)]
    return homes + [url for url, page in truth.items()
                    if page["kind"] == "scheme_redirect" and urlsplit(url).path == "/"]


def redirect_hosts(truth: dict[str, dict]) -> set[str]:
    return {page["host"] for page in truth.values() if page["kind"] == "scheme_redirect"}


@pytest.fixture(scope="module")
def https_crawl(https_web: TestWeb, tmp_path_factory: pytest.TempPathFactory) -> dict:
    workdir = tmp_path_factory.mktemp("httpscrawl")
    seeds = seeds_of(https_web.truth)
    some = sorted(h for h, k in host_kinds(https_web.truth).items() if k == "https")[0]
    port_seeds = [pattern.format(host=some) for pattern in PORT_SEEDS]
    ca = https_web.access_log.parent / "ca.pem"
    settings = {"TIANWANG_PROXY": https_web.address, "TIANWANG_DATA_DIR": str(workdir / "data"),
                "TIANWANG_CA_FILE": str(ca), **FAST}
    result = scrapy_crawl("site", {"seeds": str(write_seeds(workdir / "seeds.txt",
                                                                seeds + port_seeds))},
                          settings, cwd=workdir)
    assert result.returncode == 0, result.stderr[-3000:]
    log = [json.loads(line) for line in https_web.access_log.read_text().splitlines()]
    return {"data": workdir / "data", "seeds": seeds, "port_seeds": port_seeds, "log": log,
            "stderr": result.stderr, "reach": reach(https_web.truth, seeds)}


def tls_stats(stderr: str) -> dict[str, int]:
    """The crawl's tianwang/tls/ counters."""
    return {key: n for key, n in stats_of(stderr).items() if key.startswith("tianwang/tls/")}


def test_the_web_has_300_hosts_of_every_kind(https_web: TestWeb) -> None:
    kinds = Counter(host_kinds(https_web.truth).values())
    assert sum(kinds.values()) == HTTPS_HOSTS
    assert set(kinds) == {"http", "https", "redirect", "both", *BAD}


def test_stores_exactly_the_truths_reachable_set_each_url_in_its_scheme(
        https_crawl: dict, https_web: TestWeb) -> None:
    truth = https_web.truth
    stored = [record.url for _path, record in iter_tree(https_crawl["data"])]
    duplicates = [m.duplicate for m in iter_mirrors(https_crawl["data"])]
    assert len(stored) == len(set(stored))
    assert set(stored) | set(duplicates) == https_crawl["reach"].stored(truth)
    assert all(urlsplit(url).scheme == truth[url]["scheme"] for url in stored)
    schemes = Counter(urlsplit(url).scheme for url in stored)
    assert schemes["https"] > 300 and schemes["http"] > 100  # both met, in numbers


def test_nothing_goes_over_http_to_an_https_host_but_the_redirect(
        https_crawl: dict, https_web: TestWeb) -> None:
    kinds = host_kinds(https_web.truth)
    plain = [line for line in https_crawl["log"] if line["url"].startswith("http://")]
    by_kind = Counter(kinds[urlsplit(line["url"]).hostname] for line in plain)
    assert set(by_kind) <= {"http", "both", "redirect"}
    redirected = [line for line in plain if kinds[urlsplit(line["url"]).hostname] == "redirect"]
    assert redirected and {line["status"] for line in redirected} == {301}
    tunnels = [line for line in https_crawl["log"] if line["method"] == "CONNECT"]
    assert {line["status"] for line in tunnels} == {200}  # only to hosts that speak TLS
    assert {kinds[line["url"].rsplit(":", 1)[0]] for line in tunnels} == {
        "https", "redirect", "both", *BAD}
    assert {line["url"].rsplit(":", 1)[1] for line in tunnels} == {"443"}


def test_other_ports_are_refused_for_both_schemes(https_crawl: dict) -> None:
    asked = {line["url"] for line in https_crawl["log"]}
    assert "https://" + https_crawl["port_seeds"][0].split("/")[2] + "/" not in asked
    assert https_crawl["port_seeds"][0].split("/")[2] not in asked  # no CONNECT host:8443
    assert https_crawl["port_seeds"][1] not in asked  # no GET http://host:443/
    assert "tianwang/filter/port': 2" in https_crawl["stderr"]


def test_each_certificate_problem_is_fetched_counted_and_logged_once_per_host(
        https_crawl: dict, https_web: TestWeb) -> None:
    truth, reached = https_web.truth, https_crawl["reach"].levels
    bad_hosts = {(page["host"], page["tls"]) for url, page in truth.items()
                 if url in reached and page["tls"] in BAD}
    logged = set(re.findall(r"Certificate of (\S+): (\w+); fetching", https_crawl["stderr"]))
    assert logged == bad_hosts
    counts = Counter(reason for _host, reason in bad_hosts)
    stats = tls_stats(https_crawl["stderr"])
    assert {k: v for k, v in stats.items() if k != "tianwang/tls/responses"} == {
        f"tianwang/tls/{reason}": n for reason, n in counts.items()}
    bad_urls = [url for url in reached if truth.get(url, {}).get("tls") in BAD]
    assert stats["tianwang/tls/responses"] >= len(bad_urls) > 30
    stored = {record.url for _path, record in iter_tree(https_crawl["data"])}
    assert {url for url in bad_urls if truth[url]["status"] == 200
            and truth[url]["content_type"].startswith("text/")} <= stored | {
        m.duplicate for m in iter_mirrors(https_crawl["data"])}


def test_a_redirect_to_https_records_its_http_origin(https_crawl: dict,
                                                      https_web: TestWeb) -> None:
    moved = {https_web.truth[seed]["location"]: seed for seed in https_crawl["seeds"]
             if https_web.truth[seed]["kind"] == "scheme_redirect"}
    origins = {record.url: record.origin
               for _path, record in iter_tree(https_crawl["data"]) if record.url in moved}
    assert len(moved) > 50 and origins == moved


def test_http_and_https_of_a_page_are_two_urls_one_body_a_mirror(
        https_crawl: dict, https_web: TestWeb) -> None:
    truth = https_web.truth
    pairs = [(m.kept, m.duplicate) for m in iter_mirrors(https_crawl["data"])]
    same_path = [(a, b) for a, b in pairs if a.split("://")[1] == b.split("://")[1]]
    assert same_path, "no page met over both schemes with one body"
    for kept, duplicate in pairs:
        assert truth[kept]["md5"] == truth[duplicate]["md5"]
    # Where the bodies differ (an absolute same-host link), both urls are stored.
    stored = {record.url for _path, record in iter_tree(https_crawl["data"])}
    both = [url for url in stored if url.startswith("https://") and "http" + url[5:] in stored]
    assert all(truth[url]["md5"] != truth["http" + url[5:]]["md5"] for url in both)


def test_links_tsv_holds_each_pages_links_in_their_schemes(
        https_crawl: dict, https_web: TestWeb) -> None:
    pages = list(iter_pages(https_crawl["data"]))
    https_links = 0
    for page in pages:
        expected = [safe_url(link) for link in https_web.truth[page.url]["links"]]
        assert page.links == expected, page.url
        https_links += sum(link.startswith("https://") for link in page.links)
    assert https_links > 300


# -- the checks without the test CA, or switched off ------------------------------------


def one_of_each_kind(truth: dict[str, dict]) -> list[str]:
    kinds = host_kinds(truth)
    first: dict[str, str] = {}
    for host, kind in sorted(kinds.items()):
        first.setdefault(kind, host)
    return [url for url in seeds_of(truth) if urlsplit(url).hostname in first.values()]


@pytest.mark.parametrize("check", ["1", "0"])
def test_without_the_test_ca_every_https_host_is_an_unknown_ca_or_unchecked(
        check: str, https_web: TestWeb, tmp_path: Path) -> None:
    seeds = one_of_each_kind(https_web.truth)
    settings = {"TIANWANG_PROXY": https_web.address, "TIANWANG_DATA_DIR": str(tmp_path / "d"),
                "TIANWANG_TLS_CHECK": check, "TIANWANG_MAX_LEVELS": "1"}
    result = scrapy_crawl("site", {"seeds": ",".join(seeds)}, settings, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    stats = tls_stats(result.stderr)
    stored = {urlsplit(record.url).hostname for _p, record in iter_tree(tmp_path / "d")}
    assert stored == {urlsplit(url).hostname for url in seeds}  # every host fetched anyway
    if check == "0":
        assert stats == {}
        return
    # The CA is unknown: valid, expired and wrong-name leaves are signed by it; the
    # self-signed one is its own root ("self_signed" alone).
    https_hosts = {h for h, k in host_kinds(https_web.truth).items() if k != "http"}
    assert stats["tianwang/tls/unknown_ca"] == len(stored & https_hosts) - 1
    assert stats["tianwang/tls/self_signed"] == 1
    assert stats["tianwang/tls/expired"] == stats["tianwang/tls/wrong_name"] == 1


def test_a_bad_ca_file_stops_the_crawl_at_start(https_web: TestWeb, tmp_path: Path) -> None:
    bad = tmp_path / "ca.pem"
    bad.write_text("not a certificate\n")
    settings = {"TIANWANG_PROXY": https_web.address, "TIANWANG_DATA_DIR": str(tmp_path / "d"),
                "TIANWANG_CA_FILE": str(bad)}
    result = scrapy_crawl("site", {"seeds": one_of_each_kind(https_web.truth)[0]}, settings,
                          cwd=tmp_path)
    assert result.returncode != 0
    assert "TIANWANG_CA_FILE" in result.stderr
    assert not (tmp_path / "d").exists() or not list(iter_tree(tmp_path / "d"))


def test_config_and_reasons(tmp_path: Path) -> None:
    from scrapy.settings import Settings

    from tianwang.config import SettingError

    settings = Settings({"TIANWANG_TLS_CHECK": "0", "TIANWANG_CA_FILE": ""})
    assert TLSCheckConfig.from_settings(settings) == TLSCheckConfig(False, "")
    (tmp_path / "empty.pem").write_text("")
    for bad in ({"TIANWANG_CA_FILE": str(tmp_path / "none.pem")},
                {"TIANWANG_CA_FILE": str(tmp_path / "empty.pem")},
                {"TIANWANG_TLS_CHECK": "maybe"}):
        with pytest.raises(SettingError, match=next(iter(bad))):
            TLSCheckConfig.from_settings(Settings({"TIANWANG_TLS_CHECK": "1", **bad}))
    assert [reason_of(e) for e in (10, 18, 20, 21, 19, 9, 99)] == [
        "expired", "self_signed", "unknown_ca", "unknown_ca", "unknown_ca", "not_yet_valid",
        "invalid"]
