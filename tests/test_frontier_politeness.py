"""When each host may be sent a request (tianwang/frontier/politeness.py): the rules alone,
then real crawls whose hosts must wait (robots.txt unavailable behind a proxy that refuses
CONNECT), read from the server's access log."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

from tests.conftest import scrapy_crawl
from tests.filters_crawl import final_stats
from tests.truth import load_truth, reach
from tianwang.config.frontier import HostRules
from tianwang.frontier.politeness import Politeness
from tianwang.testweb.launcher import TestWebProcess, write_seeds
from tianwang.testweb.model import SyntheticWeb


def politeness(delay: float = 1.0, concurrency: int = 1, jitter: float = 0.0,
               slots: dict | None = None) -> Politeness:
    return Politeness.from_slots(HostRules(concurrency, delay, jitter), slots or {},
                                 random.Random(1))


def test_a_new_host_is_ready_at_once_and_waits_its_delay_from_each_start() -> None:
    rules = politeness(delay=1.0)
    assert rules.ready_at("a") == 0.0
    rules.handed("a")
    assert rules.ready_at("a") == math.inf  # its one connection is taken
    rules.started("a", 10.0)
    rules.ended("a", 10.4)
    assert rules.ready_at("a") == 11.0  # 1 s from the start, as Scrapy's DOWNLOAD_DELAY
    assert rules.ready_at("b") == 0.0  # another host owes nothing


def test_a_request_refused_before_it_reached_the_host_costs_no_delay() -> None:
    rules = politeness(delay=5.0)
    rules.handed("a")
    rules.ended("a", 3.0, reached=False)
    assert rules.ready_at("a") == 0.0


def test_concurrency_and_download_slots_are_per_host() -> None:
    rules = politeness(delay=0.0, concurrency=2, slots={"big": {"concurrency": 4, "delay": 2}})
    for _ in range(2):
        rules.handed("a")
    assert rules.ready_at("a") == math.inf
    for _ in range(3):
        rules.handed("big")
        rules.started("big", 1.0)
    assert rules.ready_at("big") == 3.0  # its own delay, one more connection free


def test_jitter_draws_the_delay_around_its_value_as_scrapy_does() -> None:
    rules = politeness(delay=1.0, jitter=0.5)
    starts = []
    for start in range(200):
        rules.started("a", float(start * 10))
        starts.append(rules.ready_at("a") - start * 10)
    assert 0.5 <= min(starts) < 0.6 and 1.4 < max(starts) <= 1.5


def test_a_crawl_delay_counts_from_the_end_of_each_answer_one_at_a_time() -> None:
    rules = politeness(delay=0.0, concurrency=4)
    rules.set_crawl_delay("a", 3.0, now=0.0)
    assert rules.ready_at("a") == 3.0  # from the robots.txt answer that gave it
    rules.handed("a")
    rules.started("a", 3.0)
    assert rules.ready_at("a") == math.inf  # one at a time
    rules.ended("a", 7.5)
    assert rules.ready_at("a") == 10.5
    rules.set_crawl_delay("a", None, now=11.0)  # read again without one: the host's rules
    rules.handed("a")
    assert rules.ready_at("a") == 10.5  # a second connection is free again


def test_waits_of_each_reason_replace_their_own_and_add_up() -> None:
    rules = politeness(delay=0.0)
    rules.wait("a", math.inf, "robots")  # its robots.txt is being fetched
    rules.wait("a", 30.0, "retry_after")
    assert rules.ready_at("a") == math.inf
    rules.wait("a", 60.0, "robots")  # unavailable: asked again at 60
    assert rules.ready_at("a") == 60.0
    rules.go("a", "robots")  # read at last
    assert rules.ready_at("a") == 30.0


def test_hosts_with_nothing_to_remember_are_forgotten() -> None:
    rules = politeness(delay=1.0)
    for host in ("idle", "busy", "waiting", "slow"):
        rules.handed(host)
        rules.started(host, 0.0)
    for host in ("idle", "waiting", "slow"):
        rules.ended(host, 0.5)
    rules.wait("waiting", 100.0, "retry_after")
    rules.set_crawl_delay("slow", 5.0, now=0.5)
    assert rules.forget_idle(now=2.0) == 1
    assert set(rules.hosts) == {"busy", "waiting", "slow"}


# --- robots.txt unavailable: its hosts wait in the frontier, the others go on ---

SEED, HOSTS, PAGES = 4, 400, 12


def test_hosts_whose_robots_txt_is_unavailable_hold_no_connection_of_the_crawl(
        tmp_path: Path) -> None:
    """Forty hosts are asked for over https through a proxy that refuses them CONNECT: their
    robots.txt is unavailable, and their requests must wait (RFC 9309) for a minute. With
    the crawl's 16 connections, the pages of thirty hosts over http go on all the while: no
    second of the crawl without a request sent."""
    web = SyntheticWeb(SEED, HOSTS, PAGES, https=True)
    http_hosts = [host for host in web.hosts if web.https.kinds[host] == "http"]
    assert len(http_hosts) >= 70
    refused, served = http_hosts[:40], http_hosts[40:70]
    seeds = [f"https://{host}/{page}.html" for host in refused for page in ("a", "b", "c")]
    seeds += [f"http://{host}/" for host in served]
    log = tmp_path / "access.jsonl"
    with TestWebProcess(SEED, HOSTS, PAGES, access_log=log, extra_args=("--https",)) as proxy:
        result = scrapy_crawl(
            "site", {"seeds": str(write_seeds(tmp_path / "seeds.txt", seeds))},
            {"TIANWANG_PROXY": proxy.address, "TIANWANG_DATA_DIR": str(tmp_path / "data"),
             "DOWNLOAD_DELAY": "0.5", "CONCURRENT_REQUESTS": "16",
             "CONCURRENT_REQUESTS_PER_DOMAIN": "1", "CLOSESPIDER_TIMEOUT": "20"},
            cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    stats = final_stats(result.stderr)
    assert stats["tianwang/robots/unavailable"] >= 40
    # Every page of the http hosts a correct crawl stores (the truth's), within the time
    # (a crawl whose connections waited for the refused hosts got their homepages only) ...
    truth = load_truth(SEED, HOSTS, PAGES, "--https")
    wanted = reach(truth, [f"http://{host}/" for host in served]).stored(truth)
    lines = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    pages = [line for line in lines if line["url"] in wanted]
    assert {line["url"] for line in pages} == wanted
    # ... and not a stretch of 2 s without a request sent while they were fetched.
    start, end = min(line["time"] for line in pages), max(line["time"] for line in pages)
    times = sorted(line["time"] for line in lines if start <= line["time"] <= end)
    assert max(b - a for a, b in zip(times, times[1:], strict=False)) < 2.0
