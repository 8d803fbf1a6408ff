"""Crawls of the protocol hosts (`testweb serve --protocols`), sitemaps on and off.

Each crawl has its own test web: some of its answers change after the first request (a 429
the first time, a robots.txt that fails once), so a second crawl must meet them fresh.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from tests.conftest import scrapy_crawl
from tests.filters_crawl import final_stats
from tests.spec_reader import read_records
from tests.truth import load_truth
from tianwang.testweb.launcher import TestWebProcess, write_seeds

SEED, HOSTS = 3, 1  # the one synthetic host is not crawled: only the protocol hosts
# Small bounds, so the sitemap bomb shows them: the bomb host lists far more than these.
SITEMAP_MAX_URLS, SITEMAP_MAX_FILES, SITEMAP_MAX_DEPTH = 20, 8, 2
MAX_PAGE_BYTES = 2 * 1024 * 1024
ROBOTS_RETRY_DELAY, ROBOTS_RETRIES = 1, 2
ROBOTS_TTL = 3
SETTINGS = {
    # One connection per host, the project's own default (tests otherwise use 4): so a
    # request "after" a 429 in the access log was also sent after it.
    "CONCURRENT_REQUESTS_PER_DOMAIN": "1",
    "TIANWANG_MAX_LEVELS": "0",
    "TIANWANG_SITEMAP_MAX_URLS": str(SITEMAP_MAX_URLS),
    "TIANWANG_SITEMAP_MAX_FILES": str(SITEMAP_MAX_FILES),
    "TIANWANG_SITEMAP_MAX_DEPTH": str(SITEMAP_MAX_DEPTH),
    "TIANWANG_MAX_PAGE_BYTES": str(MAX_PAGE_BYTES),
    "TIANWANG_ROBOTS_RETRY_DELAY": str(ROBOTS_RETRY_DELAY),
    "TIANWANG_ROBOTS_RETRIES": str(ROBOTS_RETRIES),
}


@dataclass
class Crawl:
    log: list[dict]  # the server's access log lines of this crawl
    stored: dict[str, bytes]  # url -> the stored record's DATA
    stats: dict  # the crawl's final stats (from its log)
    stderr: str
    data: Path

    def requests(self, host: str) -> list[dict]:
        """The access log lines of one host, in time order."""
        prefix = f"http://{host}/"
        return sorted((line for line in self.log if line["url"].startswith(prefix)),
                      key=lambda line: line["time"])


@dataclass
class ProtocolCrawls:
    truth: dict[str, dict]  # the protocol hosts' urls only
    on: Crawl  # TIANWANG_SITEMAPS on
    off: Crawl  # off (the default)


def run_protocols_crawls(workdir: Path) -> ProtocolCrawls:
    truth = {url: page for url, page in load_truth(SEED, HOSTS, None, "--protocols").items()
             if page["kind"] == "protocols"}
    from tianwang.testweb.protocols import ProtocolWeb

    seeds = write_seeds(workdir / "seeds.txt", ProtocolWeb().homepages())
    # The "on" crawl also keeps robots.txt only ROBOTS_TTL seconds: the Crawl-delay host,
    # crawled for longer than that, has its robots.txt fetched again.
    on = _crawl(workdir / "on", seeds, {**SETTINGS, "TIANWANG_SITEMAPS": "True",
                                        "TIANWANG_ROBOTS_TTL": str(ROBOTS_TTL)})
    off = _crawl(workdir / "off", seeds, SETTINGS)
    return ProtocolCrawls(truth, on, off)


def _crawl(workdir: Path, seeds: Path, settings: dict[str, str]) -> Crawl:
    workdir.mkdir()
    log_path, data = workdir / "access.jsonl", workdir / "data"
    with TestWebProcess(SEED, HOSTS, access_log=log_path, extra_args=("--protocols",)) as web:
        settings = {**settings, "TIANWANG_PROXY": web.address, "TIANWANG_DATA_DIR": str(data)}
        result = scrapy_crawl("site", {"seeds": str(seeds)}, settings, cwd=workdir, timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    log = [json.loads(line) for line in log_path.read_text(encoding="utf-8").splitlines()]
    stored = {}
    for path in sorted(data.glob("data_*/*/page.dat")):
        for record in read_records(path.read_bytes()):
            stored[record["header"]["url"]] = record["data"]
    return Crawl(log, stored, final_stats(result.stderr), result.stderr, data)
