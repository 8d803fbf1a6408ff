"""The garbage collector's thresholds while a crawl runs (unit), and a real crawl's
collections with them and with Python's own (the same pages stored, far fewer pauses)."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest
from scrapy.statscollectors import MemoryStatsCollector
from scrapy.utils.test import get_crawler

from tests.conftest import TestWeb, scrapy_crawl, stats_of
from tianwang.config import SettingError
from tianwang.extensions.garbage import GarbageCollection, thresholds
from tianwang.formats.store import iter_tree


@pytest.mark.parametrize(("values", "wanted"), [
    ([50000, 10, 10], (50000, 10, 10)), (["20000"], (20000,)), (["700", "10"], (700, 10))])
def test_the_setting_reads_as_gc_set_threshold_takes_it(values: list, wanted: tuple) -> None:
    assert thresholds(values) == wanted


@pytest.mark.parametrize("values", [["0"], ["a"], ["-1"], ["1", "2", "3", "4"], []])
def test_a_threshold_gc_cannot_take_or_that_turns_collection_off_is_refused(
        values: list) -> None:
    with pytest.raises(SettingError, match="TIANWANG_GC_THRESHOLD"):
        thresholds(values)


@pytest.mark.parametrize(("value", "wanted"), [
    ((50000, 10, 10), (50000, 10, 10)), ("20000,5", (20000, 5)), (30000, (30000,))])
def test_the_setting_as_a_project_or_the_command_line_writes_it(value: object,
                                                               wanted: tuple) -> None:
    crawler = get_crawler(settings_dict={"TIANWANG_GC_THRESHOLD": value})
    assert GarbageCollection.from_crawler(crawler).wanted == wanted


def test_the_thresholds_are_set_while_the_crawl_runs_and_put_back() -> None:
    before = gc.get_threshold()
    stats = MemoryStatsCollector(get_crawler())
    extension = GarbageCollection((12345, 7, 3), stats)
    extension.engine_started()
    try:
        assert gc.get_threshold() == (12345, 7, 3)
        gc.collect(0)
    finally:
        extension.engine_stopped()
    assert gc.get_threshold() == before
    assert extension.collected not in gc.callbacks
    assert stats.get_value("gc/collections/0") >= 1
    assert stats.get_value("gc/longest_pause_ms") >= 0


def _crawl(testweb: TestWeb, tmp_path: Path, threshold: str) -> tuple[dict[str, int], int]:
    homes = sorted(url for url, page in testweb.truth.items() if page["kind"] == "home")[:12]
    data = tmp_path / threshold / "data"
    result = scrapy_crawl("site", {"seeds": ",".join(homes)},
                          {"TIANWANG_DATA_DIR": str(data), "TIANWANG_PROXY": testweb.address,
                           "TIANWANG_GC_THRESHOLD": threshold, "DOWNLOAD_DELAY": "0"},
                          cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    counts = {int(name.rsplit("/", 1)[1]): count for name, count
              in stats_of(result.stderr).items() if name.startswith("gc/collections/")}
    return counts, sum(1 for _ in iter_tree(data))


def test_a_crawl_collects_far_less_often_and_stores_the_same_pages(
        testweb: TestWeb, tmp_path: Path) -> None:
    paced, stored = _crawl(testweb, tmp_path, "50000,10,10")
    pythons, stored_by_pythons = _crawl(testweb, tmp_path, "700,10,10")  # Python's own
    assert stored == stored_by_pythons > 100
    # The counts follow allocations, not time: about 100 collections with Python's own
    # thresholds on this crawl, 1 or 2 with the stack's.
    assert sum(pythons.values()) >= 30  # the ablation collects: the counts are real
    assert sum(paced.values()) * 10 <= sum(pythons.values())
