"""Two crawls of one junk-enabled test web: the filters on (the project's settings) and off.

Both seed every homepage, normal and junk, and follow links across hosts, so every class of
junk is asked for at least once. The filters-off crawl shows that the junk is reachable and
served; the filters-on crawl is checked against it and against the truth.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from tests.conftest import scrapy_crawl, tianwang_cli
from tests.spec_reader import read_records
from tests.truth import load_truth
from tianwang.testweb.launcher import TestWebProcess, write_seeds

JUNK_SEED, JUNK_HOSTS, JUNK_MAX_PAGES = 7, 20, 30
# The filters off: DOWNLOADER_MIDDLEWARES as the project has it, less the two filters.
FILTERS_OFF = json.dumps({"tianwang.middlewares.proxy.ProxyMiddleware": 740})


@dataclass
class Crawl:
    log: list[dict]  # the server's access log lines of this crawl
    stored: dict[str, bytes]  # url -> the stored record's DATA
    stats: dict  # the crawl's final stats (from its log)
    stderr: str


@dataclass
class JunkCrawls:
    truth: dict[str, dict]
    spam_list: Path
    on: Crawl
    off: Crawl


def run_junk_crawls(workdir: Path) -> JunkCrawls:
    truth = load_truth(JUNK_SEED, JUNK_HOSTS, JUNK_MAX_PAGES, "--junk")
    spam = tianwang_cli("testweb", "spamlist").stdout
    spam_list = workdir / "spam.txt"
    spam_list.write_text(spam, encoding="utf-8")
    seeds = [url for url, page in truth.items() if page["kind"] in ("home", "junk-home")]
    seeds_file = write_seeds(workdir / "seeds.txt", seeds)
    # No level limit: what is stored then does not hang on the frontier's order.
    settings = {"TIANWANG_STAY_IN_HOST": "False", "TIANWANG_MAX_LEVELS": "0",
                "TIANWANG_SPAM_LIST": str(spam_list)}
    on = _crawl(workdir / "on", seeds_file, settings)
    off = _crawl(workdir / "off", seeds_file, {**settings, "DOWNLOADER_MIDDLEWARES": FILTERS_OFF})
    return JunkCrawls(truth, spam_list, on, off)


def _crawl(workdir: Path, seeds: Path, settings: dict[str, str]) -> Crawl:
    """One crawl through its own server, whose log is read once it has stopped (a streamed
    body's line is written when its connection ends, which may be after the crawl's exit)."""
    workdir.mkdir()
    log_path, data = workdir / "access.jsonl", workdir / "data"
    with TestWebProcess(JUNK_SEED, JUNK_HOSTS, JUNK_MAX_PAGES, access_log=log_path,
                        extra_args=("--junk",)) as web:
        settings = {**settings, "TIANWANG_PROXY": web.address, "TIANWANG_DATA_DIR": str(data)}
        result = scrapy_crawl("site", {"seeds": str(seeds)}, settings, cwd=workdir)
    assert result.returncode == 0, result.stderr[-3000:]
    log = [json.loads(line) for line in log_path.read_text(encoding="utf-8").splitlines()]
    stored = {}
    for path in sorted(data.glob("data_*/*/page.dat")):
        for record in read_records(path.read_bytes()):
            stored[record["header"]["url"]] = record["data"]
    return Crawl(log, stored, final_stats(result.stderr), result.stderr)


def final_stats(stderr: str) -> dict:
    """The stats Scrapy dumps at the end of a crawl, as a dict (counters only)."""
    stats = {}
    block = stderr.split("Dumping Scrapy stats:", 1)[-1]
    for line in block.splitlines():
        line = line.strip(" {},")
        if line.startswith("'") and "': " in line:
            key, value = line[1:].split("': ", 1)
            if value.isdigit():
                stats[key] = int(value)
    return stats
