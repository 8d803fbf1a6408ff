"""Site partition (docs/design.md section 9): every expected value below is worked out by hand
from the small sites written here."""

import math

import pytest

from tianwang.analysis.sitepartition import (
    Plan,
    assign,
    graph_stats,
    in_scope,
    key_paths,
    make_plan,
    measures,
    path_counts,
    simulate,
    supplementary_seeds,
)

S = "http://s.test"


def u(path: str) -> str:
    return S + path


# --- measures ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fetches", "distinct", "pages", "overlap", "coverage", "acceleration", "score"),
    [
        # N = 1: O = 0, C = 1, A = 1: 1^2 (1 - 0.8)/sqrt(max(0, 0.2)) = 0.2/sqrt(0.2) = 0.447
        ([10], 10, 10, 0.0, 1.0, 1.0, 0.447214),
        ([1], 1, 1, 0.0, 1.0, 1.0, 0.447214),
        # O = 4/12 > delta, so it divides: (8/6)^2 * 0.2 / sqrt(1/3) = 0.615840
        ([6, 6], 8, 8, 1 / 3, 1.0, 4 / 3, 0.615840),
        # coverage 8/10 = eps: score 0; below eps the max keeps it at 0
        ([6, 6], 8, 10, 1 / 3, 0.8, 10 / 6, 0.0),
        ([4, 3], 7, 10, 0.0, 0.7, 2.5, 0.0),
    ],
)
def test_measures(fetches, distinct, pages, overlap, coverage, acceleration, score) -> None:
    got = measures(fetches, distinct, pages)
    assert (got.n, got.i, got.u, got.m) == (sum(fetches), distinct, pages, max(fetches))
    assert got.overlap == pytest.approx(overlap)
    assert got.coverage == pytest.approx(coverage)
    assert got.acceleration == pytest.approx(acceleration)
    assert got.score == pytest.approx(score, abs=1e-6)


def test_score_for_one_crawler_is_the_papers_045() -> None:
    assert round(measures([37], 37, 37).score, 3) == 0.447
    assert measures([37], 37, 37).score == pytest.approx(0.2 / math.sqrt(0.2))


@pytest.mark.parametrize(
    ("fetches", "distinct", "pages", "delta"),
    [([1], 1, 0, 0.2), ([0, 0], 0, 5, 0.2), ([], 0, 5, 0.2), ([3], 3, 3, 0.0)],
)
def test_measures_reject_what_makes_no_sense(fetches, distinct, pages, delta) -> None:
    with pytest.raises(ValueError):
        measures(fetches, distinct, pages, delta=delta)


# --- key paths -----------------------------------------------------------------------------

# s.test/a: 5 urls; s.test/b: 3 (/b/x/1.html, /b/2.html, /b/); s.test/: 2 (/index.html, and
# /c, a file-like first segment with no "/" after it); s.test/d: 1.
SITE = (
    [u(f"/a/{n}.html") for n in range(5)]
    + [u("/b/x/1.html"), u("/b/2.html"), u("/b/")]
    + [u("/index.html"), u("/c")]
    + [u("/d/1.html")]
)


def test_path_counts() -> None:
    counts = path_counts(SITE + [u("/a/0.html")])  # a repeated url counts once
    assert counts == {"s.test/a": 5, "s.test/b": 3, "s.test/": 2, "s.test/d": 1}


@pytest.mark.parametrize(
    ("share", "expected"),
    [
        # 11 urls; 0.9 * 11 = 9.9: a (5), b (8), s.test/ (10) reaches it; d is left out
        (0.9, [("s.test/a", 5), ("s.test/b", 3), ("s.test/", 2)]),
        (0.5, [("s.test/a", 5), ("s.test/b", 3)]),  # 5 of 11 is under half: b is needed
        (5 / 11, [("s.test/a", 5)]),
        (8 / 11, [("s.test/a", 5), ("s.test/b", 3)]),
        (1.0, [("s.test/a", 5), ("s.test/b", 3), ("s.test/", 2), ("s.test/d", 1)]),
    ],
)
def test_key_paths(share, expected) -> None:
    assert key_paths(path_counts(SITE), share) == expected


def test_key_paths_ties_go_by_key() -> None:
    counts = {"h/z": 2, "h/b": 2, "h/a": 1, "h/c": 1}
    # 6 urls, 0.5 * 6 = 3: the two 2s (b before z), then the 1s are not needed
    assert key_paths(counts, 0.5) == [("h/b", 2), ("h/z", 2)]
    # 0.75 * 6 = 4.5: b, z (4), then h/a before h/c
    assert key_paths(counts, 0.75) == [("h/b", 2), ("h/z", 2), ("h/a", 1)]


