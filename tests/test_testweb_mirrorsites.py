"""The test web's mirrored content: copies serve their original's response; truth says so."""

from __future__ import annotations

import urllib.request
from collections import defaultdict

import pytest

from tests.conftest import MIRROR_HOSTS, MIRROR_PAGES, MIRROR_SEED, TestWeb
from tests.truth import host_of, is_stored_page
from tianwang.testweb.mirrorsites import links_in
from tianwang.testweb.model import SyntheticWeb

ARGS = (MIRROR_SEED, MIRROR_HOSTS, MIRROR_PAGES)


@pytest.fixture(scope="module")
def web() -> SyntheticWeb:
    return SyntheticWeb(*ARGS, mirrors=True)


def copies(truth: dict[str, dict]) -> list[dict]:
    return [page for page in truth.values() if page["copy_of"]]


def test_mirrors_are_off_by_default_and_only_add_urls() -> None:
    plain = {page["url"]: page for page in SyntheticWeb(*ARGS).truth(bodies=False)}
    mirrored = {page["url"]: page for page in SyntheticWeb(*ARGS, mirrors=True).truth(False)}
    assert all("copy_of" not in page and page["kind"] != "copy" for page in plain.values())
    assert set(plain) < set(mirrored)
    assert {url for url, page in mirrored.items() if page["copy_of"]} == set(mirrored) - set(plain)


def test_all_three_kinds_of_copies_exist(mirror_web: TestWeb) -> None:
    found = {"default": 0, "session": 0, "host": 0}
    for page in copies(mirror_web.truth):
        original = page["copy_of"]
        if page["url"].endswith("/default.htm"):
            found["default"] += original == f"http://{page['host']}/"
        elif "sessionid=" in page["url"]:
            found["session"] += page["url"].split("sessionid=")[0][:-1] == original
        else:
            found["host"] += host_of(original) != page["host"] and (
                original.split("/", 3)[3] == page["url"].split("/", 3)[3]  # the same path
            )
    assert all(count >= 3 for count in found.values()), found


def test_a_copy_serves_its_originals_response(web: SyntheticWeb, mirror_web: TestWeb) -> None:
    for page in copies(mirror_web.truth):
        assert web.respond(page["url"]) == web.respond(page["copy_of"])
        assert page["md5"] == mirror_web.truth[page["copy_of"]]["md5"]
        assert is_stored_page(page) and page["kind"] == "copy"


def test_the_server_serves_copies_over_http(mirror_web: TestWeb) -> None:
    proxy = urllib.request.ProxyHandler({"http": mirror_web.address})
    opener = urllib.request.build_opener(proxy)
    page = next(p for p in copies(mirror_web.truth) if p["url"].endswith("/default.htm"))
    bodies = [opener.open(url, timeout=30).read() for url in (page["url"], page["copy_of"])]
    assert bodies[0] == bodies[1]


def test_each_copy_is_linked_close_to_its_homepage(mirror_web: TestWeb) -> None:
    truth = mirror_web.truth
    linkers: defaultdict[str, list[dict]] = defaultdict(list)
    for page in truth.values():
        for link in page["links"]:
            linkers[link].append(page)
    for page in copies(truth):
        assert page["distance"] <= 2
        assert any(p["host"] == page["host"] and p["distance"] == page["distance"] - 1
                   for p in linkers[page["url"]])


def test_a_copys_links_are_read_at_its_own_url(web: SyntheticWeb, mirror_web: TestWeb) -> None:
    page = next(p for p in copies(mirror_web.truth)
                if host_of(p["copy_of"]) != p["host"] and p["content_type"] == "text/html")
    assert page["links"] == links_in(web.respond(page["url"]).body, page["url"])
    relative = [link for link in page["links"] if host_of(link) == page["host"]]
    assert relative  # relative links of a copy lead to the copy's host


def test_identical_bodies_are_exactly_the_copies(mirror_web: TestWeb) -> None:
    groups: defaultdict[str, set[str]] = defaultdict(set)
    for url, page in mirror_web.truth.items():
        if is_stored_page(page) and page["kind"] != "robots":
            groups[page["md5"]].add(page["copy_of"] or url)
    assert all(len(originals) == 1 for originals in groups.values())


def test_the_default_web_has_no_identical_pages(testweb: TestWeb) -> None:
    """So dedup, on by default, drops nothing from the crawls the other tests check."""
    bodies: defaultdict[str, list[str]] = defaultdict(list)
    for url, page in testweb.truth.items():
        if is_stored_page(page) and page["kind"] != "robots":  # robots.txt is never stored
            bodies[page["md5"]].append(url)
    assert [urls for urls in bodies.values() if len(urls) > 1] == []
