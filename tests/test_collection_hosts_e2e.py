"""D0 to D4 end to end on the collection test web, each step held to the web's truth.

The url lists of `testweb collection` -> hosts count -> hosts clean -> the validate spider
(a real crawl through the test web server) -> hosts dealias -> hosts filter.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from tests.conftest import scrapy_crawl, tianwang_cli


def table(path: Path) -> list[list[str]]:
    return [line.split("\t") for line in path.read_text(encoding="utf-8").splitlines()]


def pages(record: dict) -> str:
    return str(record["group_pages"] or record["pages"])


@pytest.fixture(scope="module")
def built(collection_web, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """Every step run once, as an operator runs them; each step's stdout (or log) kept."""
    work = tmp_path_factory.mktemp("hosts")
    files = collection_web.files
    out: dict = {"work": work}
    steps = [
        ("D0", ["hosts", "count", *map(str, collection_web.url_lists()), "-o", str(work / "d0"),
                "--workers", "2"]),
        ("D1", ["hosts", "clean", str(work / "d0"), "-o", str(work / "d1")]),
    ]
    for name, args in steps:
        result = tianwang_cli(*args)
        assert result.returncode == 0, result.stderr
        out[name] = result.stdout
    crawl = scrapy_crawl("validate", {"sites": str(work / "d1"), "out": str(work / "d2")},
                         {"TIANWANG_PROXY": collection_web.address}, cwd=work)
    assert crawl.returncode == 0, crawl.stderr[-3000:]
    out["D2"] = crawl.stderr
    for name, args in [
        ("D3", ["hosts", "dealias", str(work / "d2"), "-o", str(work / "d3")]),
        ("D4", ["hosts", "filter", str(work / "d3"), "-o", str(work / "d4"), "--spam-list",
                str(files / "spamlist.txt"), "--min-pages", "10"]),
    ]:
        result = tianwang_cli(*args)
        assert result.returncode == 0, result.stderr
        out[name] = result.stdout
    return out


def test_d0_counts_every_site_summed_over_the_lists(built: dict, collection_web) -> None:
    truth = collection_web.truth
    assert table(built["work"] / "d0") == sorted([s, str(r["pages"])] for s, r in truth.items())
    urls = sum(r["pages"] for r in truth.values())
    assert built["D0"].startswith(f"D0: {len(truth)} sites from {urls} urls in 3 lists")


def test_d1_removes_the_malformed_names(built: dict, collection_web) -> None:
    truth = collection_web.truth
    assert table(built["work"] / "d1") == sorted(
        [s, str(r["pages"])] for s, r in truth.items() if r["step"] != "D1")
    assert table(built["work"] / "d1.removed") == sorted(
        [s, str(r["pages"]), r["reason"]] for s, r in truth.items() if r["step"] == "D1")


def test_d2_keeps_the_reachable_sites(built: dict, collection_web) -> None:
    truth = collection_web.truth
    assert table(built["work"] / "d2") == sorted(
        [s, str(r["pages"]), "200", r["md5"], r["final_url"]] for s, r in truth.items()
        if r["step"] not in ("D1", "D2"))
    assert table(built["work"] / "d2.removed") == sorted(
        [s, str(r["pages"]), r["reason"]] for s, r in truth.items() if r["step"] == "D2")
    reachable = sum(1 for r in truth.values() if r["step"] not in ("D1", "D2"))
    assert f"D2: {reachable} sites reachable of " in built["D2"]


def test_d3_folds_the_aliases(built: dict, collection_web) -> None:
    truth = collection_web.truth
    assert [row[:2] for row in table(built["work"] / "d3")] == sorted(
        [s, pages(r)] for s, r in truth.items() if r["step"] in (None, "D4"))
    assert table(built["work"] / "d3.aliases") == sorted(
        [s, str(r["pages"]), r["alias_of"]] for s, r in truth.items() if r["class"] == "alias")


def test_d4_drops_informal_and_spam_sites_by_reason(built: dict, collection_web) -> None:
    truth = collection_web.truth
    assert table(built["work"] / "d4") == sorted(
        [s, pages(r)] for s, r in truth.items() if r["step"] is None)
    assert table(built["work"] / "d4.removed") == sorted(
        [s, pages(r), r["reason"]] for s, r in truth.items() if r["step"] == "D4")
    counts = Counter(r["reason"] for r in truth.values() if r["step"] == "D4")
    for reason in ("port", "ip", "spam", "digit", "family", "small"):
        assert counts[reason] > 0 and f"{reason} {counts[reason]}" in built["D4"]
