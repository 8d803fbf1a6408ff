"""The stats collector: Scrapy's methods and results, no shim (unit), and a crawl's stats."""

from __future__ import annotations

from pathlib import Path

from scrapy.utils.test import get_crawler

from tests.conftest import TestWeb, scrapy_crawl
from tianwang.analysis.crawlreport import read_report
from tianwang.statscollector import StatsCollector


def test_it_counts_as_scrapys_collector_does() -> None:
    stats = StatsCollector(get_crawler())
    stats.inc_value("a")
    stats.inc_value("a", 2)
    stats.inc_value("b", start=10)
    stats.max_value("m", 3)
    stats.max_value("m", 1)
    stats.min_value("n", 3)
    stats.min_value("n", 1)
    stats.set_value("s", "x")
    assert stats.get_stats() == {"a": 3, "b": 11, "m": 3, "n": 1, "s": "x"}
    assert stats.get_value("a") == 3
    assert stats.get_value("missing", 7) == 7
    stats.clear_stats()
    assert stats.get_stats() == {}


def test_its_methods_are_scrapys_without_the_wrapper() -> None:
    stats = StatsCollector(get_crawler())
    assert stats.inc_value.__func__ is StatsCollector.inc_value
    assert "_cached_inc_value" not in vars(stats)


def test_a_crawl_keeps_its_stats_with_it(testweb: TestWeb, tmp_path: Path) -> None:
    homes = sorted(url for url, page in testweb.truth.items() if page["kind"] == "home")[:3]
    data = tmp_path / "data"
    result = scrapy_crawl("site", {"seeds": ",".join(homes)},
                          {"TIANWANG_DATA_DIR": str(data), "TIANWANG_PROXY": testweb.address,
                           "TIANWANG_MAX_LEVELS": "2", "DOWNLOAD_DELAY": "0"},
                          cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "'response_received_count':" in result.stderr  # Scrapy's stats dump
    report = read_report(data)
    assert report.stats_files == 1
    assert sum(report.fetched_statuses.values()) >= report.pages > 3  # the stats file, the records
    assert sum(report.host_responses.values()) >= report.pages
