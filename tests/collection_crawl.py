"""The crawl the collection steps' tests share (issue 9): a small test web with mirrors,
crawled with the `site` spider's defaults (breadth first, 3 levels, in-host, text/html and
text/plain), then globally deduped with `tianwang dedup`, and what the truth says it holds.

The crawl stores every copy (TIANWANG_DEDUP off) and leaves dedup to the global pass, as
CWT200g's crawler did: the online dedup keeps whichever copy it met first, which depends on
the crawl's timing, while the global pass keeps the shortest url, which the truth knows.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from tests.conftest import scrapy_crawl, tianwang_cli
from tests.truth import host_of, load_truth, reach
from tianwang.testweb.launcher import TestWebProcess, write_seeds

# 80 hosts of at most 200 pages: 1,615 pages after dedup, sites of 37 distinct sizes (a
# full group of 20 and a short one of 17), crawled in about 15 s.
SEED, HOSTS, MAX_PAGES = 4, 80, 200


@dataclass
class CollectionCrawl:
    truth: dict[str, dict]
    data: Path  # the crawl's record tree
    dedup: Path  # `tianwang dedup` of it
    expected: dict[str, dict]  # url -> truth page, of every page the dedup must hold


def run_collection_crawl(workdir: Path) -> CollectionCrawl:
    truth = load_truth(SEED, HOSTS, MAX_PAGES, "--mirrors")
    seeds = [url for url, page in truth.items() if page["kind"] == "home"]
    seed_file = write_seeds(workdir / "seeds.txt", seeds)
    with TestWebProcess(SEED, HOSTS, max_pages=MAX_PAGES, extra_args=("--mirrors",)) as web:
        settings = {"TIANWANG_PROXY": web.address, "TIANWANG_DATA_DIR": str(workdir / "data"),
                    "TIANWANG_DEDUP": "False"}
        result = scrapy_crawl("site", {"seeds": str(seed_file)}, settings, cwd=workdir)
    assert result.returncode == 0, result.stderr[-3000:]
    run = tianwang_cli("dedup", str(workdir / "data"), "--out", str(workdir / "dedup"))
    assert run.returncode == 0, run.stderr
    return CollectionCrawl(truth, workdir / "data", workdir / "dedup", deduped(truth, seeds))


def deduped(truth: dict[str, dict], seeds: list[str]) -> dict[str, dict]:
    """The pages a correct crawl from seeds stores, one per body: the shortest url, then the
    first in code point order (seed 004 section 3.5's two kinds of duplicate keep the plain
    url)."""
    bodies: defaultdict[str, list[str]] = defaultdict(list)
    for url in reach(truth, seeds).stored(truth):
        bodies[truth[url]["md5"]].append(url)
    kept = (min(urls, key=lambda url: (len(url), url)) for urls in bodies.values())
    return {url: truth[url] for url in kept}


def site_sizes(pages: dict[str, dict]) -> dict[str, int]:
    """host -> its number of pages."""
    sizes: defaultdict[str, int] = defaultdict(int)
    for url in pages:
        sizes[host_of(url)] += 1
    return dict(sizes)
