"""The per-host figures of the stats file: bounded, keeping the hosts the report lists (unit;
the report's plots of a real crawl are in test_cli_report.py)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from scrapy import Request

from tianwang.extensions.statsfile import StatsFile


class Stats(Counter):
    def inc_value(self, key: str, count: int = 1) -> None:
        self[key] += count


def _response(extension: StatsFile, host: str, latency: float) -> None:
    extension.response(None, Request(f"http://{host}/", meta={"download_latency": latency}))


def test_the_hosts_kept_are_bounded_and_the_slowest_and_most_refused_stay(
        tmp_path: Path) -> None:
    stats = Stats()
    extension = StatsFile(stats, tmp_path, host_limit=40)
    _response(extension, "slow.example", 9.0)
    for _ in range(5):
        extension.refused(Request("http://refused.example/"), "robots")
    for n in range(1000):
        _response(extension, f"h{n}.example", 0.1 + n % 7 / 100)
        assert len(extension.hosts) <= 40
    assert extension.hosts["slow.example"] == [1, 9.0, 0]
    assert extension.hosts["refused.example"] == [0, 0.0, 5]
    assert stats["tianwang/hosts_dropped"] == 1002 - len(extension.hosts)


def test_a_host_met_again_adds_to_its_figures(tmp_path: Path) -> None:
    extension = StatsFile(Stats(), tmp_path)
    _response(extension, "a.example", 0.5)
    _response(extension, "a.example", 1.5)
    extension.refused(Request("http://a.example/x"), "robots")
    assert extension.hosts == {"a.example": [2, 2.0, 1]}