@pytest.mark.parametrize("share", [0.0, -0.1, 1.01])
def test_key_paths_reject_a_bad_share(share) -> None:
    with pytest.raises(ValueError):
        key_paths({"h/": 1}, share)


# --- assignment ----------------------------------------------------------------------------

RANKED = [("a", 5), ("b", 3), ("c", 3), ("d", 2)]


@pytest.mark.parametrize(
    ("crawlers", "expected"),
    [
        (1, {"a": 0, "b": 0, "c": 0, "d": 0}),
        # loads: a -> 0 (5); b -> 1 (3); c -> 1 (6); d -> 0 (7)
        (2, {"a": 0, "b": 1, "c": 1, "d": 0}),
        # a -> 0 (5); b -> 1 (3); c -> 2 (3); d: 1 and 2 tie at 3, the lower index takes it
        (3, {"a": 0, "b": 1, "c": 2, "d": 1}),
        # more crawlers than key paths: the last crawler gets nothing
        (5, {"a": 0, "b": 1, "c": 2, "d": 3}),
    ],
)
def test_assign_largest_first_to_the_least_loaded(crawlers, expected) -> None:
    assert assign(RANKED, crawlers) == expected


def test_assign_rejects_no_crawlers() -> None:
    with pytest.raises(ValueError):
        assign(RANKED, 0)


# --- supplementary seeds -------------------------------------------------------------------

K = [u("/k/1.html"), u("/k/2.html"), u("/k/3.html"), u("/k/4.html"), u("/k/5.html")]
IN_DEGREE = {K[0]: 5, K[1]: 5, K[2]: 7, K[3]: 5, K[4]: 1, u("/other/1.html"): 99}
DEPTH = {K[0]: 3, K[1]: 1, K[2]: 4, K[3]: 1, u("/other/1.html"): 0}


@pytest.mark.parametrize(
    ("count", "expected"),
    [
        # in-degree first (K3: 7), then the smallest depth among the 5s (K2 and K4 at 1), then
        # the url (K2 < K4); K1 (depth 3) after them; K5 (in-degree 1, no depth) last
        (2, [K[2], K[1]]),
        (3, [K[2], K[1], K[3]]),
        (5, [K[2], K[1], K[3], K[0], K[4]]),
    ],
)
def test_supplementary_seeds_tie_rules(count, expected) -> None:
    urls = K + [u("/other/1.html")]  # another key path's url is never a seed here
    assert supplementary_seeds(urls, "s.test/k", IN_DEGREE, DEPTH, count) == expected


def test_a_url_with_no_known_depth_ranks_after_reached_ones() -> None:
    urls = [u("/k/a.html"), u("/k/b.html")]
    assert supplementary_seeds(urls, "s.test/k", {}, {u("/k/b.html"): 9}) == [
        u("/k/b.html"),
        u("/k/a.html"),
    ]


# --- the scope rule ------------------------------------------------------------------------

SCOPE_PLAN = Plan(2, {"s.test/a": 0, "s.test/b": 1}, ((), ()))


@pytest.mark.parametrize(
    ("crawler", "url", "allowed"),
    [
        (0, u("/a/1.html"), True),  # its own key path
        (0, u("/b/1.html"), False),  # another crawler's key path
        (0, u("/b"), True),  # no slash after b: path key s.test/, not a key path
        (0, u("/c/1.html"), True),  # not a key path: anyone may fetch it
        (0, u("/"), True),
        (1, u("/a/x/y.html"), False),
        (1, u("/b/x/y.html"), True),
        (1, "http://other.test/a/1.html", True),  # path keys carry the host
    ],
)
def test_scope_rule(crawler, url, allowed) -> None:
    assert in_scope(SCOPE_PLAN, crawler, url) is allowed


# --- simulation on a three-directory site --------------------------------------------------

H = u("/")
A1, A2, A3, A4 = (u(f"/a/{n}.html") for n in range(1, 5))
B1, B2, B3 = (u(f"/b/{n}.html") for n in range(1, 4))
C1, C2, C3 = (u(f"/c/{n}.html") for n in range(1, 4))
GRAPH = {
    H: [A1, B1, C1],
    A1: [A2, A3],
    A2: [A4],
    A3: [B1],
    A4: [A1],
    B1: [B2, B3, A1],
    B2: [B1],
    B3: [C2, C3],
    C1: [C2],
    C2: [C1, A2],
}
# 11 pages: a 4, b 3, c 3, s.test/ 1. 0.9 * 11 = 9.9: a (4), b (7), c (10): the key paths.
# In-degrees: A1 3 (H, B1, A4), A2 2 (A1, C2), A3 1, A4 1, B1 3 (H, A3, B2), B2 1, B3 1,
# C1 2 (H, C2), C2 2 (C1, B3), C3 1 (B3). Depths: A1 B1 C1 1; A2 A3 B2 B3 C2 2; A4 C3 3.
# Seeds: a: A1 (3), A2 (2); b: B1 (3), then B2 and B3 tie (1, depth 2): B2 by url;
# c: C1 and C2 tie at 2, C1 is shallower: C1, C2.


