"""Each site's in-site link graph, read from a crawl or from a recorded graph. Pure python.

Two sources, told apart by their files:
- a crawl's data directory: `data_*/<host>/links.tsv` (tianwang.formats.linksfile);
- a recorded graph directory: `pages.tsv` (`id url host`) and `edges.tsv` (`src_id dst_id`),
  both tab-separated with a header line, as the UCI ICS crawl graph is. A page's
  site is its url's host (tianwang.urls.url_host); the host column is not read.

A site is one host. Its graph keeps links between two of its own pages only (seed 002 looks
at in-site links alone), without self links or repeats. The paper builds each site's graph by
a breadth-first crawl from the homepage and takes that graph as the whole site, so a page is
part of the site when the homepage reaches it by in-site links; the others are counted (as
`unreached`) and left out. Then one crawler from the homepage fetches every page: coverage 1
at N = 1, as in the paper.

Homepage: the host's root url (`scheme://host/`, http or https) when it is a page; otherwise
the page that reaches the most of the host's pages, among the 20 of highest in-site in-degree
and the 20 shallowest (fewest directories); ties to the higher in-degree, then the shorter url,
then the smaller url.
"""

from __future__ import annotations

import heapq
import logging
import operator
import os
from array import array
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from itertools import compress, groupby
from pathlib import Path

from tianwang.analysis.sitepartition import link_depths
from tianwang.formats.linksfile import iter_pages, link_files
from tianwang.urls import directory_depth, url_host

logger = logging.getLogger(__name__)

PAGES_FILE = "pages.tsv"
EDGES_FILE = "edges.tsv"
HOMEPAGE_CANDIDATES = 20  # per ranking, when a host has no root page


class GraphDirError(ValueError):
    """A directory that holds no link graph, or a recorded graph that cannot be read."""


@dataclass(frozen=True)
class RecordedGraph:
    """A recorded graph: urls[k] is the page of the k-th line of pages.tsv, and edge j goes
    from urls[sources[j]] to urls[targets[j]] (arrays: 10 million edges as tuples would take
    a gigabyte)."""

    urls: list[str]
    sources: array
    targets: array

    def edges(self) -> Iterator[tuple[int, int]]:
        return zip(self.sources, self.targets, strict=True)


@dataclass(frozen=True)
class SiteGraph:
    host: str
    homepage: str
    links: dict[str, list[str]]  # every page of the site -> its in-site links (all pages)
    depth: dict[str, int]  # every page's link depth from the homepage (0)
    unreached: int  # the host's pages the homepage does not reach (left out)

    @property
    def pages(self) -> int:
        return len(self.links)


def is_recorded_graph(directory: str | os.PathLike[str]) -> bool:
    return (Path(directory) / PAGES_FILE).is_file() and (Path(directory) / EDGES_FILE).is_file()


def read_recorded_graph(directory: str | os.PathLike[str]) -> RecordedGraph:
    """pages.tsv and edges.tsv of a recorded graph; GraphDirError naming the file and line
    of the first fault. Page ids may be any distinct integers; edges name them."""
    directory = Path(directory)
    urls: list[str] = []
    position: dict[int, int] = {}
    for line_no, fields in _rows(directory / PAGES_FILE, 2):
        try:
            page_id = int(fields[0])
        except ValueError:
            raise _bad(directory / PAGES_FILE, line_no, f"page id {fields[0]!r}") from None
        if page_id in position:
            raise _bad(directory / PAGES_FILE, line_no, f"page id {page_id} again")
        position[page_id] = len(urls)
        urls.append(fields[1])
    fast = _read_edges_fast(directory / EDGES_FILE, position)
    if fast is not None:
        return RecordedGraph(urls, *fast)
    sources, targets = array("l"), array("l")
    for line_no, fields in _rows(directory / EDGES_FILE, 2):
        try:
            sources.append(position[int(fields[0])])
            targets.append(position[int(fields[1])])
        except (KeyError, ValueError):
            raise _bad(directory / EDGES_FILE, line_no, f"edge {fields[0]!r} -> {fields[1]!r} "
                       "does not name two pages of pages.tsv") from None
    return RecordedGraph(urls, sources, targets)


