"""The link graph: beside each host's page.dat, `links.tsv`, one line per stored page.

    <page url>\\t<parent url>\\t<out-link>\\t<out-link>...\\n

The parent is the page whose link first led the crawler to this one (the request's Referer,
or after a redirect the Referer of the request that was redirected; empty for a seed): what
seed 000's "in-degree of the parent" needs and only the crawl knows.
Out-links are canonical absolute urls (fragment removed, percent-encoded), in page order,
without duplicates; a page without links is a line of its url and parent. If a url was stored
more than once (a revisit), its last line is its current out-links.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from tianwang.formats.lines import LineLog, iter_lines, prune_lines
from tianwang.formats.store import page_path

LINKS_FILE = "links.tsv"


def links_path(data_dir: str | os.PathLike[str], host: str) -> Path:
    return page_path(data_dir, host).with_name(LINKS_FILE)


def link_files(data_dir: str | os.PathLike[str]) -> list[Path]:
    return sorted(path for path in Path(data_dir).glob(f"data_*/*/{LINKS_FILE}") if path.is_file())


@dataclass(frozen=True, slots=True)
class PageLinks:
    url: str
    parent: str  # "" for a seed
    links: list[str]


def iter_pages(data_dir: str | os.PathLike[str]) -> Iterator[PageLinks]:
    """Every line of every host's table, host by host, in the order they were written."""
    for path in link_files(data_dir):
        for fields in iter_lines(path):
            if len(fields) >= 2:
                yield PageLinks(fields[0], fields[1], fields[2:])


def iter_edges(data_dir: str | os.PathLike[str]) -> Iterator[tuple[str, str]]:
    """(from url, to url) for every edge of the graph."""
    for page in iter_pages(data_dir):
        for link in page.links:
            yield page.url, link


def out_links(data_dir: str | os.PathLike[str], url: str, host: str) -> list[str] | None:
    """The latest out-links stored for url (on host), or None if it has no line."""
    found = None
    for fields in iter_lines(links_path(data_dir, host)):
        if fields[0] == url:
            found = fields[2:]
    return found


def prune_links(path: str | os.PathLike[str], held: set[str]) -> int:
    """Drop the lines of a links.tsv whose page is not among the urls its page.dat holds
    (after a repair took damaged records out); the number dropped."""
    return prune_lines(path, lambda fields: fields[0] in held)


class LinkGraphWriter:
    """Appends page lines to their hosts' links.tsv, keeping at most max_open files open."""

    def __init__(self, data_dir: str | os.PathLike[str], max_open: int = 64) -> None:
        if max_open < 1:
            raise ValueError(f"max_open must be at least 1, not {max_open}")
        self.data_dir = Path(data_dir)
        self.max_open = max_open
        self._open: dict[str, LineLog] = {}  # insertion order = least recently used first
        # Hosts whose file was repaired this session: repair reads the file's tail, and only
        # this writer appends to it between a close and a reopen.
        self._repaired: set[str] = set()

    def add(self, host: str, url: str, parent: str | None, links: Iterable[str]) -> None:
        self._log(host.lower()).append((url, parent or "", *links))

    def _log(self, host: str) -> LineLog:
        log = self._open.pop(host, None)
        if log is None:
            if len(self._open) >= self.max_open:
                oldest = next(iter(self._open))
                self._open.pop(oldest).close()
            log = LineLog(links_path(self.data_dir, host), repair=host not in self._repaired)
            self._repaired.add(host)
        self._open[host] = log
        return log

    def close(self) -> None:
        for log in self._open.values():
            log.close()
        self._open.clear()

    def __enter__(self) -> LinkGraphWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
