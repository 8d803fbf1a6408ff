"""The experiment's pieces on hand-made sites: the url-hash crawler, the spread over sites,
the paper's findings as tests, and the per-site statistics."""

from __future__ import annotations

import pytest

from tianwang.analysis.partition_experiment import (
    FINDINGS,
    SiteRun,
    Spread,
    grows,
    hash_share,
    inner_peak,
    site_stats,
    spread,
    trends,
)
from tianwang.analysis.sitegraph import SiteGraph
from tianwang.analysis.sitepartition import measures

H, X, Y, Z, W = ("http://s.test/", "http://s.test/a/x.html", "http://s.test/a/y.html",
                 "http://s.test/b/z.html", "http://s.test/b/w.html")
LINKS = {H: [X, Z], X: [Y, Z], Y: [W], Z: [W], W: []}


@pytest.mark.parametrize(
    ("owners", "crawler", "expected"),
    [
        # crawler 0 owns X and W: H, then X (Z is 1's, dropped), then nothing of X's is its
        # own (Y and Z are 1's): W is only linked from Y and Z, so it is never reached
        ({H: 1, X: 0, Y: 1, Z: 1, W: 0}, 0, {H, X}),
        # crawler 1: H (every crawler's seed), Z (its own), then W? W is 0's: not followed
        ({H: 1, X: 0, Y: 1, Z: 1, W: 0}, 1, {H, Z}),
        ({H: 0, X: 0, Y: 0, Z: 0, W: 0}, 0, {H, X, Y, Z, W}),
    ],
)
def test_url_hash_crawler_follows_only_its_own_urls(owners, crawler, expected) -> None:
    assert hash_share(LINKS, H, owners, crawler) == expected


def test_spread_of_one_and_of_five() -> None:
    assert spread([0.3]) == Spread(0.3, 0.3, 0.3)
    # inclusive quartiles of 1..5: 2, 3, 4
    assert spread([5.0, 1.0, 4.0, 2.0, 3.0]) == Spread(2.0, 3.0, 4.0)


@pytest.mark.parametrize(
    ("label", "value", "holds"),
    [
        ("overlap <= 10% at N=2", 0.10, True),
        ("overlap <= 10% at N=2", 0.1001, False),
        ("coverage > 90% at N=2", 0.90, False),  # strictly above
        ("coverage > 90% at N=2", 0.9001, True),
        ("acceleration 1.5-2 at N=2", 1.5, True),
        ("acceleration 1.5-2 at N=2", 2.0001, False),
        ("acceleration 2.2-2.6 at N=3", 11 / 5, True),
        ("score > 0.447 at N=2", 0.2 / 0.2 ** 0.5, False),  # one crawler's score is not above
    ],
)
def test_findings_bounds(label, value, holds) -> None:
    finding = next(f for f in FINDINGS if f.label == label)
    assert finding.holds(value) is holds


def test_site_stats() -> None:
    site = SiteGraph("s.test", H, LINKS, {}, 0)
    stats = site_stats(site)
    # own path key: H (s.test/) 0/2, X (a) 1/2 (Y), Y 0/1, Z (b) 1/1 (W); W has no links
    assert stats.linking_pages == 4
    assert stats.same_key_sum == pytest.approx(1.5)
    # path keys s.test/ 1, a 2, b 2; 0.9 * 5 = 4.5 needs a, b and s.test/: 3 of 3
    assert (stats.path_keys, stats.key_paths, stats.largest) == (3, 3, 2)
    assert stats.largest_share == pytest.approx(0.4)


# --- the two trends over N (seed 002 on its Figure 4) --------------------------------------


@pytest.mark.parametrize(("values", "expected"), [
    ([0, 1, 1, 3], True),
    ([0, 0, 0], False),  # flat: no more sites fail
    ([1, 2, 1, 3], False),  # falls once
    ([2, 3], True),
])
def test_grows(values, expected) -> None:
    assert grows(values) is expected


@pytest.mark.parametrize(("values", "expected"), [
    ([1.0, 3.0, 2.0], 1),
    ([1.0, 2.0, 4.0, 3.0, 0.5], 2),
    ([1.0, 2.0, 3.0], None),  # still rising at the last N
    ([3.0, 2.0, 1.0], None),  # falling from the first
    ([2.0, 2.0, 2.0], None),  # flat
    ([1.0, None, 2.0, 1.0], None),  # an N where no site passes
])
def test_inner_peak(values, expected) -> None:
    assert inner_peak(values) == expected


def run_of(host: str, scores: dict[int, tuple[int, int]]) -> SiteRun:
    """A 10-page site whose key-path run at N is given as (busiest crawler's fetches, distinct
    pages): every crawler fetching M, so overlap (N M - I)/(N M)."""
    return SiteRun(host, 10, {("key-path", n): measures([m] * n, i, 10)
                              for n, (m, i) in scores.items()})


def test_trends_on_hand_made_runs() -> None:
    # site p: N=2: M 5, all 10 (A 2, O 0 -> delta: 4 * 0.2/sqrt(0.2) = 1.789);
    #         N=3: M 4, 10 of 12 (A 2.5, O 1/6 -> delta: 6.25 * 0.447 = 2.795);
    #         N=4: M 4, 10 of 16 (A 2.5, O 6/16: 6.25 * 0.2/sqrt(0.375) = 2.041): a peak at 3.
    # site f: N=2 passes (as p), N=3 and N=4 reach 7 of 10 pages (C 0.7 < 0.8): fail.
    runs = [run_of("p", {1: (10, 10), 2: (5, 10), 3: (4, 10), 4: (4, 10)}),
            run_of("f", {1: (10, 10), 2: (5, 10), 3: (4, 7), 4: (4, 7)})]
    failing, scores = trends(runs, "key-path", [1, 2, 3, 4])
    assert failing.crawlers == (2, 3, 4)  # N = 1 left out, as the paper's figure
    assert failing.values == (0, 1, 1)
    assert failing.holds is True
    assert scores.values == pytest.approx((4 * 0.2 / 0.2 ** 0.5, 6.25 * 0.2 / 0.2 ** 0.5,
                                           6.25 * 0.2 / 0.375 ** 0.5))
    assert (scores.holds, scores.peak) == (True, 3)
    # two N >= 2 are too few to speak of a trend
    assert [t.holds for t in trends(runs, "key-path", [1, 2, 3])] == [None, None]
