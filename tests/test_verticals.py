"""Verticals in real crawls of the test web: the profile shapes the crawl, `-s` beats it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import TestWeb, scrapy_crawl
from tests.test_spiders_site import access_log, read_tree
from tests.truth import host_of, reach
from tianwang.testweb.launcher import write_seeds

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
        "setting TIANWANG_VERTICAL='sports' is invalid: expected one of: forum, government, news"
    )
    assert access_log(testweb, since) == []
    assert not (tmp_path / "data").exists()
