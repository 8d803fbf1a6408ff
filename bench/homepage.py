"""Accuracy of `tianwang hosts homepage` (seed 001's PERS) on a larger hidden-root test web.

    python3 bench/homepage.py [--seed 23] [--hosts 90] [--max-pages 60]

Serves `testweb serve --hidden-roots` (every third site's / answers 404, its homepage
elsewhere), crawls it from every site's pages one link below the homepage (as a url list
holds them; TIANWANG_MAX_LEVELS 2), runs `tianwang hosts homepage` on the records and
prints, against the truth, the share of the sites whose root is hidden whose homepage it
found, and the share of the others for which it kept `/`.
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

from tianwang.testweb.launcher import TestWebProcess, write_seeds  # noqa: E402
from tianwang.testweb.model import SyntheticWeb  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=23)
    parser.add_argument("--hosts", type=int, default=90)
    parser.add_argument("--max-pages", type=int, default=60)
    args = parser.parse_args()
    truth = list(SyntheticWeb(args.seed, args.hosts, args.max_pages,
                              hidden_roots=True).truth(bodies=False))
    homes = {r["host"]: r["url"] for r in truth if r["kind"] == "home"}
    seeds = sorted(r["url"] for r in truth if r["distance"] == 1 and r["kind"] == "html")
    seeded = {url.split("/")[2] for url in seeds}
    env = {**os.environ, "PYTHONPATH": str(ROOT), "SCRAPY_SETTINGS_MODULE": "tianwang.settings"}
    with tempfile.TemporaryDirectory() as work, \
            TestWebProcess(args.seed, args.hosts, args.max_pages,
                           extra_args=("--hidden-roots",)) as web:
        started = time.monotonic()
        crawl = [sys.executable, "-m", "scrapy", "crawl", "site", "-a",
                 f"seeds={write_seeds(Path(work) / 'seeds.txt', seeds)}",
                 "-s", f"TIANWANG_PROXY={web.address}", "-s", f"TIANWANG_DATA_DIR={work}/data",
                 "-s", "TIANWANG_MAX_LEVELS=2", "-s", "LOG_LEVEL=WARNING"]
        subprocess.run(crawl, cwd=work, env=env, check=True)
        crawled = time.monotonic() - started
        run = subprocess.run([sys.executable, "-m", "tianwang.cli", "hosts", "homepage",
                              f"{work}/data"], env=env, capture_output=True, text=True,
                             check=True)
    found = {line.split("\t")[0]: line.split("\t")[1] for line in run.stdout.splitlines()}
    hidden = [h for h, url in homes.items() if h in seeded and not url.endswith("/")]
    shown = [h for h, url in homes.items() if h in seeded and url.endswith("/")]
    right_hidden = sum(found.get(h) == homes[h] for h in hidden)
    right_shown = sum(found.get(h) == homes[h] for h in shown)
    print(json.dumps({"hosts": args.hosts, "sites with sub-pages": len(seeded),
                      "crawl seconds": round(crawled, 1)}))
    print(f"hidden root: homepage found for {right_hidden} of {len(hidden)} sites "
          f"({right_hidden / max(len(hidden), 1):.1%})")
    print(f"root answering: / kept for {right_shown} of {len(shown)} sites "
          f"({right_shown / max(len(shown), 1):.1%})")
    for host in hidden:
        if found.get(host) != homes[host]:
            print(f"  missed {host}: found {found.get(host)}, truth {homes[host]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
