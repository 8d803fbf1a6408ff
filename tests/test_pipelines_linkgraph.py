"""The link graph after a real crawl of the mirror web, against the web's truth."""

from __future__ import annotations

from pathlib import Path

import pytest
from scrapy.exceptions import NotConfigured

from tests.conftest import TestWeb, project_crawler, scrapy_crawl
from tests.truth import reach
from tianwang.formats import iter_tree
from tianwang.formats.linksfile import iter_edges, iter_pages, out_links
from tianwang.formats.mirrors import iter_mirrors
from tianwang.items import PageItem
from tianwang.pipelines.linkgraph import LinkGraphPipeline
from tianwang.urls import safe_url


def test_every_stored_page_has_one_line_and_nothing_else_has_one(mirror_crawl: dict) -> None:
    data = mirror_crawl["data"]
    stored = [record.url for _path, record in iter_tree(data)]
    lines = [page.url for page in iter_pages(data)]
    assert sorted(lines) == sorted(stored) and len(set(lines)) == len(lines)
    # A copy dropped by dedup has no line: the kept page's line holds the same links.
    assert {m.duplicate for m in iter_mirrors(data)} & set(lines) == set()


def test_out_links_are_the_truths_links(mirror_crawl: dict, mirror_web: TestWeb) -> None:
    pages = list(iter_pages(mirror_crawl["data"]))
    assert sum(len(page.links) for page in pages) > 1000
    for page in pages:
        expected = [safe_url(link) for link in mirror_web.truth[page.url]["links"]]
        assert page.links == expected, page.url


def test_parents_are_pages_that_link_to_them(mirror_crawl: dict, mirror_web: TestWeb) -> None:
    truth, seeds = mirror_web.truth, set(mirror_crawl["seeds"])
    fetched = reach(truth, seeds).levels
    redirected = 0
    for page in iter_pages(mirror_crawl["data"]):
        if page.url in seeds:
            assert page.parent == ""
            continue
        assert page.parent in fetched
        links = truth[page.parent]["links"]
        if page.url not in links:
            # Reached through a redirect: the parent links the url that redirected here.
            assert any(truth.get(link, {}).get("location") == page.url for link in links)
            redirected += 1
    assert redirected > 0  # the case was met


def test_edges_and_lookup_by_url(mirror_crawl: dict) -> None:
    data = mirror_crawl["data"]
    page = next(p for p in iter_pages(data) if p.links)
    host = page.url.split("/")[2]
    assert out_links(data, page.url, host) == page.links
    assert [(page.url, link) for link in page.links] == [
        edge for edge in iter_edges(data) if edge[0] == page.url
    ]


def test_the_pipeline_writes_the_parent_and_links_beside_the_records(tmp_path: Path) -> None:
    crawler = project_crawler(TIANWANG_DATA_DIR=str(tmp_path))
    crawler.stats.open_spider()
    pipeline = LinkGraphPipeline.from_crawler(crawler)
    pipeline.open_spider()
    item = PageItem(url="http://www.pku.edu.cn/a.html", requested_url="http://www.pku.edu.cn/a.html",
                    status=200, headers=[], body=b"", ip=None, fetched_at=0.0, level=2,
                    links=["http://www.pku.edu.cn/b.html", "http://www.tsinghua.edu.cn/"],
                    parent="http://www.pku.edu.cn/")
    assert pipeline.process_item(item) is item
    pipeline.close_spider()
    (line,) = iter_pages(tmp_path)
    assert (line.url, line.parent, line.links) == (item.url, item.parent, item.links)
    assert crawler.stats.get_value("tianwang/linkgraph/links") == 2


def test_link_graph_can_be_switched_off(tmp_path: Path) -> None:
    crawler = project_crawler(TIANWANG_DATA_DIR=str(tmp_path), TIANWANG_LINK_GRAPH=False)
    with pytest.raises(NotConfigured):
        LinkGraphPipeline.from_crawler(crawler)


def test_a_bad_link_graph_setting_stops_the_crawl_at_start(tmp_path: Path) -> None:
    settings = {"TIANWANG_PROXY": "http://127.0.0.1:9", "TIANWANG_DATA_DIR": str(tmp_path / "d"),
                "TIANWANG_LINK_GRAPH": "sometimes"}
    result = scrapy_crawl("site", {"seeds": "www.example.com"}, settings, cwd=tmp_path, timeout=120)
    assert result.returncode != 0
    assert "TIANWANG_LINK_GRAPH" in result.stderr.strip().splitlines()[-1]
