"""Page importance from the four features seed 000 names.

Seed 000: weight(p) = f(indegree(p), indegree(father_p), mirror(p), directorydepth(p)),
important pages being those much linked to, linked from much-linked pages, mirrored often and
shallow in their site; it leaves f open ("how to set each feature's factor is hard"). The
default f here is

    weight(p) = base + a*ln(1 + indegree(p)) + b*ln(1 + indegree(parent(p)))
                     + c*ln(mirror(p)) - d*depth(p)

with base = 10, a = 1, b = 0.5, c = 1, d = 1, because:

- base - d*depth is the crawl's own URL weight (docs/design.md section 2: 10, minus one per
  directory level), the one feature known before a page is fetched; a page about which
  nothing else is known ranks where the crawl put it.
- In-degree and mirror degree are heavy-tailed counts (a few pages have thousands of links):
  on a log scale every doubling is worth the same, so one hub does not swamp the other
  features; ln(1 + x) is 0 for no links and ln(mirror) is 0 for a page with one copy.
- a = c = 1: e times the in-links, or e times the copies, is worth one directory level.
- b = 0.5: the parent's in-degree is indirect evidence (a page an important page links to),
  so it counts half of the page's own.

The features, as counted here:

- indegree(p): the stored pages q != p whose out-links (their links.tsv line; the last one if
  a page was stored again) include p. Links come only from stored pages; a page linking to
  itself says nothing of its importance, so self-links do not count; a page linking to p
  twice counts once (links.tsv lists each out-link once).
- parent(p): the page whose link first led the crawl to p (the parent field of p's first
  links.tsv line that has one); "" for a seed, whose parent in-degree is 0. A parent that
  was not stored (a duplicate) still has an in-degree: the stored pages linking to it.
- mirror(p): 1 + the mirror table's lines naming p as kept url (formats.mirrors).
- depth(p): the url's directory depth (urls.directory_depth, docs/design.md section 2).
Links to a mirror copy of p are links to that copy's url, not to p: mirror(p) already
credits the copies.
"""

from __future__ import annotations

import math
import os
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from tianwang.analysis.recordscan import scan_urls
from tianwang.formats.linksfile import iter_pages
from tianwang.formats.mirrors import mirror_degrees
from tianwang.formats.record import OnDamage
from tianwang.formats.store import record_files
from tianwang.urls import directory_depth

COLUMNS = ("url", "weight", "indegree", "parent", "parent_indegree", "mirror", "depth")


@dataclass(frozen=True)
class Coefficients:
    base: float = 10.0
    indegree: float = 1.0
    parent_indegree: float = 0.5
    mirror: float = 1.0
    depth: float = 1.0


@dataclass(frozen=True)
class PageImportance:
    url: str
    weight: float
    indegree: int
    parent: str
    parent_indegree: int
    mirror: int
    depth: int

    def row(self) -> tuple[str, float, int, str, int, int, int]:
        return (self.url, self.weight, self.indegree, self.parent, self.parent_indegree,
                self.mirror, self.depth)


def weight(indegree: int, parent_indegree: int, mirror: int, depth: int,
           c: Coefficients = Coefficients()) -> float:
    """The default f of seed 000 (see the module docstring)."""
    return (c.base + c.indegree * math.log1p(indegree)
            + c.parent_indegree * math.log1p(parent_indegree)
            + c.mirror * math.log(max(mirror, 1)) - c.depth * depth)


def stored_urls(
    data_dir: str | os.PathLike[str], on_damage: OnDamage | None = None
) -> list[str]:
    """The distinct urls of the tree's records, in file order; RecordError at a bad record,
    or, given on_damage, each damaged span to it and the reading goes on."""
    seen: dict[str, None] = {}
    for path in record_files(data_dir):
        for url in scan_urls(path, on_damage=on_damage):
            seen[url] = None
    return list(seen)


def link_features(
    data_dir: str | os.PathLike[str], pages: Iterable[str]
) -> tuple[Counter[str], dict[str, str]]:
    """In-degree of every stored page and every parent, and each stored page's parent."""
    stored = set(pages)
    parents: dict[str, str] = {}
    lines: Counter[str] = Counter()  # a stored page's lines, to find its last one
    for page in iter_pages(data_dir):
        if page.url in stored:
            lines[page.url] += 1
            if page.parent and page.url not in parents:
                parents[page.url] = page.parent
    wanted = stored | set(parents.values())
    indegree: Counter[str] = Counter()
    for page in iter_pages(data_dir):
        if page.url not in stored:
            continue
        lines[page.url] -= 1
        if lines[page.url] == 0:  # the page's current out-links
            indegree.update(link for link in set(page.links)
                            if link != page.url and link in wanted)
    return indegree, parents


def importance(
    data_dir: str | os.PathLike[str],
    coefficients: Coefficients = Coefficients(),
    on_damage: OnDamage | None = None,
) -> list[PageImportance]:
    """Every stored page with its features and weight, most important first (then by url);
    RecordError at a damaged record, or, given on_damage, each span to it, skipped."""
    pages = stored_urls(data_dir, on_damage)
    indegree, parents = link_features(data_dir, pages)
    mirrors = mirror_degrees(data_dir)
    table = []
    for url in pages:
        parent = parents.get(url, "")
        features = (indegree[url], indegree[parent] if parent else 0, mirrors.get(url, 1),
                    directory_depth(url))
        table.append(PageImportance(url, weight(*features, coefficients), features[0], parent,
                                    *features[1:]))
    table.sort(key=lambda page: (-page.weight, page.url))
    return table


def csv_rows(table: Iterable[PageImportance]) -> Iterator[list[str]]:
    yield list(COLUMNS)
    for page in table:
        yield [str(value) if not isinstance(value, float) else f"{value:.6f}"
               for value in page.row()]


def jsonl_records(table: Iterable[PageImportance]) -> Iterator[dict[str, object]]:
    for page in table:
        record = dict(zip(COLUMNS, page.row(), strict=True))
        record["weight"] = round(page.weight, 6)
        yield record
