"""The slope of the site-size distribution: the number of sites of size s falls as s^-alpha.

Seed 004 plots the number of sites against their size on log-log axes and reads a line of
slope -0.68. The fit here is the maximum-likelihood estimate of a discrete power law on the
bounded range of sizes seen, P(s) = s^-alpha / Z(alpha), Z = sum of s^-alpha for s in
smin..smax. That is the very family the test web draws from (layout.draw_size: 1..max_pages),
so the estimate is consistent, and it uses every site, while a least-squares line through
log-binned counts depends on the binning and weighs a sparse tail bin as much as a full one.

The likelihood equation says the model's mean of ln s equals the sample's; that mean falls
monotonically as alpha grows, so bisection finds the root.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

import numpy

ALPHA_RANGE = (-20.0, 20.0)  # an estimate at either end means the sizes fit no power law
ITERATIONS = 60  # bisection steps: the interval shrinks below 1e-16


@dataclass(frozen=True)
class SizeFit:
    alpha: float  # P(s) ~ s^-alpha; the log-log slope is -alpha
    smin: int
    smax: int
    sites: int

    @property
    def slope(self) -> float:
        return -self.alpha

    def expected(self, size: int) -> float:
        """The number of sites of this size the fitted law predicts."""
        logs = numpy.log(numpy.arange(self.smin, self.smax + 1, dtype=float))
        return float(self.sites * size**-self.alpha / numpy.exp(-self.alpha * logs).sum())


def fit_sizes(sizes: Iterable[int]) -> SizeFit | None:
    """The MLE fit of the site sizes (pages per site); None with fewer than two distinct."""
    counts = Counter(sizes)
    if any(size < 1 for size in counts):
        raise ValueError("site sizes must be at least 1")
    if len(counts) < 2:
        return None
    smin, smax, sites = min(counts), max(counts), sum(counts.values())
    observed = sum(n * numpy.log(size) for size, n in counts.items()) / sites
    logs = numpy.log(numpy.arange(smin, smax + 1, dtype=float))
    low, high = ALPHA_RANGE
    for _ in range(ITERATIONS):
        middle = (low + high) / 2
        if _model_mean(logs, middle) > observed:
            low = middle  # the model favours larger sites than seen: a steeper law
        else:
            high = middle
    return SizeFit((low + high) / 2, smin, smax, sites)


def _model_mean(logs: numpy.ndarray, alpha: float) -> float:
    """E[ln s] under s^-alpha on the range; exponents shifted so none overflows."""
    exponents = -alpha * logs
    weights = numpy.exp(exponents - exponents.max())
    return float((weights * logs).sum() / weights.sum())