def test_graph_stats() -> None:
    pages, in_degree, depth = graph_stats(GRAPH, H)
    assert len(pages) == 11
    assert in_degree == {A1: 3, A2: 2, A3: 1, A4: 1, B1: 3, B2: 1, B3: 1, C1: 2, C2: 2, C3: 1}
    assert depth == {
        H: 0, A1: 1, B1: 1, C1: 1, A2: 2, A3: 2, B2: 2, B3: 2, C2: 2, A4: 3, C3: 3,
    }


def _plan(crawlers: int) -> Plan:
    pages, in_degree, depth = graph_stats(GRAPH, H)
    return make_plan(pages, in_degree, depth, crawlers)


def test_plan_on_the_hand_graph() -> None:
    # N = 2: a -> 0 (4); b -> 1 (3); c -> 1 (6)
    two = _plan(2)
    assert two.owner == {"s.test/a": 0, "s.test/b": 1, "s.test/c": 1}
    assert two.seeds == ((A1, A2), (B1, B2, C1, C2))
    three = _plan(3)
    assert three.owner == {"s.test/a": 0, "s.test/b": 1, "s.test/c": 2}
    assert three.seeds == ((A1, A2), (B1, B2), (C1, C2))


@pytest.mark.parametrize(
    ("crawlers", "n", "i", "m", "overlap", "coverage", "acceleration", "score"),
    [
        # one crawler reaches all 11 pages from H
        (1, 11, 11, 11, 0.0, 1.0, 1.0, 0.2 / math.sqrt(0.2)),
        # crawler 0 {H, A1, A2, A3, A4} (B1 and C1 out of scope), 5;
        # crawler 1 {H, B1, B2, B3, C1, C2, C3} (A1 and A2 out), 7.
        # N 12, I 11, M 7: O 1/12, C 1, A 11/7, score (11/7)^2 * 0.2 / sqrt(0.2)
        (2, 12, 11, 7, 1 / 12, 1.0, 11 / 7, (11 / 7) ** 2 * 0.2 / math.sqrt(0.2)),
        # crawler 0 as above, 5; crawler 1 {H, B1, B2, B3} (C2, C3 and A1 out), 4;
        # crawler 2 {H, C1, C2} (A2 out; C3 is linked only from B3, which it may not fetch), 3.
        # N 12, I 10 (C3 missed), M 5: O 2/12 < delta, C 10/11, A 11/5,
        # score 2.2^2 (10/11 - 0.8)/sqrt(0.2) = 4.84 * 1.2/11 / sqrt(0.2) = 0.528/sqrt(0.2)
        (3, 12, 10, 5, 2 / 12, 10 / 11, 11 / 5, 0.528 / math.sqrt(0.2)),
    ],
)
def test_simulate_the_hand_graph(
    crawlers, n, i, m, overlap, coverage, acceleration, score
) -> None:
    got = simulate(GRAPH, H, _plan(crawlers))
    assert (got.n, got.i, got.u, got.m) == (n, i, 11, m)
    assert got.overlap == pytest.approx(overlap)
    assert got.coverage == pytest.approx(coverage)
    assert got.acceleration == pytest.approx(acceleration)
    assert got.score == pytest.approx(score)


def test_every_crawler_fetches_the_homepage_even_when_its_key_is_anothers() -> None:
    # s.test/ holds 3 of 4 pages: the only key path at 0.5, owned by crawler 0.
    graph = {H: [u("/x.html"), u("/y.html")], u("/x.html"): [u("/z/1.html")]}
    pages, in_degree, depth = graph_stats(graph, H)
    plan = make_plan(pages, in_degree, depth, 2, share=0.5)
    assert plan.owner == {"s.test/": 0}
    assert plan.seeds == ((u("/x.html"), u("/y.html")), ())
    got = simulate(graph, H, plan)
    # crawler 0: H, x, y, z/1 (4); crawler 1: H only (x and y are crawler 0's): N 5, I 4, M 4
    assert (got.n, got.i, got.u, got.m) == (5, 4, 4, 4)
