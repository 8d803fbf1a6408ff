"""Change rates of pages and how often to revisit them (seed 001 section 5, docs/design.md 8).

Pure python. A page changes as a Poisson process of rate lam (changes a day); a crawler
visits it every t days (frequency f = 1/t) and sees only whether it changed since the last
visit. With b = lam/f, P(no change in an interval) = e^-b and the number X of visits (of n)
that saw a change is Binomial(n, 1 - e^-b).

Estimators, from Cho and Garcia-Molina, "Estimating frequency of change" (2003):
- naive: lam = X/T, T = n t (it cannot see two changes in one interval, so it is low);
- bias-reduced: r = -ln((n - X + 0.5)/(n + 0.5)), lam = r f (nearly unbiased for b < 5);
- interval-aware maximum likelihood for visits at uneven intervals.

Policies, from Cho and Garcia-Molina, "Synchronizing a database to improve freshness" (2000):
the seed's two classes (F1 at or above the mean rate, F2 below, each revisited at its class's
mean rate) and the allocation of a fixed fetch budget that maximizes the summed freshness.
Rates and frequencies share one time unit (days, here), whatever it is.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist

# --- the model ------------------------------------------------------------------------------


def p_unchanged(b: float) -> float:
    """P(no change in one visit interval) for b = change rate / visit frequency."""
    return math.exp(-b)


def change_probabilities(n: int, b: float) -> list[float]:
    """P(X = i) for i = 0..n: X ~ Binomial(n, 1 - e^-b), the seed's formula."""
    if n < 0 or b < 0:
        raise ValueError(f"need n >= 0 and b >= 0, got n={n}, b={b}")
    p = p_unchanged(b)
    return [math.comb(n, i) * (1 - p) ** i * p ** (n - i) for i in range(n + 1)]


# --- estimators for even intervals ----------------------------------------------------------


def _check(n: int, changes: int, interval: float) -> None:
    if n < 1 or not 0 <= changes <= n or interval <= 0:
        raise ValueError(f"need n >= 1, 0 <= X <= n, interval > 0; got {n}, {changes}, {interval}")


def naive_rate(n: int, changes: int, interval: float) -> float:
    """X / T: changes seen over the time watched (T = n intervals)."""
    _check(n, changes, interval)
    return changes / (n * interval)


def bias_reduced_rate(n: int, changes: int, interval: float) -> float:
    """r f with r = -ln((n - X + 0.5)/(n + 0.5)); finite even when every visit saw a change."""
    _check(n, changes, interval)
    return -math.log((n - changes + 0.5) / (n + 0.5)) / interval


