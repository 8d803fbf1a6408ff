"""A recorded link graph served as a web: every page at its url, its links as <a href>.

The recorded format is the UCI ICS crawl graph's:
pages.tsv `id url host` and edges.tsv `src_id dst_id`, tab-separated, each with a header,
read by the partition commands' reader (tianwang.analysis.sitegraph.read_recorded_graph).
Bodies are synthesized: deterministic running text chosen by the page id, with the page's
own url and id in it, so no two pages share an MD5 and dedup merges none. Pure python.

The test web is an http proxy, so https is served as http: a page recorded as
https://host/path is at http://host/path, and its links point there. Urls not in the graph
answer 404; every host of the graph answers a robots.txt that allows everything.
Memory: the urls, one dict from served url to id, and the links as two int arrays (offsets
and targets, by source): about 25 MB for the UCI crawl's 53,769 pages and 574,775 links.
"""

from __future__ import annotations

import html
import os
from array import array
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from tianwang.analysis.sitegraph import PAGES_FILE, GraphDirError, read_recorded_graph
from tianwang.formats.partitionplan import PlanFile
from tianwang.testweb.response import Response
from tianwang.testweb.text import PARAGRAPH_COUNT, RINGS
from tianwang.urls import safe_url

ROBOTS = b"User-agent: *\nDisallow:\n"
HTML_TYPE = "text/html; charset=utf-8"
PARAGRAPHS_PER_PAGE = 3


def served_url(url: str) -> str:
    """Where a recorded url is served: http, host lowercase, no default port, "/" for an
    empty path, no fragment, escaped as the crawler escapes a link (tianwang.urls.safe_url),
    so the url a crawler asks for is found as it is."""
    parts = urlsplit(url.strip())
    host = (parts.hostname or "").lower()
    if not host:
        raise ValueError(f"url {url!r} has no host")
    port = parts.port  # ValueError on a bad one
    netloc = host if port in (None, 80, 443) else f"{host}:{port}"
    return safe_url(urlunsplit(("http", netloc, parts.path or "/", parts.query, "")))


class GraphWeb:
    """The server's model of a recorded graph (duck-typed like SyntheticWeb for server.py)."""

    seed = 0  # a recorded graph has no seed; the server's start line prints it
    changing = None  # no clock: pages never change
    junk = None

    def __init__(self, urls: list[str], sources: array, targets: array) -> None:
        self.urls = urls  # page id -> served url
        self._ids: dict[str, int] = {}
        for page, url in enumerate(urls):
            self._ids.setdefault(url, page)  # a later duplicate is served as the first
        self._offsets, self._targets = _by_source(len(urls), sources, targets)
        self.hosts = sorted({urlsplit(url).netloc for url in urls})
        self._host_set = frozenset(self.hosts)

    @classmethod
    def from_dir(cls, directory: str | os.PathLike[str]) -> GraphWeb:
        """Read DIR/pages.tsv and DIR/edges.tsv (the partition commands' reader);
        GraphDirError naming the file and the fault."""
        graph = read_recorded_graph(directory)
        urls = []
        for page, url in enumerate(graph.urls):
            try:
                urls.append(served_url(url))
            except ValueError as exc:
                raise GraphDirError(
                    f"{Path(directory) / PAGES_FILE}: page {page} ({url!r}): {exc}"
                ) from None
        return cls(urls, graph.sources, graph.targets)

    def links(self, page: int) -> list[int]:
        return list(self._targets[self._offsets[page] : self._offsets[page + 1]])

    def page_id(self, url: str) -> int | None:
        try:
            return self._ids.get(served_url(url))
        except ValueError:
            return None

    def respond(self, url: str) -> Response:
        page = self.page_id(url)
        if page is None:
            if urlsplit(url).path == "/robots.txt" and urlsplit(url).netloc in self._host_set:
                return Response(200, [("Content-Type", "text/plain")], ROBOTS)
            return _not_found(urlsplit(url).path or "/")
        return Response(200, [("Content-Type", HTML_TYPE)], self.body(page))

    def body(self, page: int) -> bytes:
        url = self.urls[page]
        ring = RINGS[("utf-8", "html")]
        start = (page * 7919) % PARAGRAPH_COUNT  # a prime stride: neighbours differ
        text = ring.slice(start, start + PARAGRAPHS_PER_PAGE)
        anchors = "".join(
            f'<li><a href="{html.escape(self.urls[target])}">page {target}</a></li>\n'
            for target in self.links(page)
        )
        escaped = html.escape(url)
        head = (
            f'<html><head><meta charset="utf-8"><title>page {page}: {escaped}</title></head>\n'
            f"<body>\n<h1>{escaped}</h1>\n<p>page {page} of the recorded graph</p>\n"
        )
        return head.encode() + text + f"<ul>\n{anchors}</ul>\n</body></html>\n".encode()

    def truth(self) -> Iterator[dict[str, Any]]:
        """One record per page, in the shape SyntheticWeb.truth gives (tests/truth.py reads
        it): every page a 200 text/html page whose links are its recorded out-links."""
        for page, url in enumerate(self.urls):
            if self._ids[url] != page:
                continue  # a duplicate of an earlier page's served url
            yield {
                "url": url,
                "host": urlsplit(url).netloc,
                "status": 200,
                "content_type": "text/html",
                "links": list(dict.fromkeys(self.urls[t] for t in self.links(page))),
                "kind": "home" if urlsplit(url).path == "/" else "html",
                "location": None,
                "charset": "utf-8",
                "robots_allowed": True,
                "distance": None,
            }


def _not_found(path: str) -> Response:
    text = html.escape(path)
    body = f"<html><head><title>404 Not Found</title></head><body><h1>Not Found</h1>" \
           f"<p>404 Not Found: {text}</p></body></html>\n"
    return Response(404, [("Content-Type", HTML_TYPE)], body.encode("utf-8", "replace"))


def _by_source(pages: int, sources: array, targets: array) -> tuple[array, array]:
    """The links grouped by source (a counting sort): page p's targets are
    targets[offsets[p]:offsets[p + 1]], in the recorded order."""
    offsets = array("q", [0]) * (pages + 1)
    for source in sources:
        offsets[source + 1] += 1
    for page in range(pages):
        offsets[page + 1] += offsets[page]
    filled = array("q", offsets[:-1])
    grouped = array("i", [0]) * len(targets)
    for source, target in zip(sources, targets, strict=True):
        grouped[filled[source]] = target
        filled[source] += 1
    return offsets, grouped


def served_plan(plan_file: PlanFile) -> PlanFile:
    """A partition plan made from a recorded graph, its homepages and seeds moved to where
    the graph web serves them (https as http): key paths name no scheme and stay as they are."""
    sites = {}
    for host, site in plan_file.sites.items():
        seeds = tuple(tuple(served_url(url) for url in share) for share in site.plan.seeds)
        plan = replace(site.plan, seeds=seeds)
        sites[host] = replace(site, homepage=served_url(site.homepage), plan=plan)
    return replace(plan_file, sites=sites)
