"""The collection host list of the test web: its classes, its answers and its url lists."""

from __future__ import annotations

import hashlib
import json
import urllib.error
import urllib.request
from collections import Counter
from urllib.parse import urlsplit

import pytest

from tests.conftest import tianwang_cli
from tianwang.testweb.hostlist import (
    FAMILY_DOMAIN,
    MALFORMED,
    MIN_PAGES,
    MULTI_DOMAIN,
    UNREACHABLE,
    CollectionWeb,
)
from tianwang.testweb.junk import IP_HOSTS, PORT_HOSTS

SEED, HOSTS, PAGES = 5, 30, 60


@pytest.fixture(scope="module")
def web() -> CollectionWeb:
    return CollectionWeb(SEED, HOSTS, PAGES)


@pytest.fixture(scope="module")
def truth(web: CollectionWeb) -> list[dict]:
    return list(web.truth())


def test_every_class_is_there_with_the_step_that_removes_it(truth: list[dict]) -> None:
    steps = {(r["class"], r["step"]) for r in truth}
    assert steps >= {
        ("normal", None), ("multihost", None), ("small", "D4"), ("malformed", "D1"),
        ("unreachable", "D2"), ("alias", "D3"), ("port", "D4"), ("ip", "D4"), ("spam", "D4"),
        ("digit", "D4"), ("family", "D4"),
    }
    by_class = Counter(r["class"] for r in truth)
    assert by_class["family"] == 50 and by_class["alias"] == 5
    assert by_class["malformed"] == len(MALFORMED)
    assert by_class["unreachable"] == sum(map(len, UNREACHABLE.values()))
    assert {r["host"] for r in truth if r["class"] == "port"} == set(PORT_HOSTS)
    assert {r["host"] for r in truth if r["class"] == "ip"} <= set(IP_HOSTS)


def test_sites_are_written_as_d0_writes_them(truth: list[dict]) -> None:
    sites = [r["site"] for r in truth]
    assert len(sites) == len(set(sites))
    assert "http://www.devtest1.com:8080/" in sites
    assert all(s.startswith("http://") and s.endswith("/") and s.count(":") == 2 for s in sites)


def test_url_lists_hold_each_sites_pages_spread_over_the_lists(web: CollectionWeb,
                                                               truth: list[dict]) -> None:
    lists = web.url_lists(3)
    counts: Counter[str] = Counter()
    for urls in lists:
        for url in urls:
            counts[urlsplit(url).netloc] += 1
    assert dict(counts) == {r["host"]: r["pages"] for r in truth}
    assert sum(map(len, lists)) == len({u for urls in lists for u in urls})  # no url twice
    hosts_of = [{urlsplit(u).netloc for u in urls} for urls in lists]
    in_lists = [sum(r["host"] in hosts for hosts in hosts_of) for r in truth if r["pages"] >= 3]
    assert max(in_lists) == 3  # a site split over machines: D0 must sum it


def test_aliases_serve_their_kept_names_homepage_bytes(web: CollectionWeb,
                                                       truth: list[dict]) -> None:
    by_site = {r["site"]: r for r in truth}
    aliases = [r for r in truth if r["class"] == "alias"]
    for alias in aliases:
        kept = by_site[alias["alias_of"]]
        assert kept["step"] is None or kept["reason"] == "small"
        assert alias["md5"] == kept["md5"] is not None
    # The www name is kept over a bare name with more pages.
    assert any(a["host"] == by_site[a["alias_of"]]["host"][4:]
               and a["pages"] > by_site[a["alias_of"]]["pages"] for a in aliases)
    # Outside the alias groups no two reachable homepages are alike.
    kept_md5 = [r["md5"] for r in truth if r["status"] == 200 and r["class"] != "alias"]
    assert len(kept_md5) == len(set(kept_md5))


def test_the_redirect_alias_answers_301_to_the_www_name(web: CollectionWeb) -> None:
    [(name, location)] = web.redirects.items()
    answer = web.respond(f"http://{name}/")
    assert answer.status == 301 and answer.header("Location") == location == f"http://www.{name}/"


@pytest.mark.parametrize(("reason", "status"), [("http-502", 502), ("http-504", 504),
                                                ("http-404", 404)])
def test_unreachable_names_answer_an_error(web: CollectionWeb, reason: str,
                                           status: int) -> None:
    for name in UNREACHABLE[reason]:
        assert web.respond(f"http://{name}/").status == status


def test_family_and_multihost_domains(truth: list[dict]) -> None:
    family = [r for r in truth if r["host"].endswith("." + FAMILY_DOMAIN)]
    multi = [r for r in truth if r["host"].endswith("." + MULTI_DOMAIN)]
    assert all(18 <= r["pages"] <= 22 and r["reason"] == "family" for r in family)
    sizes = sorted(r["pages"] for r in multi)
    assert sizes[0] >= MIN_PAGES and sizes[-1] / sizes[0] > 20
    assert all(r["step"] is None for r in multi)


def test_small_sites_are_those_under_ten_pages_with_their_aliases(truth: list[dict]) -> None:
    for r in truth:
        if r["class"] in ("normal", "small"):
            whole = r["group_pages"] or r["pages"]
            assert (r["reason"] == "small") == (whole < MIN_PAGES)


def test_collection_command_writes_lists_truth_and_spam_list(tmp_path) -> None:
    result = tianwang_cli("testweb", "collection", "--seed", str(SEED), "--hosts", str(HOSTS),
                          "--max-pages", str(PAGES), "--lists", "2", "--out", str(tmp_path))
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "spamlist.txt", "truth.jsonl", "urls_0.txt", "urls_1.txt"]
    records = [json.loads(line) for line in (tmp_path / "truth.jsonl").read_text().splitlines()]
    assert records == list(CollectionWeb(SEED, HOSTS, PAGES).truth())
    assert "fangwen.com" in (tmp_path / "spamlist.txt").read_text()


def test_hosts_command_lists_every_name_of_the_collection(truth: list[dict]) -> None:
    result = tianwang_cli("testweb", "hosts", "--collection", "--seed", str(SEED), "--hosts",
                          str(HOSTS), "--max-pages", str(PAGES))
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [f"http://{r['host']}/" for r in truth]


def test_collection_command_refuses_a_web_too_small(tmp_path) -> None:
    result = tianwang_cli("testweb", "collection", "--seed", "1", "--hosts", "5", "--out",
                          str(tmp_path))
    assert result.returncode == 2
    assert "needs >= 20 hosts" in result.stderr


def test_served_collection_answers_as_the_model(collection_web) -> None:
    """The proxy subprocess (`serve --collection`) answers what truth says."""
    proxy = urllib.request.ProxyHandler({"http": collection_web.address})
    opener = urllib.request.build_opener(proxy, _NoRedirect)
    checked = 0
    for record in collection_web.truth.values():
        if record["class"] in ("alias", "family", "unreachable") and checked < 20:
            status, body = _get(opener, f"http://{record['host']}/")
            assert status == record["status"] or (status == 301 and record["final_url"])
            if status == 200:
                assert hashlib.md5(body).hexdigest() == record["md5"]
            checked += 1
    assert checked == 20


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        return None


def _get(opener: urllib.request.OpenerDirector, url: str) -> tuple[int, bytes]:
    try:
        with opener.open(url, timeout=10) as answer:
            return answer.status, answer.read()
    except urllib.error.HTTPError as exc:
        with exc:
            return exc.code, exc.read()
