"""One crawl of the test web's hostile hosts (bombs, fake text, bad redirects, traps), with
the project's settings but a small page budget per host, and what a user sees of it."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from tests.conftest import crawl_command
from tests.fetchlog import fetch_log_settings, read_fetch_log
from tests.filters_crawl import final_stats
from tests.process_usage import run_measured
from tests.spec_reader import read_records
from tests.truth import load_truth
from tianwang.testweb.junk import HOSTILE_HOSTS
from tianwang.testweb.launcher import TestWebProcess, write_seeds

SEED, HOSTS, PAGES = 5, 2, 10
HOST_PAGES = 40  # TIANWANG_MAX_HOST_PAGES of this crawl: the calendar trap's bound


@dataclass
class HostileCrawl:
    truth: dict[str, dict]
    log: list[dict]  # the server's access log lines
    sent: list[str]  # the urls the crawl sent, in order (its FetchLog)
    stored: dict[str, bytes]  # url -> stored DATA (HTTP response)
    stats: dict
    stderr: str
    max_rss_kb: int  # peak RSS of the crawl process


def run_crawl(workdir: Path, seeds: list[str], settings: dict[str, str],
              web_args: tuple[str, ...] = ("--junk",)) -> HostileCrawl:
    workdir.mkdir(parents=True, exist_ok=True)
    log_path, data = workdir / "access.jsonl", workdir / "data"
    seeds_file = write_seeds(workdir / "seeds.txt", seeds)
    with TestWebProcess(SEED, HOSTS, PAGES, access_log=log_path, extra_args=web_args) as web:
        settings = {"TIANWANG_PROXY": web.address, "TIANWANG_DATA_DIR": str(data),
                    **fetch_log_settings(workdir / "sent.txt"), **settings}
        stderr, rss = crawl_with_rss(workdir, {"seeds": str(seeds_file)}, settings)
    log = [json.loads(line) for line in log_path.read_text(encoding="utf-8").splitlines()]
    stored = {}
    for path in sorted(data.glob("data_*/*/page.dat")):
        for record in read_records(path.read_bytes()):
            stored[record["header"]["url"]] = record["data"]
    truth = load_truth(SEED, HOSTS, PAGES, "--junk")
    sent = read_fetch_log(workdir / "sent.txt")
    return HostileCrawl(truth, log, sent, stored, final_stats(stderr), stderr, rss)


def crawl_with_rss(workdir: Path, args: dict[str, str], settings: dict[str, str],
                   timeout: float = 300) -> tuple[str, int]:
    """Run `scrapy crawl site`; its stderr and its own peak RSS (KB)."""
    command, env = crawl_command("site", args, settings)
    err_path = workdir / "crawl.err"
    with open(err_path, "wb") as err:
        usage = run_measured(command, workdir, env, err, timeout)
    stderr = err_path.read_text(encoding="utf-8", errors="replace")
    assert usage.returncode == 0, stderr[-3000:]
    return stderr, usage.max_rss_kb


def run_hostile_crawl(workdir: Path) -> HostileCrawl:
    seeds = [f"http://{host}/" for host in HOSTILE_HOSTS]
    settings = {"TIANWANG_MAX_LEVELS": "0", "TIANWANG_MAX_HOST_PAGES": str(HOST_PAGES)}
    return run_crawl(workdir, seeds, settings)
