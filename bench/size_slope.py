"""Benchmark: the fitted slope of a synthetic web's site-size distribution (issue 9).

    python3 bench/size_slope.py --hosts 10000 --seeds 1 2 3 11 23

For each seed, the sizes the test web's model draws for --hosts sites (SiteBuilder: the
size is drawn before any page is built, so no server and no site is needed), fitted two
ways, against the generator's SIZE_EXPONENT:

- mle: `tianwang stats`' fit (tianwang/collection/sizefit.py), a discrete power law on the
  bounded range of sizes seen, by maximum likelihood;
- logbin (the baseline): least squares through log(sites per unit size) in --bins
  logarithmic bins, the usual way of reading a slope off a log-log plot.

Prints each seed's estimates and error, and the mean absolute error of each method; with
--plot, draws the first seed's sizes as `tianwang stats --plot` does.
"""

from __future__ import annotations

import argparse
import math
import statistics
import time
from pathlib import Path

from tianwang.collection.sizefit import fit_sizes
from tianwang.collection.stats import draw_plot
from tianwang.testweb.layout import SIZE_EXPONENT
from tianwang.testweb.model import SyntheticWeb
from tianwang.testweb.sitebuilder import SiteBuilder


def model_sizes(seed: int, hosts: int, max_pages: int) -> list[int]:
    web = SyntheticWeb(seed, hosts, max_pages)
    return [SiteBuilder(seed, i, hosts, web.hosts.__getitem__, max_pages).size
            for i in range(hosts)]


def logbin_alpha(sizes: list[int], bins: int) -> float:
    """Least squares on log-binned densities: -slope of log(count / width) on log(centre)."""
    low, high = min(sizes), max(sizes)
    edges = sorted({round(low * (high / low) ** (k / bins)) for k in range(bins + 1)})
    edges[-1] = high + 1
    xs, ys = [], []
    for start, stop in zip(edges, edges[1:], strict=False):
        count = sum(1 for s in sizes if start <= s < stop)
        if count:
            xs.append(math.log(math.sqrt(start * (stop - 1))))
            ys.append(math.log(count / (stop - start)))
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    return -sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum(
        (x - mx) ** 2 for x in xs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=10_000)
    parser.add_argument("--max-pages", type=int, default=300)
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3, 11, 23])
    parser.add_argument("--bins", type=int, default=12)
    parser.add_argument("--plot", metavar="PNG", help="draw the first seed's sizes, as stats does")
    args = parser.parse_args()
    print(f"generator exponent {SIZE_EXPONENT}, {args.hosts} sites of 1..{args.max_pages} pages")
    print("seed   mle (err)          logbin (err)       sizes s  fit s")
    errors: dict[str, list[float]] = {"mle": [], "logbin": []}
    for seed in args.seeds:
        started = time.perf_counter()
        sizes = model_sizes(seed, args.hosts, args.max_pages)
        drawn = time.perf_counter() - started
        started = time.perf_counter()
        fit = fit_sizes(sizes)
        fitted = time.perf_counter() - started
        assert fit is not None
        logbin = logbin_alpha(sizes, args.bins)
        errors["mle"].append(abs(fit.alpha - SIZE_EXPONENT))
        errors["logbin"].append(abs(logbin - SIZE_EXPONENT))
        if args.plot and seed == args.seeds[0]:
            draw_plot(Path(args.plot), sizes, fit)
        print(f"{seed:<5}  {fit.slope:.4f} ({fit.alpha - SIZE_EXPONENT:+.4f})  "
              f"{-logbin:.4f} ({logbin - SIZE_EXPONENT:+.4f})  {drawn:7.2f}  {fitted:5.3f}")
    for name, values in errors.items():
        print(f"{name}: mean |error| {statistics.fmean(values):.4f}, max {max(values):.4f}")


if __name__ == "__main__":
    main()
