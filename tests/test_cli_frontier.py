"""`tianwang frontier`: a JOBDIR's and a Redis job's pending requests, by weight and host."""

from __future__ import annotations

import re
from pathlib import Path

from scrapy import Request, Spider

from tests.aio import aio
from tests.conftest import TestWeb, scrapy_crawl, tianwang_cli
from tests.filters_crawl import final_stats
from tests.test_distributed_redisfrontier import node, push_of
from tests.truth import host_of
from tianwang.frontier.requestlog import RequestLog
from tianwang.frontier.scheduler import STATE_DIR


def test_a_stopped_jobdir_shows_what_the_frontier_still_holds(testweb: TestWeb,
                                                              tmp_path: Path) -> None:
    homes = sorted(url for url, page in testweb.truth.items() if page["kind"] == "home")[:3]
    result = scrapy_crawl("site", {"seeds": ",".join(homes)},
                          {"TIANWANG_DATA_DIR": str(tmp_path / "data"),
                           "JOBDIR": str(tmp_path / "job"),
                           "TIANWANG_PROXY": testweb.address, "CLOSESPIDER_PAGECOUNT": "6",
                           "CONCURRENT_REQUESTS": "1"}, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    stats = final_stats(result.stderr)
    shown = tianwang_cli("frontier", str(tmp_path / "job"))
    assert shown.returncode == 0, shown.stderr
    head = shown.stdout.splitlines()[0]
    pending = int(re.search(r": ([\d,]+) pending of", head).group(1).replace(",", ""))
    # The log on disk says what the queue in memory counted at close.
    assert pending == stats["tianwang/frontier/pending"] > 0
    weights = re.findall(r"^  w(-?\d+)\t([\d,]+)$", shown.stdout, re.M)
    assert sum(int(n.replace(",", "")) for _w, n in weights) == pending
    listed = shown.stdout.split("largest hosts")[1]
    hosts = re.findall(r"^  (\S+)\t", listed, re.M)
    assert hosts and {h.split(":")[0] for h in hosts} <= {host_of(url) for url in homes}


def test_a_compacted_jobdir_shows_only_what_is_pending(tmp_path: Path) -> None:
    log = RequestLog(tmp_path / "job" / STATE_DIR, Spider("unit"), compact_after=0)
    log.open(lambda entry: None)
    items = [log.put(Request(f"http://h{i % 3}.example.com/{i}"), 5 + i % 2,
                     f"h{i % 3}.example.com", None) for i in range(40)]
    log.done(items[:35])
    assert log.needs_compaction
    log.compact()
    log.done(items[35:37])  # after the compaction, in done.log
    log.close()
    shown = tianwang_cli("frontier", str(tmp_path / "job"))
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.splitlines()[0].endswith(": 3 pending of 5 logged")
    assert re.findall(r"^  w(\d+)\t(\d+)$", shown.stdout, re.M) == [("6", "2"), ("5", "1")]


@aio
async def test_a_redis_job_shows_its_queues_by_weight(redis_server) -> None:
    frontier = node(redis_server, "inspect", "a")
    await frontier.heartbeat(30)
    await frontier.push([push_of("http://h1.example.com/", 9),
                         push_of("http://h2.example.com/a", 9),
                         push_of("http://h3.example.com/a/b", 7, priority=3)])
    shown = tianwang_cli("frontier", "--redis", redis_server.url, "--job", "inspect")
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert lines[0] == "job inspect: 3 pending, 0 urls in the feed; by node: a 3, (unowned) 0"
    assert lines[1:4] == ["by weight:", "  w9\t2", "  w7\t1"]


@aio
async def test_a_redis_job_counts_the_requests_packed_past_its_window(redis_server) -> None:
    frontier = node(redis_server, "packed", "a")
    await frontier.heartbeat(30)
    await frontier.push([push_of(f"http://h{i}.example.com/", 9 - i % 2) for i in range(10)])
    assert (await frontier.window(4)).packed == 7  # down to 3/4 of the window: 3 queued
    shown = tianwang_cli("frontier", "--redis", redis_server.url, "--job", "packed")
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert lines[0] == ("job packed: 10 pending, 0 urls in the feed; by node: a 10 (7 packed), "
                        "(unowned) 0")
    assert lines[1].startswith("(packed requests")
    assert lines[2:4] == ["by weight:", "  w9\t3"]
