"""`tianwang hosts filter D3 -o D4 [--spam-list FILE] [--min-pages 10]` (seed 004's D4, spam).

Drops, in this order, each site for the first reason that applies (seed 004 sections 3.2
step 4 and 3.3; the host rules are tianwang/hosts.py's, as the crawl's host filter uses):
  ip       an IP literal
  port     a port other than the scheme's default (80; 443 for https)
  spam     a host on the spam list (a domain with its subdomains, or a regex; --spam-list)
  digit    a first label that starts with a digit
  family   a host of an outlier family (below)
  small    fewer than --min-pages pages (default 10)
  malformed  a site whose host the URL parser refuses (D1 should have removed it)

Outlier families. Seed 004 saw points standing far above the site-size distribution and
found behind them many hosts of one domain, alike in size: generated sites. The rule here:
for each registered domain D with n >= --family-min hosts left after the rules above it,
and for each window [s, 1.5 s] of page counts starting at one of D's hosts, let k be D's
hosts in the window and p the share of all other domains' hosts in it, plus one smoothing
host ((others in window + 1) / (all others + 2)). Were D's hosts sized like everyone's, k
would be Binomial(n, p). D is a family when in some window k >= --family-min and the
Chernoff bound of that tail, exp(-n KL(k/n || p)), is below --family-p (default 1e-6):
far more hosts of similar size than the distribution predicts. Every host of D is dropped.
This runs in rounds: the families found leave "all other domains" and the test is run
again, until a round finds none (two families of one size do not hide each other).
A real multi-host domain (a university's www, news, lib, ...) spreads over sizes as other
sites do and stays.

Registered domain, without the network: the public suffix is the last label, or the last
two when the top level is a two-letter country code and the second level is one of the
generic ones (com, net, org, gov, edu, ac, co, mil, int, or, ne, go: com.cn, edu.cn, co.uk,
com.tw) or, under .cn, a province code (bj.cn, sh.cn, ...); the registered domain is the
suffix and one label more (news.pku.edu.cn -> pku.edu.cn).

Input: a site list whose first two columns are `<site>\\t<pages>` (D3; D1 and D2 do too).
Output, D4: a plain site list `<site>\\t<pages>`, sorted (the crawl's seed list), and the
removals file (default D4.removed) `<site>\\t<pages>\\t<reason>`; written whole or not at all.
Stdout: the count line (every reason, zeros too), then one line per family found.
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from tianwang.collection.hosttable import TableError, read_rows
from tianwang.collection.sitelist import split_site
from tianwang.hosts import HostRules, SpamList, SpamListError
from tianwang.progress import Progress

REASONS = ("ip", "port", "spam", "digit", "family", "small", "malformed")
GENERIC_SECOND = frozenset({"com", "net", "org", "gov", "edu", "ac", "co", "mil", "int", "or",
                            "ne", "go"})
CN_PROVINCES = frozenset({
    "bj", "sh", "tj", "cq", "he", "sx", "nm", "ln", "jl", "hl", "js", "zj", "ah", "fj", "jx",
    "sd", "ha", "hb", "hn", "gd", "gx", "hi", "sc", "gz", "yn", "xz", "sn", "gs", "qh", "nx",
    "xj", "tw", "hk", "mo",
})
WINDOW = 1.5  # "similar size": page counts within this factor of each other
# The defaults of the filter, and of `tianwang hosts filter`'s options (said once, here).
MIN_PAGES = 10  # seed 004: a site with fewer than 10 pages is no real site
FAMILY_MIN = 10  # hosts of similar size a domain needs before it can be a family
FAMILY_P = 1e-6  # the tail bound below which a domain's hosts are a family


def registered_domain(host: str) -> str:
    """The public suffix and one label more (module docstring); the host if that is all."""
    labels = host.rstrip(".").split(".")
    suffix = 1
    if len(labels) >= 3 and len(labels[-1]) == 2 and (
        labels[-2] in GENERIC_SECOND or (labels[-1] == "cn" and labels[-2] in CN_PROVINCES)
    ):
        suffix = 2
    return ".".join(labels[-(suffix + 1):])


@dataclass(frozen=True, slots=True)
class Family:
    """Why a domain is an outlier family: its densest window against the expectation."""

    domain: str
    hosts: int
    in_window: int
    low: int
    high: float
    expected: float
    bound: float

    def line(self) -> str:
        return (f"family {self.domain}: {self.in_window} of its {self.hosts} hosts have "
                f"{self.low}..{self.high:g} pages, {self.expected:.2f} expected "
                f"(tail bound {self.bound:.1e})")


def kl(q: float, p: float) -> float:
    """Kullback-Leibler divergence of Bernoulli(q) from Bernoulli(p), 0 < p < 1."""
    total = q * math.log(q / p) if q > 0 else 0.0
    if q < 1:
        total += (1 - q) * math.log((1 - q) / (1 - p))
    return total


def outlier_families(sizes: dict[str, list[int]], min_hosts: int = FAMILY_MIN,
                     alpha: float = FAMILY_P) -> dict[str, Family]:
    """The domains (keys of sizes: domain -> its hosts' page counts) that are families.

    Rounds: the families found in one round leave the distribution of the next, so one
    family does not hide another of the same sizes by swelling "everyone's" share there.
    """
    found: dict[str, Family] = {}
    while True:
        everyone = sorted(s for d, group in sizes.items() if d not in found for s in group)
        new = {}
        for domain, group in sizes.items():
            if domain not in found and len(group) >= min_hosts:
                family = _densest(domain, sorted(group), everyone, min_hosts, alpha)
                if family is not None:
                    new[domain] = family
        if not new:
            return found
        found |= new


def _densest(domain: str, own: list[int], everyone: list[int], min_hosts: int,
             alpha: float) -> Family | None:
    n, others = len(own), len(everyone) - len(own)
    best: Family | None = None
    for i, low in enumerate(own):
        high = low * WINDOW
        k = bisect_right(own, high) - i
        if k < min_hosts:
            continue
        total = bisect_right(everyone, high) - bisect_left(everyone, low)
        p = (total - k + 1) / (others + 2)
        if k / n <= p:
            continue
        bound = math.exp(-n * kl(k / n, p))
        if bound < alpha and (best is None or bound < best.bound):
            best = Family(domain, n, k, low, high, n * p, bound)
    return best


@dataclass
class Filtered:
    kept: list[tuple[str, int]]
    removed: list[tuple[str, int, str]]
    families: dict[str, Family]

    def counts(self) -> Counter[str]:
        return Counter(reason for _s, _p, reason in self.removed)


def filter_sites(rows: Iterable[tuple[str, int]], spam: SpamList, min_pages: int = MIN_PAGES,
                 family_min: int = FAMILY_MIN, family_p: float = FAMILY_P) -> Filtered:
    rules = HostRules(spam, drop_other_ports=True, drop_digit_hosts=True)
    removed: list[tuple[str, int, str]] = []
    left: list[tuple[str, int, str]] = []  # site, pages, registered domain
    for site, pages in rows:
        reason = rules.reason(site)
        if reason is not None:
            removed.append((site, pages, reason))
        else:
            left.append((site, pages, registered_domain(split_site(site)[1])))
    sizes: dict[str, list[int]] = {}
    for _site, pages, domain in left:
        sizes.setdefault(domain, []).append(pages)
    families = outlier_families(sizes, family_min, family_p)
    kept = []
    for site, pages, domain in left:
        if domain in families:
            removed.append((site, pages, "family"))
        elif pages < min_pages:
            removed.append((site, pages, "small"))
        else:
            kept.append((site, pages))
    return Filtered(sorted(kept), sorted(removed), families)


def count_line(result: Filtered, total: int) -> str:
    counts = result.counts()
    shown = [r for r in REASONS if r != "malformed" or counts[r]]
    parts = ", ".join(f"{reason} {counts[reason]}" for reason in shown)
    return (f"D4: {len(result.kept)} sites of {total} in D3; {len(result.removed)} removed: "
            f"{parts}")


# -- the command -------------------------------------------------------------------------


def load_spam(path: str | None) -> SpamList:
    if not path:
        return SpamList()
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
        return SpamList.from_lines(lines)
    except (OSError, UnicodeDecodeError) as exc:
        raise TableError(f"spam list {path}: {getattr(exc, 'strerror', None) or exc}") from None
    except SpamListError as exc:
        raise TableError(f"spam list {path}: {exc}") from None


def read_sites(path: str, progress: Progress | None = None) -> list[tuple[str, int]]:
    rows, seen = [], set()
    for number, parts in enumerate(read_rows(path, ("site", "pages"), progress), 1):
        if parts[0] in seen:
            raise TableError(f"{path}: line {number}: site {parts[0]} written twice")
        seen.add(parts[0])
        rows.append((parts[0], int(parts[1])))
    return rows
