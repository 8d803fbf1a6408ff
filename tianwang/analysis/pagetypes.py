"""Seed 001's three page types, from the visit history, and the revisit classes they give.

Pure python. Seed 001, section 2.2: "(1) a few changing pages made of many links, where the
site's new pages show: usually the homepage and section homepages; (2) many stable pages,
which are what the site says: they do not change unless they disappear, and even when they
change the change is small against their value (news reports, product pages, forum posts);
(3) some pages also hold many links, but those links do not point to the site's newest pages."

From a url's visits (tianwang/formats/history.py) and the in-host links of its content and
navigation blocks at its last visit:

- "entry" (type 1): an entry page at any visit (tianwang/analysis/entry.py: a root, or a
  link-rich subroot/path page whose share of new links reached TIANWANG_ENTRY_NEW_SHARE);
- "link" (type 3): never an entry page, yet at least `link_min` such links
  (TIANWANG_LINK_PAGE_MIN_LINKS): many links, none of them to new pages;
- "stable" (type 2): the rest, the pages that are what the site says.

In the revisit policy (tianwang/analysis/revisits.py, TIANWANG_PAGE_TYPES): the seed's two
classes F1/F2 by rate stay for link pages; an entry page is F1 whatever its estimate (its
changes bring the new pages), and a stable page F2 whatever its estimate: it is not revisited
like a hub, as the seed means ("the value of its change is small").
"""

from __future__ import annotations

from collections.abc import Sequence

from tianwang.analysis.changerates import classes
from tianwang.formats.history import Visit

PAGE_TYPES = ("entry", "stable", "link")


def page_type(visits: Sequence[Visit], links: int, link_min: int) -> str:
    """The type of a url from its visits (any order) and its block links at the last visit."""
    if any(visit.entry for visit in visits):
        return "entry"
    return "link" if links >= link_min else "stable"


def page_types(visits: Sequence[Visit], links: dict[str, int], link_min: int) -> dict[str, str]:
    """The type of every url of a history's visits (sorted by url, as the store gives them);
    `links` is each url's block-link count at its last visit."""
    found: dict[str, str] = {}
    start = 0
    for k in range(1, len(visits) + 1):
        if k == len(visits) or visits[k].url != visits[start].url:
            url = visits[start].url
            found[url] = page_type(visits[start:k], links.get(url, 0), link_min)
            start = k
    return found


def typed_classes(rates: Sequence[float], types: Sequence[str]) -> list[int]:
    """F1 (1) / F2 (2): entry pages F1, stable pages F2, link pages by the seed's rule (a
    rate at or above the mean rate of all urls is F1)."""
    by_rate = classes(rates)
    fixed = {"entry": 1, "stable": 2}
    return [fixed.get(kind, cls) for kind, cls in zip(types, by_rate, strict=True)]


def class_means(rates: Sequence[float], cls: Sequence[int]) -> dict[int, float]:
    grouped: dict[int, list[float]] = {1: [], 2: []}
    for rate, c in zip(rates, cls, strict=True):
        grouped[c].append(rate)
    return {c: (sum(v) / len(v) if v else 0.0) for c, v in grouped.items()}


def typed_two_class_frequencies(rates: Sequence[float], types: Sequence[str],
                                min_frequency: float, max_frequency: float) -> list[float]:
    """The seed's two classes, each at its mean rate, with the typed classes."""
    cls = typed_classes(rates, types)
    means = class_means(rates, cls)
    return [min(max(means[c], min_frequency), max_frequency) for c in cls]


def typed_two_class_allocation(rates: Sequence[float], types: Sequence[str],
                               budget: float) -> list[float]:
    """As changes.two_class_allocation (each class's frequency proportional to its mean
    rate, `budget` fetches in all), with the typed classes."""
    if not rates:
        return []
    cls = typed_classes(rates, types)
    means = class_means(rates, cls)
    weights = [means[c] for c in cls]
    total = sum(weights)
    if total == 0:
        return [budget / len(rates)] * len(rates)
    return [budget * w / total for w in weights]
