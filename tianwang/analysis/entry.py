"""Entry pages (seed 001 section 2.3, docs/design.md section 4), recomputed at each visit.

Pure python. An entry page is a root page, or a subroot or path page that is link-rich
(at least `min_links` in-host links in its content and navigation blocks) and whose share of
those links not seen at its previous visit is at least `min_share`. A page visited for the
first time has no previous visit to compare with, so only a root page is an entry page then.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from tianwang.urls import url_host, url_type


def new_link_share(links: Sequence[str], previous: Collection[str] | None) -> float | None:
    """Share of links not among the previous visit's (None without a previous visit)."""
    if previous is None:
        return None
    if not links:
        return 0.0
    known = previous if isinstance(previous, (set, frozenset)) else set(previous)
    return sum(1 for link in links if link not in known) / len(links)


def in_host_links(url: str, links: Sequence[str]) -> list[str]:
    host = url_host(url)
    kept = []
    for link in links:
        try:
            if url_host(link) == host:
                kept.append(link)
        except ValueError:
            continue
    return kept


def is_entry(url: str, share: float | None, links: int, min_links: int,
             min_share: float) -> bool:
    """The rule, given the page's in-host link count and new-link share at this visit."""
    kind = url_type(url)
    if kind == "root":
        return True
    if kind not in ("subroot", "path"):
        return False
    return links >= min_links and share is not None and share >= min_share
