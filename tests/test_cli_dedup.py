"""`tianwang dedup` and `tianwang importance` on real crawls of the test web with mirrors,
checked against the test web's truth."""

from __future__ import annotations

import csv
import hashlib
import io
from collections import defaultdict
from pathlib import Path

import pytest

from tests.conftest import TestWeb, scrapy_crawl, tianwang_cli
from tests.truth import reach
from tianwang.formats import iter_tree
from tianwang.formats.mirrors import iter_mirrors


def stored(data: Path) -> dict[str, str]:
    """url -> md5 of the body, for every record of the tree."""
    return {r.url: hashlib.md5(r.http.body).hexdigest() for _p, r in iter_tree(data)}


def url_groups(data: Path) -> dict[str, set[str]]:
    """md5 -> the urls known to have that body: records and mirror table."""
    groups: defaultdict[str, set[str]] = defaultdict(set)
    for url, md5 in stored(data).items():
        groups[md5].add(url)
    for mirror in iter_mirrors(data):
        groups[mirror.md5] |= {mirror.duplicate, mirror.kept}
    return dict(groups)


def truth_groups(truth: dict[str, dict], seeds: list[str]) -> dict[str, set[str]]:
    """md5 -> the urls with that body among the pages a correct crawl from seeds stores."""
    groups: defaultdict[str, set[str]] = defaultdict(set)
    for url in reach(truth, seeds).stored(truth):
        groups[truth[url]["md5"]].add(url)
    return dict(groups)


def leads_to(truth: dict[str, dict], parent: str, url: str) -> bool:
    """The parent links to url, or to a redirect to it, or is that redirect (which url the
    crawl's Referer names after a redirect)."""
    hops = [parent, *truth[parent]["links"]]
    return url in hops or any(truth.get(hop, {}).get("location") == url for hop in hops)


def crawl(web: TestWeb, seeds: list[str], workdir: Path) -> Path:
    workdir.mkdir()
    settings = {"TIANWANG_PROXY": web.address, "TIANWANG_DATA_DIR": str(workdir / "data"),
                # as the mirror_crawl fixture: the ?sessionid= copies are what is deduped here
                "TIANWANG_SESSION_PARAMS": ""}
    result = scrapy_crawl("site", {"seeds": ",".join(seeds)}, settings, cwd=workdir)
    assert result.returncode == 0, result.stderr[-3000:]
    return workdir / "data"


@pytest.fixture(scope="module")
def split_crawls(mirror_web: TestWeb, mirror_crawl: dict,
                 tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Two overlapping crawls (homepages 0-19 and 10-29), and the union crawled at once."""
    base = tmp_path_factory.mktemp("split")
    seeds = mirror_crawl["seeds"]
    third = len(seeds) // 3
    a = crawl(mirror_web, seeds[: 2 * third], base / "a")
    b = crawl(mirror_web, seeds[third:], base / "b")
    for args in ([a, b, "--out", base / "ab"], [mirror_crawl["data"], "--out", base / "u"]):
        run = tianwang_cli("dedup", *map(str, args))
        assert run.returncode == 0, run.stderr
    return {"a": a, "b": b, "ab": base / "ab", "u": base / "u"}


def test_dedup_of_two_overlapping_crawls_equals_the_dedup_of_their_union(
    split_crawls: dict[str, Path], mirror_web: TestWeb, mirror_crawl: dict,
) -> None:
    ab, union = url_groups(split_crawls["ab"]), url_groups(split_crawls["u"])
    assert ab == union == truth_groups(mirror_web.truth, mirror_crawl["seeds"])
    assert sorted(stored(split_crawls["ab"]).values()) == sorted(stored(split_crawls["u"]).values())
    assert any(len(urls) > 1 for urls in ab.values()), "the crawls met no mirrored page"


def test_each_body_kept_under_the_shortest_url_either_crawl_stored(
    split_crawls: dict[str, Path],
) -> None:
    candidates: defaultdict[str, set[str]] = defaultdict(set)
    for tree in ("a", "b"):
        for url, md5 in stored(split_crawls[tree]).items():
            candidates[md5].add(url)
    kept = stored(split_crawls["ab"])
    assert sorted(kept.values()) == sorted(candidates)  # each body once
    for url, md5 in kept.items():
        assert url == min(candidates[md5], key=lambda u: (len(u), u))


def test_importance_in_degrees_are_the_truths_over_the_crawled_pages(
    mirror_crawl: dict, mirror_web: TestWeb,
) -> None:
    run = tianwang_cli("importance", str(mirror_crawl["data"]))
    assert run.returncode == 0, run.stderr
    rows = list(csv.DictReader(io.StringIO(run.stdout)))
    pages = set(stored(mirror_crawl["data"]))
    assert {row["url"] for row in rows} == pages
    links = {q: set(mirror_web.truth[q]["links"]) for q in pages}

    def indegree(url: str) -> int:  # stored pages linking to url, per the truth
        return sum(1 for q in pages if q != url and url in links[q])

    for row in rows:
        assert int(row["indegree"]) == indegree(row["url"]), row
        parent = row["parent"]
        if parent:
            assert leads_to(mirror_web.truth, parent, row["url"]), row
        assert int(row["parent_indegree"]) == (indegree(parent) if parent else 0), row
    assert sum(1 for row in rows if row["parent"]) > len(rows) / 2
    weights = [float(row["weight"]) for row in rows]
    assert weights == sorted(weights, reverse=True)


def test_importance_mirror_degree_is_the_truths(mirror_crawl: dict, mirror_web: TestWeb) -> None:
    run = tianwang_cli("importance", str(mirror_crawl["data"]), "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(run.stdout)))
    groups = truth_groups(mirror_web.truth, mirror_crawl["seeds"])
    bodies = stored(mirror_crawl["data"])
    assert {row["url"]: int(row["mirror"]) for row in rows} == {
        url: len(groups[md5]) for url, md5 in bodies.items()}
    assert max(int(row["mirror"]) for row in rows) > 1