def _read_edges_fast(path: Path, position: dict[int, int]) -> tuple[array, array] | None:
    """edges.tsv in blocks, a split and int() per block (millions of edges a second); None
    when a line is not two whole numbers naming pages, so the line reader can name it."""
    numbers = array("l")
    try:
        file = open(path, "rb")
    except OSError as exc:
        raise GraphDirError(f"cannot read {path}: {exc.strerror}") from None
    with file:
        file.readline()  # the header line
        tail = b""
        while block := file.read(1 << 22):
            block = tail + block
            cut = block.rfind(b"\n") + 1
            block, tail = block[:cut], block[cut:]
            if not _add_numbers(numbers, block):
                return None
        if not _add_numbers(numbers, tail):
            return None
    if not all(value == at for at, value in enumerate(position)):  # ids are not 0, 1, ...
        try:
            numbers = array("l", map(position.__getitem__, numbers))
        except KeyError:
            return None
    elif numbers and not 0 <= min(numbers) <= max(numbers) < len(position):
        return None
    return numbers[0::2], numbers[1::2]


def _add_numbers(numbers: array, block: bytes) -> bool:
    fields = block.split()
    if len(fields) != 2 * block.count(b"\t"):  # each line: one tab between two fields
        return False
    try:
        numbers.extend(map(int, fields))
    except ValueError:
        return False
    return True


def _rows(path: Path, width: int) -> Iterator[tuple[int, list[str]]]:
    """(line number, fields) of every line after the header; blank lines skipped."""
    try:
        file = open(path, encoding="utf-8")
    except OSError as exc:
        raise GraphDirError(f"cannot read {path}: {exc.strerror}") from None
    with file:
        next(file, None)  # the header line
        for line_no, line in enumerate(file, 2):
            fields = line.rstrip("\r\n").split("\t")
            if len(fields) >= width:
                yield line_no, fields
            elif line.strip():
                raise _bad(path, line_no, f"{len(fields)} field(s), need {width}")


def _bad(path: Path, line_no: int, what: str) -> GraphDirError:
    return GraphDirError(f"{path} line {line_no}: {what}")


# --- per-host link tables ------------------------------------------------------------------


def recorded_hosts(graph: RecordedGraph) -> dict[str, dict[str, list[str]]]:
    """host -> {page: its in-site links} for a recorded graph."""
    urls = graph.urls
    hosts = [url_host(url) for url in urls]
    numbers: dict[str, int] = {}
    host_of = [numbers.setdefault(host, len(numbers)) for host in hosts]  # ints compare fast
    links: list[list[str]] = [[] for _ in urls]
    # Per edge work is done in C (map, compress, groupby): a million pages have ten million
    # edges. Kept: two pages of one host, no self link. A source whose edges are not
    # contiguous in the file simply makes several groups.
    kept = bytes(map(operator.and_,
                     map(operator.eq, map(host_of.__getitem__, graph.sources),
                         map(host_of.__getitem__, graph.targets)),
                     map(operator.ne, graph.sources, graph.targets)))
    pairs = compress(zip(graph.sources, map(urls.__getitem__, graph.targets), strict=True), kept)
    second = operator.itemgetter(1)
    for source, group in groupby(pairs, key=operator.itemgetter(0)):
        links[source].extend(map(second, group))
    tables: dict[str, dict[str, list[str]]] = {}
    for url, host, out in zip(urls, hosts, links, strict=True):
        tables.setdefault(host, {})[url] = out
    return {host: _distinct(table) for host, table in tables.items()}


