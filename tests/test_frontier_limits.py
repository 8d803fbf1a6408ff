"""What the frontier may hold (tianwang/frontier/limits.py): each limit alone, then real crawls
of servers that would exhaust a crawl without them (`testweb serve --floods`)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.conftest import crawl_command
from tests.filters_crawl import final_stats
from tests.process_usage import run_measured
from tianwang.config.frontier import Limits
from tianwang.frontier.limits import FrontierLimits
from tianwang.testweb.floods import LINK_BOMB, LINK_FARM, REDIRECT_FARM
from tianwang.testweb.launcher import TestWebProcess


def fill(limits: FrontierLimits, hosts: list[str]) -> list[str | None]:
    """Offer one request of each host in turn; what each offer met."""
    said = []
    for host in hosts:
        reason = limits.refusal(host)
        if reason is None:
            limits.admitted(host)
        said.append(reason)
    return said


def test_no_limit_refuses_nothing() -> None:
    limits = FrontierLimits(Limits())
    assert fill(limits, ["a.example.com"] * 1000) == [None] * 1000


def test_the_whole_frontier_is_bounded_and_frees_as_requests_leave() -> None:
    limits = FrontierLimits(Limits(pending=3))
    assert fill(limits, ["a.com", "b.com", "c.com", "d.com"]) == [None, None, None, "pending"]
    limits.left("b.com")
    assert fill(limits, ["d.com"]) == [None]


def test_a_host_holds_at_most_its_pending_requests() -> None:
    limits = FrontierLimits(Limits(host_pending=2))
    assert fill(limits, ["a.com", "a.com", "a.com", "b.com"]) == [None, None, "host_pending", None]
    limits.left("a.com")
    assert fill(limits, ["a.com"]) == [None]


def test_a_registered_domain_has_at_most_its_hosts_and_keeps_them() -> None:
    limits = FrontierLimits(Limits(domain_hosts=2))
    hosts = ["h1.farm.com", "h2.farm.com", "h3.farm.com", "h1.farm.com", "www.other.com"]
    assert fill(limits, hosts) == [None, None, "domain_hosts", None, None]
    # The Public Suffix List decides what one owner is: each blog is its own domain.
    blogs = FrontierLimits(Limits(domain_hosts=1))
    assert fill(blogs, ["a.blogspot.com", "b.blogspot.com", "www.a.blogspot.com"]) == [
        None, None, "domain_hosts"]


def test_a_registered_domain_has_a_budget_over_the_crawl() -> None:
    limits = FrontierLimits(Limits(domain_pages=3))
    assert fill(limits, ["a.pku.edu.cn", "b.pku.edu.cn", "a.pku.edu.cn", "c.pku.edu.cn",
                         "www.tsinghua.edu.cn"]) == [None, None, None, "domain_pages", None]
    limits.left("a.pku.edu.cn")  # a budget, not a bound on what waits: leaving frees nothing
    assert fill(limits, ["a.pku.edu.cn"]) == ["domain_pages"]


# --- real crawls of the flood hosts ---


@pytest.fixture(scope="module")
def floods(tmp_path_factory: pytest.TempPathFactory):
    log = tmp_path_factory.mktemp("floods") / "access.jsonl"
    with TestWebProcess(1, 2, 10, access_log=log, extra_args=("--floods",)) as web:
        yield web.address, log


def crawl(tmp_path: Path, proxy: str, seeds: list[str], **settings: str) -> tuple[int, str, int]:
    """Run a crawl; (status, stderr, peak RSS in KB)."""
    settings = {"TIANWANG_PROXY": proxy, "TIANWANG_DATA_DIR": str(tmp_path / "data"),
                "TIANWANG_MAX_LEVELS": "0", **settings}
    command, env = crawl_command("site", {"seeds": ",".join(seeds)}, settings)
    with open(tmp_path / "crawl.log", "wb") as err:
        usage = run_measured(command, tmp_path, env, err)
    return usage.returncode, (tmp_path / "crawl.log").read_text(), usage.max_rss_kb


def fetched_hosts(log: Path, domain: str) -> set[str]:
    hosts = {urlsplit(json.loads(line)["url"]).hostname for line in log.read_text().splitlines()}
    return {host for host in hosts if host and host.endswith(domain)}


def test_link_bombs_and_host_farms_keep_the_crawl_under_1_gb_and_its_close_on_time(
        tmp_path: Path, floods) -> None:
    """Six hosts whose homepage holds 700,000 links, a farm of subdomains reached by
    redirects and one reached by links, with the defaults: under 1 GB, and closed at 20 s
    ends by 80 s."""
    proxy, log = floods
    bombs = [f"http://www{k}.{LINK_BOMB.removeprefix('www.')}/" for k in range(1, 7)]
    farms = [f"http://www.{REDIRECT_FARM}/", f"http://www.{LINK_FARM}/"]
    started = time.monotonic()
    status, stderr, rss_kb = crawl(tmp_path, proxy, bombs + farms, CLOSESPIDER_TIMEOUT="20",
                                   TIANWANG_STAY_IN_HOST="False")
    took = time.monotonic() - started
    assert status == 0, stderr[-3000:]
    assert "Traceback" not in stderr
    assert took < 80, f"closed after {took:.0f} s"
    assert rss_kb < 1024 * 1024, f"peak RSS {rss_kb / 1024:.0f} MB"
    stats = final_stats(stderr)
    assert stats["tianwang/links/pages_cut"] >= 1  # a bomb's links were cut at 6,000
    assert stats["tianwang/links/left_out"] >= 694_000
    assert len(fetched_hosts(log, REDIRECT_FARM)) <= 1000
    assert len(fetched_hosts(log, LINK_FARM)) <= 1000


def test_a_subdomain_farm_gets_its_hosts_and_no_more(tmp_path: Path, floods) -> None:
    proxy, log = floods
    before = fetched_hosts(log, REDIRECT_FARM)
    status, stderr, _rss = crawl(tmp_path, proxy, [f"http://www.{REDIRECT_FARM}/"],
                                 TIANWANG_MAX_DOMAIN_HOSTS="25")
    assert status == 0, stderr[-3000:]
    stats = final_stats(stderr)
    assert stats["tianwang/filter/domain_hosts"] > 0
    new = fetched_hosts(log, REDIRECT_FARM) - before
    assert 0 < len(new | (before & {f"www.{REDIRECT_FARM}"})) <= 25


def test_a_domain_gets_its_budget_of_pages(tmp_path: Path, floods) -> None:
    proxy, log = floods
    host = f"budget.{LINK_BOMB.removeprefix('www.')}"
    status, stderr, _rss = crawl(tmp_path, proxy, [f"http://{host}/"],
                                 TIANWANG_MAX_DOMAIN_PAGES="40")
    assert status == 0, stderr[-3000:]
    pages = [line for line in log.read_text().splitlines()
             if urlsplit(json.loads(line)["url"]).hostname == host
             and not json.loads(line)["url"].endswith("/robots.txt")]
    assert len(pages) == 40
    assert final_stats(stderr)["tianwang/filter/domain_pages"] > 0
