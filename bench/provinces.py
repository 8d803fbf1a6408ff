"""The "other" share of seed 004's table 4.4 without a registry file, on the test web's collection.

    python3 bench/provinces.py [--hosts 1000]

1. The collection the tests build (tests/collection_crawl.py: the 80-host test web with
   mirrors, crawled 3 levels, globally deduped) goes through `tianwang stats` with no
   --provinces file; its Provinces table's "other" row is printed (pages and sites).
2. The same pages placed by the domain rules alone (CNNIC's province domains, the provinces'
   portals: what `tianwang stats` did before the host-name rule), from the pages the dedup
   holds, to show what the names add.
3. A larger test web's model (--hosts, no crawl): every site's pages as the model draws them,
   placed both ways.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.collection_crawl import run_collection_crawl  # noqa: E402
from tests.conftest import tianwang_cli  # noqa: E402
from tests.test_collection_stats import number, tables  # noqa: E402
from tianwang.collection.provinces import OTHER, province_of  # noqa: E402
from tianwang.testweb.model import SyntheticWeb  # noqa: E402


def shares(pages_per_host: Counter[str], names: bool) -> tuple[float, float, int]:
    """(share of pages in "other", share of sites, provinces with a site)."""
    placed = {host: province_of(host, names=names) for host in pages_per_host}
    other_pages = sum(n for host, n in pages_per_host.items() if placed[host] == OTHER)
    other_sites = sum(1 for host in pages_per_host if placed[host] == OTHER)
    provinces = len({p for p in placed.values() if p != OTHER})
    return (other_pages / sum(pages_per_host.values()), other_sites / len(pages_per_host),
            provinces)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=1000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as work:
        crawl = run_collection_crawl(Path(work))
        run = tianwang_cli("stats", str(crawl.dedup), "--workers", "1")
        assert run.returncode == 0, run.stderr
    rows = {row[0]: row for row in tables(run.stdout)["Provinces"]}
    total = sum(number(row[2]) for row in rows.values())
    other = rows[OTHER]
    print(f"collection (80 hosts, {total} pages): `tianwang stats` other = {other[1]} of the "
          f"pages, {number(other[4])} of {sum(number(r[4]) for r in rows.values())} sites")
    hosts = Counter(url.split("/")[2] for url in crawl.expected)
    print("| web | pages | sites | rules | other, pages | other, sites | provinces with a site |")
    print("|---|---|---|---|---|---|---|")
    webs = [("collection, 80 hosts, crawled", hosts)]
    model = SyntheticWeb(1, args.hosts, 200)
    webs.append((f"model, {args.hosts} hosts", Counter(
        r["host"] for r in model.truth(bodies=False) if r["status"] == 200)))
    for name, counts in webs:
        for names in (False, True):
            pages, sites, provinces = shares(counts, names)
            rules = "domains + host names" if names else "domains only"
            print(f"| {name} | {sum(counts.values())} | {len(counts)} | {rules} | "
                  f"{pages:.1%} | {sites:.1%} | {provinces} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