def crawl_hosts(data_dir: str | os.PathLike[str]) -> dict[str, dict[str, list[str]]]:
    """host -> {page: its in-site links} for a crawl: the stored pages (a url's last line
    wins) and their links to other stored pages of the host. The link from a page's parent is
    added too: the crawl followed it (perhaps through a redirect, whose source url is no page
    of the graph), so every page keeps the way the crawl reached it."""
    lines = {page.url: page for page in iter_pages(data_dir)}  # the last line of a url wins
    hosts = {url: host for url in lines if (host := _stored_host(url)) is not None}
    if len(hosts) < len(lines):
        bad = [url for url in lines if url not in hosts]
        logger.warning("%s: skipped %d links.tsv lines whose page is not a url (damaged?), "
                       "the first %r", data_dir, len(bad), bad[0][:60])
        lines = {url: lines[url] for url in hosts}
    tables: dict[str, dict[str, list[str]]] = {}
    for url, page in lines.items():
        host = hosts[url]
        links = [link for link in page.links if hosts.get(link) == host and link != url]
        tables.setdefault(host, {})[url] = links
    for url, page in lines.items():
        if page.parent and page.parent != url and hosts.get(page.parent) == hosts[url]:
            tables[hosts[url]][page.parent].append(url)
    return {host: _distinct(table) for host, table in tables.items()}


def _stored_host(url: str) -> str | None:
    """The host of a url as the crawl writes them (percent-encoded: no control character,
    blank or undecodable byte), else None: a damaged line, which must not stop the reading."""
    if not url.isprintable() or any(char.isspace() for char in url):
        return None  # NUL and the other controls, surrogates of undecodable bytes, blanks
    try:
        return url_host(url)
    except ValueError:
        return None


def _distinct(table: dict[str, list[str]]) -> dict[str, list[str]]:
    for url, links in table.items():
        if len(links) > 1:
            table[url] = list(dict.fromkeys(links))
    return table


# --- sites ---------------------------------------------------------------------------------


def read_sites(
    directory: str | os.PathLike[str], site: str | None = None, min_pages: int = 1
) -> dict[str, SiteGraph]:
    """Every site (host) of a crawl or recorded graph directory with at least min_pages
    pages, or only `site`; GraphDirError if the directory holds no link graph or the site
    is not in it."""
    tables = host_tables(directory)
    if site is not None:
        host = site.lower()
        if host not in tables:
            raise GraphDirError(f"site {site} is not in the link graph of {directory} "
                                f"({len(tables)} hosts)")
        tables = {host: tables[host]}
    sites = (site_graph(host, table) for host, table in sorted(tables.items()))
    return {graph.host: graph for graph in sites if graph.pages >= min_pages}


def host_tables(directory: str | os.PathLike[str]) -> dict[str, dict[str, list[str]]]:
    """Per host link tables from whichever graph the directory holds (auto-detected)."""
    path = Path(directory)
    if not path.is_dir():
        raise GraphDirError(f"{directory} is not a directory")
    if is_recorded_graph(path):
        return recorded_hosts(read_recorded_graph(path))
    if link_files(path):
        return crawl_hosts(path)
    raise GraphDirError(f"no link graph in {directory}: neither data_*/<host>/links.tsv "
                        f"(a crawl's data directory) nor {PAGES_FILE} and {EDGES_FILE}")


def site_graph(host: str, table: dict[str, list[str]]) -> SiteGraph:
    """The site of one host's link table: its homepage and the pages that reaches."""
    homepage = choose_homepage(host, table)
    depth = link_depths(table, homepage)
    links = {url: table[url] for url in depth} if len(depth) < len(table) else table
    return SiteGraph(host, homepage, links, depth, len(table) - len(depth))


def choose_homepage(host: str, table: Mapping[str, Iterable[str]]) -> str:
    """The root url if it is a page, else the best-reaching candidate (module docstring)."""
    for root in (f"https://{host}/", f"http://{host}/", f"https://{host}", f"http://{host}"):
        if root in table:
            return root
    in_degree = Counter(link for links in table.values() for link in links)
    by_degree = heapq.nsmallest(HOMEPAGE_CANDIDATES, table,
                                key=lambda url: (-in_degree[url], len(url), url))
    shallow = heapq.nsmallest(HOMEPAGE_CANDIDATES, table,
                              key=lambda url: (directory_depth(url), len(url), url))
    candidates = dict.fromkeys(by_degree + shallow)
    return min(candidates, key=lambda url: (
        -len(link_depths(table, url)), -in_degree[url], len(url), url))
