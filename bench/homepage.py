"""Accuracy of `tianwang hosts homepage` (seed 001's PERS), each signal left out in turn, on the
hidden-root test web and on real sites.

    python3 bench/homepage.py testweb [--seed 23] [--hosts 90] [--max-pages 60]
    python3 bench/homepage.py real

testweb: serves `testweb serve --hidden-roots` (every third site's / answers 404, its homepage
elsewhere, at a path made of home words or not and linked as 首页 or by a neutral text, half
and half each: testweb/hiddenroot.py), crawls it from every site's pages one link below the
homepage (as a url list holds them; TIANWANG_MAX_LEVELS 2) and runs the finder on the
records: the share of the hidden-root sites whose homepage it found (by kind of path and
anchor), and of the others for which it kept `/`.

real: Debian's html documentation trees (tests/realdocs.py's BENCH_PACKAGES) served by nginx,
one site a package, `/` a 404, the homepage the package's doc-base Index; every page crawled
(a url list of the site), then the finder: the share of sites whose declared homepage it
found.

Each row leaves one signal out (`--without`): anchor, url, name, links, depth, root.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tianwang.collection.homepage import SIGNALS  # noqa: E402
from tianwang.testweb.hiddenroot import HOME_PATHS  # noqa: E402
from tianwang.testweb.launcher import TestWebProcess, write_seeds  # noqa: E402
from tianwang.testweb.model import SyntheticWeb  # noqa: E402

ENV = {**os.environ, "PYTHONPATH": str(ROOT), "SCRAPY_SETTINGS_MODULE": "tianwang.settings"}


def crawl(work: Path, seeds: list[str], proxy: str, levels: int) -> Path:
    command = [sys.executable, "-m", "scrapy", "crawl", "site", "-a",
               f"seeds={write_seeds(work / 'seeds.txt', seeds)}",
               "-s", f"TIANWANG_PROXY={proxy}", "-s", f"TIANWANG_DATA_DIR={work}/data",
               "-s", f"TIANWANG_MAX_LEVELS={levels}", "-s", "LOG_LEVEL=WARNING",
               # the tests' politeness (tests/conftest.py): one local server, no delay
               "-s", "DOWNLOAD_DELAY=0", "-s", "CONCURRENT_REQUESTS=32",
               "-s", "CONCURRENT_REQUESTS_PER_DOMAIN=4"]
    subprocess.run(command, cwd=work, env=ENV, check=True)
    return work / "data"


def found_by(tree: Path, without: str | None) -> dict[str, str]:
    extra = ["--without", without] if without else []
    run = subprocess.run([sys.executable, "-m", "tianwang.cli", "hosts", "homepage", str(tree),
                          *extra], env=ENV, capture_output=True, text=True, check=True)
    return {line.split("\t")[0]: line.split("\t")[1] for line in run.stdout.splitlines()}


def testweb(args: argparse.Namespace) -> None:
    model = SyntheticWeb(args.seed, args.hosts, args.max_pages, hidden_roots=True)
    truth = list(model.truth(bodies=False))
    homes = {r["host"]: r["url"] for r in truth if r["kind"] == "home"}
    seeds = sorted(r["url"] for r in truth if r["distance"] == 1 and r["kind"] == "html")
    seeded = {url.split("/")[2] for url in seeds}
    hidden = sorted(h for h, url in homes.items() if h in seeded and not url.endswith("/"))
    shown = [h for h, url in homes.items() if h in seeded and url.endswith("/")]
    site = {s.host: s for s in (model.site(h) for h in hidden)}
    kind = {}
    for host in hidden:
        path = homes[host].removeprefix(f"http://{host}")
        anchor = site[host].entries[homes[host]].anchor
        kind[host] = (("home-word path" if path in HOME_PATHS else "neutral path") + ", "
                      + ("首页" if anchor is None else "neutral anchor"))
    with tempfile.TemporaryDirectory() as work, \
            TestWebProcess(args.seed, args.hosts, args.max_pages,
                           extra_args=("--hidden-roots",)) as web:
        started = time.monotonic()
        tree = crawl(Path(work), seeds, web.address, 2)
        print(json.dumps({"hosts": args.hosts, "sites with sub-pages": len(seeded),
                          "hidden roots": len(hidden), "crawl seconds":
                          round(time.monotonic() - started, 1)}))
        kinds = sorted(set(kind.values()))
        print("| left out | hidden root: found | " + " | ".join(kinds)
              + " | root answering: / kept |")
        print("|---|---|" + "---|" * len(kinds) + "---|")
        for without in (None, *SIGNALS):
            found = found_by(tree, without)
            right = {h for h in hidden if found.get(h) == homes[h]}
            cells = []
            for k in kinds:
                of = [h for h in hidden if kind[h] == k]
                cells.append(f"{sum(h in right for h in of)}/{len(of)}")
            kept = sum(found.get(h) == homes[h] for h in shown)
            print(f"| {without or '(none: all signals)'} | {len(right)}/{len(hidden)} "
                  f"({len(right) / len(hidden):.0%}) | " + " | ".join(cells)
                  + f" | {kept}/{len(shown)} |", flush=True)
            if without is None:
                missed = {h: (found.get(h), homes[h], kind[h]) for h in hidden
                          if h not in right}
                for host, (got, want, k) in missed.items():
                    print(f"  missed {host} ({k}): found {got}, truth {want}")


def real() -> None:
    from tests.realdocs import BENCH_PACKAGES, doc_sites, serving

    sites = doc_sites(BENCH_PACKAGES)
    with tempfile.TemporaryDirectory() as work:
        with serving(sites, Path(work) / "nginx") as web:
            started = time.monotonic()
            tree = crawl(Path(work), [s.url(p) for s in sites for p in s.paths], web.address, 1)
            elapsed = time.monotonic() - started
        print(f"{len(sites)} sites, {sum(len(s.paths) for s in sites)} pages, crawled in "
              f"{elapsed:.0f} s")
        print("| left out | homepage found | missed |")
        print("|---|---|---|")
        for without in (None, *SIGNALS):
            found = found_by(tree, without)
            missed = [f"{s.package}: {found.get(s.host, '-').split('/', 3)[-1]}"
                      for s in sites if found.get(s.host) != s.homepage]
            right = len(sites) - len(missed)
            print(f"| {without or '(none: all signals)'} | {right}/{len(sites)} "
                  f"({right / len(sites):.0%}) | {'; '.join(missed)} |", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=("testweb", "real"))
    parser.add_argument("--seed", type=int, default=23)
    parser.add_argument("--hosts", type=int, default=90)
    parser.add_argument("--max-pages", type=int, default=60)
    args = parser.parse_args()
    if args.what == "testweb":
        testweb(args)
    else:
        real()
    return 0


if __name__ == "__main__":
    sys.exit(main())
