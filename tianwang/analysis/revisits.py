"""Which urls are due for a revisit, and in what order (docs/design.md 8, issue 6).

Pure python. Each url's change rate is estimated from its visit history (interval-aware
maximum likelihood, tianwang/analysis/changes.py); a policy turns the rates into revisit
frequencies:

- "two-class": the seed's F1/F2 classes, each at its class's mean rate, clamped between
  the minimum and maximum revisit intervals;
- "optimal": the freshness-optimal allocation of `budget` fetches a day;
- "uniform": `budget` fetches a day shared evenly.

For every policy a url is revisited at least once per maximum interval (a page never
looked at again could change unseen for good) and at most once per minimum interval. A url
with a single visit has no rate yet and counts at the mean rate of the others. Due urls come
class F1 first, then F2, and within a class entry pages first (seed 001: entry pages carry
the new links), then the longest overdue.

Given the urls' page types (tianwang/analysis/pagetypes.py, TIANWANG_PAGE_TYPES), an entry
page is F1 and a stable page F2 whatever their estimates, and two-class revisits each class
at its mean rate over those classes: a stable page is not revisited like a hub.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from tianwang.analysis.changerates import (
    Estimate,
    classes,
    estimate,
    optimal_allocation,
    two_class_frequencies,
    uniform_allocation,
)
from tianwang.analysis.pagetypes import typed_classes, typed_two_class_frequencies
from tianwang.formats.history import Visit

DAY = 86400.0
TWO_CLASS = "two-class"  # the default policy (the seed's own)
POLICIES = (TWO_CLASS, "optimal", "uniform")
# The default bounds of every policy, in seconds: the TIANWANG_MIN_REVISIT and
# TIANWANG_MAX_REVISIT defaults are these.
MIN_INTERVAL = 3600
MAX_INTERVAL = 30 * 86400


@dataclass(frozen=True)
class UrlRate:
    url: str
    last_visit: float  # epoch seconds
    entry: bool  # an entry page at its last visit
    estimate: Estimate | None  # None with fewer than two visits
    etag: str | None
    last_modified: str | None


@dataclass(frozen=True)
class Due:
    url: str
    cls: int  # 1 (F1) or 2 (F2)
    entry: bool
    rate: float  # changes a day (estimated, or the mean for a new url)
    interval: float  # seconds between revisits under the policy
    overdue: float  # seconds past due
    etag: str | None
    last_modified: str | None
    page_type: str = ""  # entry, stable or link when the policy uses the types


def url_rates(visits: Iterable[Visit]) -> list[UrlRate]:
    """One UrlRate per url from its visits (sorted by url, then time, as the store gives)."""
    found: list[UrlRate] = []
    group: list[Visit] = []
    for visit in visits:
        if group and visit.url != group[0].url:
            found.append(_rate_of(group))
            group = []
        group.append(visit)
    if group:
        found.append(_rate_of(group))
    return found


def _rate_of(visits: list[Visit]) -> UrlRate:
    last = visits[-1]
    found = None
    if len(visits) >= 2:
        times = [v.time / DAY for v in visits]
        found = estimate(times, [v.changed for v in visits[1:]])
    return UrlRate(last.url, last.time, last.entry, found, last.etag, last.last_modified)


def frequencies(rates: list[float], policy: str, budget: float, min_interval: float,
                max_interval: float, types: list[str] | None = None) -> list[float]:
    """Revisits a day for each rate (changes a day) under a policy, within the bounds."""
    if policy not in POLICIES:
        raise ValueError(f"unknown policy {policy!r}: one of {', '.join(POLICIES)}")
    low, high = DAY / max_interval, DAY / min_interval
    if policy == TWO_CLASS and types is not None:
        chosen = typed_two_class_frequencies(rates, types, low, high)
    elif policy == TWO_CLASS:
        chosen = two_class_frequencies(rates, low, high)
    elif policy == "optimal":
        chosen = optimal_allocation(rates, budget)
    else:
        chosen = uniform_allocation(rates, budget)
    return [min(max(f, low), high) for f in chosen]


def due(urls: list[UrlRate], now: float, policy: str = TWO_CLASS, budget: float = 0.0,
        min_interval: float = MIN_INTERVAL, max_interval: float = MAX_INTERVAL,
        everything: bool = False, types: dict[str, str] | None = None) -> list[Due]:
    """The urls due at `now` (all of them with everything=True), in revisit order; with
    `types` (url -> page type), the typed classes."""
    if not urls:
        return []
    known = [u.estimate.rate for u in urls if u.estimate is not None]
    mean = sum(known) / len(known) if known else 0.0
    rates = [u.estimate.rate if u.estimate is not None else mean for u in urls]
    kinds = [types.get(u.url, "stable") for u in urls] if types is not None else None
    chosen = frequencies(rates, policy, budget, min_interval, max_interval, kinds)
    cls_of = typed_classes(rates, kinds) if kinds is not None else classes(rates)
    found = []
    for k, (url, rate, cls, per_day) in enumerate(zip(urls, rates, cls_of, chosen,
                                                      strict=True)):
        interval = DAY / per_day
        overdue = now - (url.last_visit + interval)
        if everything or overdue >= 0:
            found.append(Due(url.url, cls, url.entry, rate, interval, overdue, url.etag,
                             url.last_modified, kinds[k] if kinds is not None else ""))
    found.sort(key=lambda d: (d.cls, not d.entry, -d.overdue, d.url))
    return found
