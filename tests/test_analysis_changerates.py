"""Change-rate estimators and revisit policies on simulated histories (no crawl)."""

from __future__ import annotations

import math
import random
import statistics

import pytest

from tianwang.analysis.changerates import (
    age,
    bias_reduced_rate,
    change_probabilities,
    classes,
    estimate,
    freshness,
    mle_interval,
    mle_rate,
    naive_rate,
    optimal_allocation,
    rate_interval,
    two_class_allocation,
    two_class_frequencies,
    uniform_allocation,
)

N = 20  # visits per history, as the issue asks
RATES = [0.1 * 50 ** (k / 11) for k in range(12)]  # 0.1x .. 5x the visit frequency


def poisson_history(rng: random.Random, rate: float, intervals: list[float]) -> list[bool]:
    """Whether each visit interval saw at least one change of a Poisson process."""
    return [rng.random() < -math.expm1(-rate * t) for t in intervals]


def relative_errors(estimator, histories: int = 400, seed: int = 1) -> dict[float, list[float]]:
    rng = random.Random(seed)
    errors: dict[float, list[float]] = {}
    for rate in RATES:
        errors[rate] = []
        for _ in range(histories):
            changes = sum(poisson_history(rng, rate, [1.0] * N))
            errors[rate].append(abs(estimator(N, changes, 1.0) - rate) / rate)
    return errors


def test_binomial_probabilities_are_the_seed_formula() -> None:
    b = 0.7
    probs = change_probabilities(N, b)
    p = math.exp(-b)
    assert probs[3] == pytest.approx(math.comb(N, 3) * (1 - p) ** 3 * p ** 17)
    assert sum(probs) == pytest.approx(1.0)
    mean = sum(i * q for i, q in enumerate(probs))
    assert mean == pytest.approx(N * (1 - p))


def test_bias_reduced_beats_naive_over_the_range() -> None:
    reduced, naive = relative_errors(bias_reduced_rate), relative_errors(naive_rate)
    pooled_reduced = statistics.median(e for v in reduced.values() for e in v)
    pooled_naive = statistics.median(e for v in naive.values() for e in v)
    assert pooled_reduced < pooled_naive / 1.5
    for rate in RATES:
        if rate >= 1:  # where several changes fall in one interval, naive cannot keep up
            assert statistics.median(reduced[rate]) < statistics.median(naive[rate])


def test_bias_reduced_accuracy_for_twenty_visits() -> None:
    """The typical estimate is within 20% of the true rate from 0.1x to 4x; over the whole
    0.1x..5x range the median error of one history is about 24% (RESULTS: the 20% the issue
    asks is below what 20 yes/no observations allow at the range's ends)."""
    rng = random.Random(7)
    pooled = []
    for rate in RATES:
        estimates = []
        for _ in range(1000):
            changes = sum(poisson_history(rng, rate, [1.0] * N))
            estimates.append(bias_reduced_rate(N, changes, 1.0))
        pooled += [abs(e - rate) / rate for e in estimates]
        if rate <= 4:
            assert abs(statistics.median(estimates) - rate) / rate <= 0.2, rate
    assert statistics.median(pooled) <= 0.26


def test_mle_on_even_intervals_is_the_closed_form() -> None:
    # With equal intervals t the likelihood's maximum is -ln(1 - X/n)/t.
    changed = [True] * 7 + [False] * 13
    assert mle_rate([2.0] * N, changed) == pytest.approx(-math.log(1 - 7 / N) / 2.0, rel=1e-6)
    assert mle_rate([1.0] * 5, [False] * 5) == 0.0
    assert math.isfinite(mle_rate([1.0] * 5, [True] * 5))


def test_mle_on_uneven_intervals_tracks_the_rate() -> None:
    rng = random.Random(3)
    errors = []
    for rate in RATES:
        for _ in range(200):
            intervals = [rng.uniform(0.3, 1.7) for _ in range(N)]
            changed = poisson_history(rng, rate, intervals)
            errors.append(abs(mle_rate(intervals, changed) - rate) / rate)
    assert statistics.median(errors) <= 0.3


@pytest.mark.parametrize("rate", [0.3, 1.0, 2.5])
def test_confidence_intervals_cover(rate: float) -> None:
    rng = random.Random(int(rate * 100))
    wilson = mle = 0
    trials = 400
    for _ in range(trials):
        intervals = [rng.uniform(0.5, 1.5) for _ in range(N)]
        changed = poisson_history(rng, rate, intervals)
        low, high = mle_interval(intervals, changed)
        mle += low <= rate <= high
        even = poisson_history(rng, rate, [1.0] * N)
        low, high = rate_interval(N, sum(even), 1.0)
        wilson += low <= rate <= high
    assert wilson / trials >= 0.88 and mle / trials >= 0.85


def test_estimate_from_visit_times() -> None:
    found = estimate([0.0, 1.0, 1.0, 3.0], [False, True, True])
    assert found.visits == 4 and found.changes == 2  # the same-instant visit is merged
    assert found.low <= found.rate <= found.high
    assert estimate([5.0], []).rate == 0.0


def test_freshness_and_age_limits() -> None:
    assert freshness(0.0, 1.0) == 1.0 and age(0.0, 1.0) == 0.0
    assert freshness(1.0, 1000.0) == pytest.approx(1.0, abs=1e-3)
    assert freshness(1.0, 1.0) == pytest.approx(1 - math.exp(-1))
    assert age(1.0, 1000.0) == pytest.approx(0.0, abs=1e-3)
    # revisited rarely: stale almost at once, so half an interval old on average
    assert age(1.0, 1e-6) == pytest.approx(0.5e6, rel=1e-3)


def test_two_classes() -> None:
    rates = [0.1, 0.2, 3.0, 5.0]  # mean 2.075
    assert classes(rates) == [2, 2, 1, 1]
    assert two_class_frequencies(rates, 0.5, 3.0) == [0.5, 0.5, 3.0, 3.0]
    allocated = two_class_allocation(rates, 10.0)
    assert sum(allocated) == pytest.approx(10.0)
    assert allocated[0] == allocated[1] < allocated[2] == allocated[3]


def test_optimal_allocation_beats_the_others() -> None:
    rng = random.Random(5)
    rates = [0.0] * 20 + [math.exp(rng.uniform(math.log(0.02), math.log(4))) for _ in range(80)]
    budget = 30.0
    totals = {}
    for name, policy in (("uniform", uniform_allocation), ("two", two_class_allocation),
                         ("optimal", optimal_allocation)):
        frequencies = policy(rates, budget)
        assert sum(frequencies) == pytest.approx(budget)
        totals[name] = sum(freshness(r, f) for r, f in zip(rates, frequencies, strict=True))
    assert totals["optimal"] > totals["uniform"] and totals["optimal"] > totals["two"]
    optimal = optimal_allocation(rates, budget)
    assert all(f == 0 for f in optimal[:20])  # never-changing pages need no fetch
    assert optimal[rates.index(max(rates))] < max(optimal)  # the fastest is not the most visited
