"""Page blocks: labels against the --changing test web's truth, and the content hash."""

from __future__ import annotations

import pytest

from tests.conftest import CHANGING_HOSTS, CHANGING_PAGES, CHANGING_SEED
from tianwang.analysis.blocks import block_links, content_hash, segment
from tianwang.testweb.changing import AD_PERIOD, CLOCK_START, DAY
from tianwang.testweb.model import SyntheticWeb


@pytest.fixture(scope="module")
def web() -> SyntheticWeb:
    return SyntheticWeb(CHANGING_SEED, CHANGING_HOSTS, CHANGING_PAGES, changing=True)


@pytest.fixture(scope="module")
def pages(web: SyntheticWeb) -> list[dict]:
    return [page for page in web.truth(bodies=False) if page["blocks"]]


def labels_by_name(body: bytes, charset: str) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for block in segment(body, charset):
        found.setdefault(block.name.split()[0] if block.name else "text", set()).add(block.label)
    return found


def test_every_truth_block_gets_its_label(web: SyntheticWeb, pages: list[dict]) -> None:
    wrong = []
    for page in pages:
        found = labels_by_name(web.changing.served(page["url"], CLOCK_START).body,
                               page["charset"])
        wrong += [(page["url"], name) for name, label in page["blocks"].items()
                  if found.get(name) != {label}]
    assert not wrong
    assert sum(len(page["blocks"]) for page in pages) > 500


def test_rotating_ad_is_not_a_change(web: SyntheticWeb, pages: list[dict]) -> None:
    still = [p for p in pages if p["rotating_ad"] and p["change_rate"] == 0]
    assert len(still) >= 5
    for page in still:
        bodies = [web.changing.served(page["url"], CLOCK_START + k * AD_PERIOD).body
                  for k in (0, 1, 30)]
        assert len(set(bodies)) == 3  # the bytes differ: an MD5 would call it changed
        hashes = {content_hash(segment(body, page["charset"])) for body in bodies}
        assert len(hashes) == 1


def test_content_change_is_a_change(web: SyntheticWeb, pages: list[dict]) -> None:
    changing = [p for p in pages if p["change_rate"] > 0.5]
    assert len(changing) >= 5
    for page in changing:
        url, later = page["url"], CLOCK_START + 10 * DAY
        same_version = web.changing.version(url, later) == 0
        before = content_hash(segment(web.changing.served(url, CLOCK_START).body,
                                      page["charset"]))
        after = content_hash(segment(web.changing.served(url, later).body, page["charset"]))
        assert (before == after) == same_version


def test_block_links_leave_out_boilerplate() -> None:
    body = (b'<html><body><div id="menu"><a href="/a">A</a> <a href="/b">B</a></div>'
            b'<p>' + b"text " * 40 + b'<a href="/c">c</a></p>'
            b'<div class="banner"><a href="http://ads.example/x">buy</a></div></body></html>')
    blocks = segment(body, "utf-8")
    assert [b.label for b in blocks] == ["navigation", "content", "boilerplate"]
    assert block_links(blocks, "http://h/") == ["http://h/a", "http://h/b", "http://h/c"]


@pytest.mark.parametrize("body", [b"", b"   ", b"plain text, no markup", b"<html></html>"])
def test_odd_bodies(body: bytes) -> None:
    blocks = segment(body, "utf-8")
    assert isinstance(content_hash(blocks), str)
