"""Verticals in real crawls of the test web: the profile shapes the crawl, `-s` beats it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

import tianwang.default_settings as defaults
from tests.conftest import TestWeb, scrapy_crawl, serve_graph, stats_of, write_graph
from tests.test_spiders_site import access_log, read_tree
from tests.truth import host_of, reach
from tianwang.testweb.launcher import write_seeds
from tianwang.verticals import VERTICALS

# A vertical as a user writes one (README): government hosts only, two levels, its own seeds.
VERTICAL = "govtest"


def profile(seeds: Path) -> dict:
    return {
        "TIANWANG_SEEDS": str(seeds),
        "TIANWANG_ALLOWED_DOMAINS": ["gov.cn"],
        "TIANWANG_MAX_LEVELS": 2,
    }


@pytest.fixture(scope="module")
def homepages(testweb: TestWeb) -> list[str]:
    return [url for url, page in testweb.truth.items() if page["kind"] == "home"]


def vertical_crawl(web: TestWeb, workdir: Path, homepages: list[str], **extra: str) -> dict:
    """Crawl with the vertical chosen on the command line, seeds from the vertical alone."""
    seeds = write_seeds(workdir / "seeds.txt", homepages)
    since = len(web.access_log.read_text(encoding="utf-8").splitlines())
    settings = {
        "TIANWANG_PROXY": web.address,
        "TIANWANG_DATA_DIR": str(workdir / "data"),
        "TIANWANG_VERTICALS": json.dumps({VERTICAL: profile(seeds)}),
        "TIANWANG_VERTICAL": VERTICAL,
        **extra,
    }
    result = scrapy_crawl("site", {}, settings, cwd=workdir)
    assert result.returncode == 0, result.stderr[-3000:]
    stored = {record["header"]["url"] for record in read_tree(workdir / "data")}
    return {"stored": stored, "log": access_log(web, since), "stderr": result.stderr}


def government(urls: list[str]) -> list[str]:
    return [url for url in urls if host_of(url).endswith(".gov.cn")]


def test_a_vertical_sets_seeds_domains_and_levels(
    testweb: TestWeb, tmp_path: Path, homepages: list[str]
) -> None:
    crawl = vertical_crawl(testweb, tmp_path, homepages)
    expected = reach(testweb.truth, government(homepages), max_levels=2).stored(testweb.truth)
    assert len(government(homepages)) >= 5 and len(expected) > len(government(homepages))
    assert crawl["stored"] == expected
    assert {host_of(entry["url"]) for entry in crawl["log"]} == {
        host_of(url) for url in government(homepages)
    }
    assert (
        f"vertical {VERTICAL}: set TIANWANG_SEEDS, TIANWANG_ALLOWED_DOMAINS, TIANWANG_MAX_LEVELS"
        in crawl["stderr"]
    )


def test_the_command_line_beats_the_vertical(
    testweb: TestWeb, tmp_path: Path, homepages: list[str]
) -> None:
    crawl = vertical_crawl(testweb, tmp_path, homepages, TIANWANG_MAX_LEVELS="1")
    expected = reach(testweb.truth, government(homepages), max_levels=1).stored(testweb.truth)
    assert crawl["stored"] == expected  # the homepages only: one level, as -s said
    assert f"vertical {VERTICAL}: kept TIANWANG_MAX_LEVELS='1' (cmdline)" in crawl["stderr"]


def test_an_unknown_vertical_stops_the_crawl_before_any_request(
    testweb: TestWeb, tmp_path: Path, homepages: list[str]
) -> None:
    since = len(testweb.access_log.read_text(encoding="utf-8").splitlines())
    settings = {"TIANWANG_PROXY": testweb.address, "TIANWANG_VERTICAL": "sports"}
    result = scrapy_crawl("site", {"seeds": homepages[0]}, settings, cwd=tmp_path)
    assert result.returncode != 0
    assert result.stderr.strip().splitlines()[-1].endswith(
        "setting TIANWANG_VERTICAL='sports' is invalid: expected one of: collection, forum, "
        "government, news, paper"
    )
    assert access_log(testweb, since) == []
    assert not (tmp_path / "data").exists()


# --- the built-in "paper" and "collection" verticals (docs/design.md, docs/collection.md) ---


def test_the_paper_vertical_crawls_with_seed_000s_alternation_and_weights(
    testweb: TestWeb, tmp_path: Path, homepages: list[str]
) -> None:
    seeds = write_seeds(tmp_path / "seeds.txt", homepages[:12])
    settings = {"TIANWANG_PROXY": testweb.address, "TIANWANG_DATA_DIR": str(tmp_path / "data"),
                "TIANWANG_VERTICAL": "paper", "DOWNLOAD_DELAY": "0"}
    result = scrapy_crawl("site", {"seeds": str(seeds)}, settings, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "vertical paper: set " + ", ".join(VERTICALS["paper"]) in result.stderr
    stats = stats_of(result.stderr)
    # 1 sorted pick, then 1 random one: no host's first requests, no host picks. A random
    # pick that finds no ready host in its draws is made as a sorted one (queue.py).
    assert stats["tianwang/frontier/first_picks"] == stats["tianwang/frontier/host_picks"] == 0
    sorted_picks, random_picks = (stats[f"tianwang/frontier/{kind}_picks"]
                                  for kind in ("sorted", "random"))
    assert random_picks > 100 and 0.8 * sorted_picks <= random_picks <= sorted_picks + 1
    assert "tianwang/frontier/links/raised" not in stats  # depth weight alone
    expected = reach(testweb.truth, homepages[:12]).stored(testweb.truth)
    assert {record["header"]["url"] for record in read_tree(tmp_path / "data")} == expected


# A host larger than the default's page limit (TIANWANG_MAX_HOST_PAGES), within 3 levels: its
# homepage links 100 sections, each of which links 101 pages (10,201 pages), and one page of
# each section links a page one level too deep, and another host.
BIG_SECTIONS, BIG_LEAVES = 100, 101


def big_site() -> tuple[list[str], list[tuple[int, int]]]:
    urls = ["http://big.test/", "http://other.test/"]
    edges = [(0, 1)]
    for section in range(BIG_SECTIONS):
        urls.append(f"http://big.test/s{section}/")
        edges.append((0, len(urls) - 1))
    for section in range(BIG_SECTIONS):
        for leaf in range(BIG_LEAVES):
            urls.append(f"http://big.test/s{section}/p{leaf}.html")
            edges.append((2 + section, len(urls) - 1))
        urls.append(f"http://big.test/s{section}/deep/q.html")  # level 4
        edges.append((len(urls) - 2, len(urls) - 1))
    return urls, edges


@pytest.fixture(scope="module")
def big_web(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestWeb]:
    urls, edges = big_site()
    directory = write_graph(tmp_path_factory.mktemp("big") / "graph", urls, edges)
    yield from serve_graph(directory, tmp_path_factory.mktemp("bigweb") / "access.jsonl")


def big_crawl(web: TestWeb, workdir: Path, **settings: str) -> tuple[set[str], dict[str, int]]:
    """The collection recipe's crawl command (docs/collection.md) on big.test, fast: the test
    web answers at once, so no delay and 16 connections."""
    workdir.mkdir()
    result = scrapy_crawl("site", {"seeds": "http://big.test/"}, {
        "TIANWANG_PROXY": web.address, "TIANWANG_DATA_DIR": str(workdir / "data"),
        "DOWNLOAD_DELAY": "0", "CONCURRENT_REQUESTS_PER_DOMAIN": "16", **settings},
        cwd=workdir)
    assert result.returncode == 0, result.stderr[-3000:]
    stored = {record["header"]["url"] for record in read_tree(workdir / "data")}
    return stored, stats_of(result.stderr)


def test_the_collection_vertical_stores_every_page_of_a_host_past_the_default_limit(
    big_web: TestWeb, tmp_path: Path
) -> None:
    expected = reach(big_web.truth, ["http://big.test/"], max_levels=3).stored(big_web.truth)
    assert len(expected) == 1 + BIG_SECTIONS * (1 + BIG_LEAVES) > defaults.TIANWANG_MAX_HOST_PAGES
    stored, stats = big_crawl(big_web, tmp_path / "collection", TIANWANG_VERTICAL="collection")
    assert stored == expected  # every page of 3 levels: none deeper, no other host
    assert not [name for name in stats if name.startswith("tianwang/filter/host")]
    # The ablation: the stack's defaults cut the host at its page budget.
    stored, stats = big_crawl(big_web, tmp_path / "defaults")
    assert len(stored) < len(expected) and stored < expected
    assert stats["tianwang/filter/host_budget"] > 0
