"""Freshness and age of three revisit policies on the --changing test web (issue 6).

    python bench/changes.py [--seed 13] [--hosts 12] [--max-pages 60] [--learn-days 14]
                            [--days 14] [--budget 1.0]
    python bench/changes.py --estimators   # relative errors of the estimators, n = 20
    python bench/changes.py --types [--seed 13]   # page types against the truth's roles

1. Learning: a test web process (--changing) is visited once a simulated day for
   --learn-days days, every html page with a conditional GET over HTTP; a visit saw a change
   when the content hash of its blocks (tianwang/analysis/blocks.py) differs from the last
   one, a 304 is unchanged. Each page's rate is the interval-aware ML estimate.
2. Each policy turns the estimates into revisit frequencies with the same budget,
   --budget x pages fetches a simulated day: uniform, the seed's two classes (each class at
   a frequency proportional to its mean rate), the same with seed 001's page types
   ("two-class+types": entry pages F1, stable pages F2 whatever their estimate, link pages
   by rate; the types classified from the learning visits as tianwang/analysis/pagetypes.py
   does, their accuracy against the truth printed) and the freshness-optimal allocation.
3. Each policy then runs on its own fresh test web process whose clock is set to the end of
   learning: the clock moves an hour at a time and the pages due are fetched over HTTP
   (conditional GET). After each hour, freshness is the share of pages whose stored copy is
   the page's current version and age the mean time since a stale copy went stale, both
   from the test web's truth (SyntheticWeb(changing=True).changing.version). Their time
   averages are printed, with the analytical expectation from the *true* rates
   (Cho and Garcia-Molina's F and A) beside them.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import urllib.error
import urllib.request
import zlib
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tianwang.analysis.blocks import block_links, content_hash, segment  # noqa: E402
from tianwang.analysis.changerates import (  # noqa: E402
    age,
    estimate,
    freshness,
    optimal_allocation,
    two_class_allocation,
    uniform_allocation,
)
from tianwang.analysis.entry import in_host_links, is_entry, new_link_share  # noqa: E402
from tianwang.analysis.pagetypes import typed_two_class_allocation  # noqa: E402
from tianwang.testweb.changing import CLOCK_START, DAY  # noqa: E402
from tianwang.testweb.launcher import TestWebProcess  # noqa: E402
from tianwang.testweb.model import SyntheticWeb  # noqa: E402

HOUR = 3600
POLICIES = {"uniform": uniform_allocation, "two-class": two_class_allocation,
            "two-class+types": None, "optimal": optimal_allocation}
ENTRY_MIN_LINKS, ENTRY_NEW_SHARE, LINK_PAGE_MIN_LINKS = 20, 0.1, 10  # the settings' defaults


@dataclass
class Page:
    url: str
    charset: str
    true_rate: float
    etag: str | None = None
    modified: str | None = None
    digest: str | None = None
    links: tuple[str, ...] | None = None  # in-host block links at the last visit with a body
    entry: bool = False  # an entry page at some visit
    seen: list[tuple[int, float | None]] | None = None  # (in-host links, new share) a visit

    @property
    def page_type(self) -> str:
        """As tianwang.analysis.pagetypes.page_type."""
        if self.entry:
            return "entry"
        return "link" if len(self.links or ()) >= LINK_PAGE_MIN_LINKS else "stable"


class Client:
    """Conditional GETs through one test web process, and its clock."""

    def __init__(self, address: str) -> None:
        self.address = address
        self.opener = urllib.request.build_opener(urllib.request.ProxyHandler({"http": address}))
        self.fetches = 0

    def clock(self, query: str) -> float:
        with urllib.request.urlopen(f"{self.address}/_testweb/clock?{query}") as answer:
            return json.load(answer)["now"]

    def visit(self, page: Page) -> bool:
        """Fetch the page (conditionally); whether its content changed since the last visit."""
        headers = {}
        if page.etag:
            headers["If-None-Match"] = page.etag
        if page.modified:
            headers["If-Modified-Since"] = page.modified
        self.fetches += 1
        try:
            with self.opener.open(urllib.request.Request(page.url, headers=headers)) as answer:
                body = answer.read()
                page.etag, page.modified = answer.headers["ETag"], answer.headers["Last-Modified"]
        except urllib.error.HTTPError as error:
            with error:
                if error.code != 304:
                    raise
            return False
        blocks = segment(body, page.charset)
        digest = content_hash(blocks)
        changed = page.digest is not None and digest != page.digest
        page.digest = digest
        links = in_host_links(page.url, block_links(blocks, page.url))
        share = new_link_share(links, page.links)
        page.entry |= is_entry(page.url, share, len(links), ENTRY_MIN_LINKS, ENTRY_NEW_SHARE)
        page.seen = (page.seen or []) + [(len(links), share)]
        page.links = tuple(links)
        return changed


def learn(address: str, pages: list[Page], days: int) -> list[float]:
    """Estimated rates (changes a day) from `days` daily visits of every page."""
    client = Client(address)
    times: dict[str, list[float]] = {p.url: [] for p in pages}
    flags: dict[str, list[bool]] = {p.url: [] for p in pages}
    for day in range(days + 1):
        if day:
            client.clock(f"advance={DAY}")
        for page in pages:
            changed = client.visit(page)
            if day:
                flags[page.url].append(changed)
            times[page.url].append(day)
    # A page never seen to change gets half a change over the time watched (the +0.5 of the
    # bias-reduced estimator): 0 would let the optimal policy drop it for good.
    return [estimate(times[p.url], flags[p.url]).rate or 0.5 / days for p in pages]


def run_policy(address: str, model: SyntheticWeb, pages: list[Page], frequencies: list[float],
               start: float, days: int) -> dict:
    """Run one policy for `days` from `start`; time-averaged freshness and age (days)."""
    client = Client(address)
    client.clock(f"set={start}")
    changes = model.changing
    assert changes is not None
    stored = {p.url: changes.version(p.url, start) for p in pages}  # the learning's last copy
    next_due = {}
    for page, per_day in zip(pages, frequencies, strict=True):
        if per_day > 0:  # spread first visits over one interval, by a stable hash of the url
            phase = (zlib.crc32(page.url.encode()) % 10_000) / 10_000
            next_due[page.url] = start + phase * DAY / per_day
    fresh_sum = age_sum = 0.0
    ticks = days * 24
    for tick in range(1, ticks + 1):
        now = start + tick * HOUR
        client.clock(f"set={now}")
        for page, per_day in zip(pages, frequencies, strict=True):
            due = next_due.get(page.url)
            if due is not None and due <= now:
                client.visit(page)
                stored[page.url] = changes.version(page.url, now)
                next_due[page.url] = due + DAY / per_day
        fresh, ages = 0, 0.0
        for page in pages:
            if changes.version(page.url, now) == stored[page.url]:
                fresh += 1
            else:
                ages += now - _stale_since(changes, page.url, stored[page.url], now)
        fresh_sum += fresh / len(pages)
        age_sum += ages / len(pages) / DAY
    return {"freshness": fresh_sum / ticks, "age": age_sum / ticks, "fetches": client.fetches}


def _stale_since(changes, url: str, version: int, now: float) -> float:
    """When the page first changed after the stored version (its events are sorted)."""
    return changes.change_times(url, now)[version]


def type_accuracy(args: argparse.Namespace) -> None:
    """The classifier's types from the learning visits against the truth's roles (drawn
    without its thresholds, testweb/changing.py), at its defaults and around them."""
    web_args = (args.seed, args.hosts, args.max_pages)
    model = SyntheticWeb(*web_args, changing=True)
    truth = [r for r in model.truth(bodies=False) if r["blocks"] and r["robots_allowed"]]
    with TestWebProcess(*web_args, extra_args=("--changing",)) as web:
        pages = [Page(r["url"], r["charset"] or "utf-8", r["change_rate"]) for r in truth]
        learn(web.address, pages, args.learn_days)
    kinds = ("entry", "link", "stable")
    print(f"seed {args.seed}, {args.hosts} hosts, {len(pages)} html pages ("
          + ", ".join(f"{sum(r['page_type'] == k for r in truth)} {k}" for k in kinds)
          + f"), {args.learn_days} daily visits")
    print("| TIANWANG_ENTRY_MIN_LINKS | TIANWANG_ENTRY_NEW_SHARE | TIANWANG_LINK_PAGE_MIN_LINKS "
          "| entry | link | stable | all |")
    print("|---|---|---|---|---|---|---|")
    for entry_min, share_min, link_min in [(20, 0.1, 10), (10, 0.1, 10), (5, 0.1, 10),
                                           (40, 0.1, 10), (20, 0.05, 10), (20, 0.1, 5),
                                           (20, 0.1, 20), (5, 0.1, 20)]:
        found = []
        for page in pages:
            entry = any(is_entry(page.url, share, n, entry_min, share_min)
                        for n, share in page.seen or [])
            last = (page.seen or [(0, None)])[-1][0]
            found.append("entry" if entry else "link" if last >= link_min else "stable")
        cells = []
        for kind in kinds:
            of = [f == kind for f, r in zip(found, truth, strict=True) if r["page_type"] == kind]
            cells.append(f"{sum(of)}/{len(of)} ({sum(of) / max(len(of), 1):.0%})")
        right = sum(f == r["page_type"] for f, r in zip(found, truth, strict=True))
        mark = "**" if (entry_min, share_min, link_min) == (20, 0.1, 10) else ""
        print(f"| {mark}{entry_min}{mark} | {share_min:g} | {link_min} | " + " | ".join(cells)
              + f" | {right / len(truth):.1%} |")


def estimators(n: int = 20, histories: int = 2000, seed: int = 1) -> None:
    """Median relative error of the naive, bias-reduced and ML (uneven intervals) estimates
    for n visits, at rates from 0.1x to 5x the visit frequency, and pooled."""
    import math
    import random
    import statistics

    from tianwang.analysis.changerates import bias_reduced_rate, mle_rate, naive_rate

    rng = random.Random(seed)
    grid = [0.1 * 50 ** (k / 11) for k in range(12)]
    pooled: dict[str, list[float]] = {"naive": [], "bias-reduced": [], "ML uneven": []}
    print("| rate / visit frequency | naive | bias-reduced | ML, uneven intervals |")
    print("|---|---|---|---|")
    for rate in grid:
        errors: dict[str, list[float]] = {name: [] for name in pooled}
        for _ in range(histories):
            x = sum(rng.random() < -math.expm1(-rate) for _ in range(n))
            errors["naive"].append(abs(naive_rate(n, x, 1.0) - rate) / rate)
            errors["bias-reduced"].append(abs(bias_reduced_rate(n, x, 1.0) - rate) / rate)
            gaps = [rng.uniform(0.5, 1.5) for _ in range(n)]
            seen = [rng.random() < -math.expm1(-rate * t) for t in gaps]
            errors["ML uneven"].append(abs(mle_rate(gaps, seen) - rate) / rate)
        for name, values in errors.items():
            pooled[name] += values
        print(f"| {rate:.2f} | " + " | ".join(
            f"{statistics.median(v):.2f}" for v in errors.values()) + " |")
    print("| pooled | " + " | ".join(
        f"{statistics.median(v):.3f}" for v in pooled.values()) + " |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--hosts", type=int, default=12)
    parser.add_argument("--max-pages", type=int, default=60)
    parser.add_argument("--learn-days", type=int, default=14)
    parser.add_argument("--days", type=int, default=14)
    parser.add_argument("--budget", type=float, default=1.0,
                        help="fetches a simulated day per page (default 1)")
    parser.add_argument("--estimators", action="store_true",
                        help="only the estimators' errors on simulated histories (no web)")
    parser.add_argument("--types", action="store_true",
                        help="only the page types against the truth (learning visits only)")
    args = parser.parse_args(argv)
    if args.types:
        type_accuracy(args)
        return 0
    if args.estimators:
        estimators()
        return 0
    web_args = (args.seed, args.hosts, args.max_pages)
    model = SyntheticWeb(*web_args, changing=True)
    truth = [r for r in model.truth(bodies=False) if r["blocks"] and r["robots_allowed"]]
    began = time.monotonic()
    with TestWebProcess(*web_args, extra_args=("--changing",)) as web:
        pages = [Page(r["url"], r["charset"] or "utf-8", r["change_rate"]) for r in truth]
        rates = learn(web.address, pages, args.learn_days)
    types = [page.page_type for page in pages]
    for kind in ("entry", "stable", "link"):
        of_kind = [r["page_type"] == t for r, t in zip(truth, types, strict=True)
                   if r["page_type"] == kind]
        print(f"page type {kind}: {sum(of_kind)} of {len(of_kind)} classified so "
              f"({sum(of_kind) / max(len(of_kind), 1):.1%}); "
              f"{sum(t == kind for t in types)} pages classified {kind}")
    start = CLOCK_START + args.learn_days * DAY
    budget = args.budget * len(pages)
    print(f"{len(pages)} html pages, learned over {args.learn_days} days; evaluated over "
          f"{args.days} days at {budget:g} fetches a day ({args.budget:g} a page)")
    print("| policy | fetches/day | freshness | age (days) | expected freshness | "
          "expected age (days) |")
    print("|---|---|---|---|---|---|")
    for name, policy in POLICIES.items():
        frequencies = (typed_two_class_allocation(rates, types, budget) if policy is None
                       else policy(rates, budget))
        expected_f = sum(freshness(p.true_rate, f) for p, f in zip(pages, frequencies,
                                                                    strict=True)) / len(pages)
        ages = [age(p.true_rate, f) for p, f in zip(pages, frequencies, strict=True)]
        expected_a = sum(ages) / len(pages)
        with TestWebProcess(*web_args, extra_args=("--changing",)) as web:
            result = run_policy(web.address, model, pages, frequencies, start, args.days)
        print(f"| {name} | {result['fetches'] / args.days:.0f} | {result['freshness']:.3f} | "
              f"{result['age']:.3f} | {expected_f:.3f} | {expected_a:.3f} |", flush=True)
    print(f"({time.monotonic() - began:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
