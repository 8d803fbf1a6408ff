"""Crawls of the protocol hosts (`testweb serve --protocols`), sitemaps on and off.

Each crawl has its own test web: some of its answers change after the first request (a 429
the first time, a robots.txt that fails once), so a second crawl must meet them fresh.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

from tests import filters_crawl
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
ROBOTS_TTL = 2
MAX_CRAWL_DELAY = 0.5
CENTURY = 100 * 365 * 86400
REFRESH_NOW = 4_083_000_000  # 2099-05-20, after the later lastmod of the test web's sitemap
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
class Crawl(filters_crawl.Crawl):
    """A crawl as the filter tests read it, and where its records are."""

    data: Path

    def requests(self, host: str) -> list[dict]:
        """The access log lines of one host, in time order."""
        prefix = f"http://{host}/"
        return sorted((line for line in self.log if line["url"].startswith(prefix)),
                      key=lambda line: line["time"])


@dataclass
class ProtocolCrawls:
    truth: dict[str, dict]  # the protocol hosts' urls only
    on: Crawl  # TIANWANG_SITEMAPS on (and TIANWANG_CHANGES: sitemap lastmods recorded)
    off: Crawl  # off (the default)
    refresh: Crawl  # the refresh spider on a copy of on's data, at REFRESH_NOW


def run_protocols_crawls(workdir: Path) -> ProtocolCrawls:
    truth = {url: page for url, page in load_truth(SEED, HOSTS, None, "--protocols").items()
             if page["kind"] == "protocols"}
    from tianwang.testweb.protocols import ProtocolWeb

    seeds = write_seeds(workdir / "seeds.txt", ProtocolWeb().homepages())
    # The "on" crawl also keeps robots.txt only ROBOTS_TTL seconds: the Crawl-delay host,
    # crawled for longer than that, has its robots.txt fetched again.
    # And it caps Crawl-delay at MAX_CRAWL_DELAY, below the host's.
    on = _crawl(workdir / "on", seeds, {**SETTINGS, "TIANWANG_SITEMAPS": "True",
                                        "TIANWANG_ROBOTS_TTL": str(ROBOTS_TTL),
                                        "TIANWANG_MAX_CRAWL_DELAY": str(MAX_CRAWL_DELAY),
                                        "TIANWANG_CHANGES": "True"})
    off = _crawl(workdir / "off", seeds, SETTINGS)
    shutil.copytree(on.data, workdir / "refresh-data")
    # No url is due by its change rate (a revisit interval of a century): only what a
    # sitemap says changed since the crawl.
    refresh = _crawl(workdir / "refresh", seeds, {
        **SETTINGS, "TIANWANG_MIN_REVISIT": str(CENTURY), "TIANWANG_MAX_REVISIT": str(CENTURY),
    }, spider="refresh", args={"now": str(REFRESH_NOW)}, data=workdir / "refresh-data")
    return ProtocolCrawls(truth, on, off, refresh)


def _crawl(workdir: Path, seeds: Path, settings: dict[str, str], spider: str = "site",
           args: dict[str, str] | None = None, data: Path | None = None) -> Crawl:
    workdir.mkdir()
    log_path, data = workdir / "access.jsonl", data or workdir / "data"
    with TestWebProcess(SEED, HOSTS, access_log=log_path, extra_args=("--protocols",)) as web:
        settings = {**settings, "TIANWANG_PROXY": web.address, "TIANWANG_DATA_DIR": str(data)}
        args = args if args is not None else {"seeds": str(seeds)}
        result = scrapy_crawl(spider, args, settings, cwd=workdir, timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    log = [json.loads(line) for line in log_path.read_text(encoding="utf-8").splitlines()]
    stored = {}
    for path in sorted(data.glob("data_*/*/page.dat")):
        for record in read_records(path.read_bytes()):
            stored[record["header"]["url"]] = record["data"]
    return Crawl(log, stored, final_stats(result.stderr), result.stderr, data)
