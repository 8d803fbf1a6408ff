"""The progress line: its figures from the stats (unit), and in a real crawl's log."""

from __future__ import annotations

import re
from pathlib import Path

from tests.conftest import TestWeb, scrapy_crawl
from tianwang.extensions.progress import ProgressLog


def test_the_line_says_stored_rate_pending_by_weight_refused_and_failed() -> None:
    progress = ProgressLog(stats=None, interval=10)
    progress.last = (100, 50.0)
    stats = {"tianwang/storage/records": 300, "response_received_count": 320,
             "tianwang/frontier/pending": 1212, "tianwang/frontier/pending/w3": 1200,
             "tianwang/frontier/pending/w5": 12, "tianwang/frontier/pending/w4": 0,
             "tianwang/filter/type": 4, "tianwang/filter/type_bytes": 9000,
             "robotstxt/forbidden": 2, "tianwang/error/timeout": 3}
    assert progress.line(stats, now=60.0) == (
        "stored 300 pages (20.0/s), fetched 320, pending 1,212 (w5 12, w3 1,200), "
        "refused 6, failed 3")
    assert progress.last == (300, 60.0)


def test_a_crawl_logs_progress_lines(testweb: TestWeb, tmp_path: Path) -> None:
    homes = sorted(url for url, page in testweb.truth.items() if page["kind"] == "home")[:8]
    result = scrapy_crawl("site", {"seeds": ",".join(homes)},
                          {"TIANWANG_DATA_DIR": str(tmp_path / "data"),
                           "TIANWANG_PROXY": testweb.address, "TIANWANG_PROGRESS_INTERVAL": "0.5",
                           "CONCURRENT_REQUESTS_PER_DOMAIN": "1", "DOWNLOAD_DELAY": "0.1"},
                          cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    lines = re.findall(r"progress: stored ([\d,]+) pages \([\d.]+/s\), fetched ([\d,]+), "
                       r"pending ([\d,]+)", result.stderr)
    assert len(lines) >= 2, result.stderr[-3000:]
    stored = [int(s.replace(",", "")) for s, _, _ in lines]
    assert stored == sorted(stored)  # never goes back
    assert any(int(p.replace(",", "")) > 0 for _, _, p in lines)  # the frontier had a queue
