"""What a correct crawl must do, computed from the test web's ground truth alone.

Written from the issue's rules, not from the spider: seeds are level 1, a link adds a level,
a redirect keeps its source's level, robots.txt is obeyed, only 200 text pages are stored.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

STORED_TYPES = {"text/html", "text/plain"}
# Links Scrapy's IGNORED_EXTENSIONS would not fetch never matter here: none is a text page.


def load_truth(
    seed: int, hosts: int, max_pages: int | None = None, *extra: str
) -> dict[str, dict]:
    """The truth as the `tianwang testweb truth` command prints it, keyed by url."""
    command = [
        sys.executable,
        "-m",
        "tianwang.cli",
        "testweb",
        "truth",
        "--seed",
        str(seed),
        "--hosts",
        str(hosts),
    ]
    if max_pages is not None:
        command += ["--max-pages", str(max_pages)]
    command += extra  # e.g. "--mirrors"
    out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    pages = [json.loads(line) for line in out.splitlines() if line.strip()]
    return {page["url"]: page for page in pages}


def host_of(url: str) -> str:
    return (urlsplit(url).hostname or "").lower()


@dataclass
class Reach:
    levels: dict[str, int]  # every url a correct crawl requests (robots.txt aside), its level

    def stored(self, truth: dict[str, dict]) -> set[str]:
        return {url for url in self.levels if is_stored_page(truth.get(url))}


def is_stored_page(page: dict | None) -> bool:
    return bool(page) and page["status"] == 200 and page["content_type"] in STORED_TYPES


def reach(
    truth: dict[str, dict],
    seeds: Iterable[str],
    max_levels: int = 3,
    stay_in_host: bool = True,
    obey_robots: bool = True,
) -> Reach:
    """Breadth first from the seeds: the level at which each url is first requested."""
    levels: dict[str, int] = {}
    queue: deque[tuple[str, int]] = deque((url, 1) for url in seeds)
    while queue:
        url, level = queue.popleft()
        page = truth.get(url)
        if url in levels or (obey_robots and page and not page["robots_allowed"]):
            continue
        levels[url] = level
        if page is None:
            continue
        if page["location"]:
            queue.appendleft((page["location"], level))  # a redirect is not a link: same level
        elif page["status"] == 200 and (max_levels == 0 or level < max_levels):
            for link in page["links"]:
                if not stay_in_host or host_of(link) == host_of(url):
                    queue.append((link, level + 1))
    return Reach(levels)