def rate_interval(
    n: int, changes: int, interval: float, level: float = 0.95
) -> tuple[float, float]:
    """A confidence interval for the rate: Wilson's interval for p = 1 - e^-b, mapped to rates.

    Wilson's, not the normal one: it stays inside [0, 1] at X = 0 and X = n, where the
    normal interval collapses to a point.
    """
    _check(n, changes, interval)
    z = NormalDist().inv_cdf(0.5 + level / 2)
    share = changes / n
    centre = (share + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(share * (1 - share) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    low, high = max(0.0, centre - half), min(1.0, centre + half)
    return _rate_of(low, interval), _rate_of(high, interval)


def _rate_of(p_change: float, interval: float) -> float:
    return math.inf if p_change >= 1 else -math.log(1 - p_change) / interval


# --- uneven intervals -----------------------------------------------------------------------


def mle_rate(intervals: Sequence[float], changed: Sequence[bool]) -> float:
    """The maximum likelihood rate from visits at uneven intervals.

    The log likelihood is sum over changed intervals of ln(1 - e^(-lam t)) minus lam times
    the unchanged time; its derivative falls from +inf to -(unchanged time), so one root,
    found by bisection on a log scale. With no change it is 0. With every interval changed
    the likelihood has no maximum; then, as the bias-reduced estimator does, half an
    unchanged interval (of the mean length) is added, which keeps the estimate finite.
    """
    if len(intervals) != len(changed) or not intervals:
        raise ValueError("need one changed flag per interval, and at least one interval")
    if any(t <= 0 for t in intervals):
        raise ValueError("intervals must be > 0")
    hit = [t for t, c in zip(intervals, changed, strict=True) if c]
    quiet = sum(t for t, c in zip(intervals, changed, strict=True) if not c)
    if not hit:
        return 0.0
    if quiet == 0:
        quiet = 0.5 * sum(intervals) / len(intervals)
    return _root(lambda lam: _score(lam, hit) - quiet, 1e-9 / max(hit), 1e3 / min(hit))


def _score(lam: float, hit: Sequence[float]) -> float:
    """d/dlam of sum ln(1 - e^(-lam t)) over the changed intervals."""
    return sum(t * math.exp(-lam * t) / -math.expm1(-lam * t) for t in hit)


def _root(fn, low: float, high: float, steps: int = 200) -> float:
    """Root of a decreasing function by bisection on a log scale (low and high > 0)."""
    if fn(high) >= 0:
        return high
    if fn(low) <= 0:
        return low
    for _ in range(steps):
        mid = math.sqrt(low * high)
        if fn(mid) > 0:
            low = mid
        else:
            high = mid
        if high / low < 1 + 1e-12:
            break
    return math.sqrt(low * high)


def mle_interval(
    intervals: Sequence[float], changed: Sequence[bool], level: float = 0.95
) -> tuple[float, float]:
    """A confidence interval for mle_rate from the Fisher information, clipped at 0."""
    lam = mle_rate(intervals, changed)
    hit = [t for t, c in zip(intervals, changed, strict=True) if c]
    if lam == 0:  # no change seen: the upper end where seeing none is still 1 - level likely
        return 0.0, -math.log(1 - level) / sum(intervals)
    info = sum(t * t * math.exp(-lam * t) / (-math.expm1(-lam * t)) ** 2 for t in hit)
    half = NormalDist().inv_cdf(0.5 + level / 2) / math.sqrt(info)
    return max(0.0, lam - half), lam + half


@dataclass(frozen=True)
class Estimate:
    """A url's change rate from its visit history, with its confidence interval."""

    rate: float
    low: float
    high: float
    visits: int  # visits in the history (one more than the intervals)
    changes: int  # intervals that saw a change


def estimate(times: Sequence[float], changed: Sequence[bool], level: float = 0.95) -> Estimate:
    """The rate of one url: times of its visits (sorted) and, per visit after the first,
    whether it saw a change. Visits at the same instant are merged."""
    intervals, flags = [], []
    for before, after, flag in zip(times, times[1:], changed, strict=False):
        if after > before:
            intervals.append(after - before)
            flags.append(flag)
        elif flag and flags:
            flags[-1] = True
    if not intervals:
        return Estimate(0.0, 0.0, math.inf, len(times), 0)
    low, high = mle_interval(intervals, flags, level)
    return Estimate(mle_rate(intervals, flags), low, high, len(times), sum(flags))


# --- freshness, age and revisit policies ----------------------------------------------------


def freshness(rate: float, frequency: float) -> float:
    """Time-averaged freshness of a page of this rate revisited at this frequency."""
    if rate == 0:
        return 1.0
    if frequency == 0:
        return 0.0
    r = rate / frequency
    return -math.expm1(-r) / r


def age(rate: float, frequency: float) -> float:
    """Time-averaged age (time since the copy went stale, 0 while fresh)."""
    if rate == 0:
        return 0.0
    if frequency == 0:
        return math.inf
    r = rate / frequency
    return (0.5 - 1 / r + (-math.expm1(-r)) / (r * r)) / frequency


def classes(rates: Sequence[float]) -> list[int]:
    """The seed's classes: 1 (F1) for a rate >= the mean rate, 2 (F2) for the rest."""
    mean = sum(rates) / len(rates) if rates else 0.0
    return [1 if rate >= mean else 2 for rate in rates]


def two_class_frequencies(
    rates: Sequence[float], min_frequency: float, max_frequency: float
) -> list[float]:
    """Each url revisited at its class's mean rate, clamped to [min, max] frequency."""
    if not 0 < min_frequency <= max_frequency:
        raise ValueError("need 0 < min_frequency <= max_frequency")
    means = _class_means(rates)
    return [min(max(means[c], min_frequency), max_frequency) for c in classes(rates)]


def _class_means(rates: Sequence[float]) -> dict[int, float]:
    grouped: dict[int, list[float]] = {1: [], 2: []}
    for rate, cls in zip(rates, classes(rates), strict=True):
        grouped[cls].append(rate)
    return {c: (sum(v) / len(v) if v else 0.0) for c, v in grouped.items()}


def uniform_allocation(rates: Sequence[float], budget: float) -> list[float]:
    """Every url at the same frequency: budget fetches per time unit in all."""
    return [budget / len(rates)] * len(rates) if rates else []


def two_class_allocation(rates: Sequence[float], budget: float) -> list[float]:
    """The seed's two classes at a fixed budget: each class's frequency proportional to its
    mean rate, scaled so the fetches add up to the budget (a class of rate 0 shares the
    budget evenly with the other when both are 0)."""
    if not rates:
        return []
    means, cls = _class_means(rates), classes(rates)
    weights = [means[c] for c in cls]
    total = sum(weights)
    if total == 0:
        return uniform_allocation(rates, budget)
    return [budget * w / total for w in weights]


def optimal_allocation(rates: Sequence[float], budget: float) -> list[float]:
    """Frequencies maximizing the summed freshness with sum = budget (Cho, Garcia-Molina 2000).

    At the optimum every visited page has the same marginal freshness mu:
    dF/df = (1 - (1 + r) e^-r) / lam = mu with r = lam/f. That is solvable only when
    lam < 1/mu; a page changing faster than that gets f = 0 (it would never stay fresh long
    enough to pay for its fetches), as does a page that never changes. mu is found by
    bisection so that the frequencies add up to the budget.
    """
    if budget <= 0 or not rates:
        return [0.0] * len(rates)
    changing = [lam for lam in rates if lam > 0]
    if not changing:
        return [0.0] * len(rates)

    def spend(mu: float) -> float:
        return sum(_frequency_at(lam, mu) for lam in rates)

    low, high = 1e-12, 1 / min(changing)  # spend(high) = 0, spend(low) is huge
    for _ in range(200):
        mid = math.sqrt(low * high)
        if spend(mid) > budget:
            low = mid
        else:
            high = mid
        if high / low < 1 + 1e-12:
            break
    mu = math.sqrt(low * high)
    frequencies = [_frequency_at(lam, mu) for lam in rates]
    spent = sum(frequencies)
    return [f * budget / spent for f in frequencies] if spent else frequencies


def _frequency_at(lam: float, mu: float) -> float:
    """The f with dF/df = mu for a page of rate lam (0 when no such f)."""
    if lam <= 0 or lam * mu >= 1:
        return 0.0
    target = lam * mu  # solve g(r) = 1 - (1 + r) e^-r = target, g rises from 0 to 1
    low, high = 0.0, 1.0
    while 1 - (1 + high) * math.exp(-high) < target:
        high *= 2
    for _ in range(100):
        mid = (low + high) / 2
        if 1 - (1 + mid) * math.exp(-mid) < target:
            low = mid
        else:
            high = mid
    r = (low + high) / 2
    return lam / r if r > 0 else 0.0
