"""Peak RSS of a crawl fed three decompression bombs at once (issue 16).

    python bench/bombs.py [--base DIR] [--rounds N]

Serves the --junk test web (from this tree: it holds the bombs) and crawls, with the code of
this tree and of --base (another checkout, e.g. `git worktree add /tmp/base16 8bf7192`),
alternating: (1) the three bomb pages (gzip, deflate, br: 1 GiB inflated each) at once, and
(2) the three bomb hosts' homepages (small pages: the baseline). Prints each crawl's peak RSS
(wait4's ru_maxrss of the crawl process), what it stored, and the goal: peak under the
baseline plus 4 x TIANWANG_MAX_PAGE_BYTES per concurrent request.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.crawl import site_command, timed_process  # noqa: E402
from tianwang.testweb.junk import BOMB_HOSTS, BOMB_PAGE  # noqa: E402
from tianwang.testweb.launcher import TestWebProcess  # noqa: E402

MAX_PAGE = 10 * 1024 * 1024  # the default TIANWANG_MAX_PAGE_BYTES
CONCURRENT = 3


def crawl(tree: Path, proxy: str, seeds: list[str], workdir: Path) -> tuple[float, int, float]:
    """(peak RSS in MB, bytes stored, seconds) of one crawl with the code of `tree`."""
    seeds_file = workdir / "seeds.txt"
    seeds_file.write_text("\n".join(seeds) + "\n", encoding="utf-8")
    data = workdir / "data"
    settings = {"TIANWANG_PROXY": proxy, "TIANWANG_DATA_DIR": str(data), "DOWNLOAD_DELAY": "0",
                "CONCURRENT_REQUESTS": str(CONCURRENT), "ROBOTSTXT_OBEY": "False",
                "TIANWANG_MAX_LEVELS": "1", "LOG_LEVEL": "INFO"}
    command, env = site_command(seeds_file, settings, tree)
    code, rss_mb, took = timed_process(command, env, tree, workdir / "crawl.log")
    # Three bombs refused store no page: the crawl says so and exits 1, as it should.
    nothing_stored = "crawl FAILED (no page stored)" in (workdir / "crawl.log").read_text()
    if code != 0 and not (code == 1 and nothing_stored):
        raise SystemExit(f"crawl failed, see {workdir / 'crawl.log'}")
    stored = sum(p.stat().st_size for p in data.glob("data_*/*/page.dat"))
    return rss_mb, stored, took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", type=Path, help="a checkout to compare with (e.g. 8bf7192)")
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()
    trees = {"this tree": ROOT} | ({"base": args.base.resolve()} if args.base else {})
    bombs = [f"http://{host}{BOMB_PAGE}" for host in BOMB_HOSTS]
    homes = [f"http://{host}/" for host in BOMB_HOSTS]
    with tempfile.TemporaryDirectory() as tmp, TestWebProcess(1, 3, 10,
                                                              extra_args=("--junk",)) as web:
        for round_ in range(args.rounds):
            order = list(trees.items()) if round_ % 2 == 0 else list(trees.items())[::-1]
            for name, tree in order:
                results = {}
                for label, seeds in (("baseline (3 small pages)", homes),
                                     ("three bombs at once", bombs)):
                    workdir = Path(tempfile.mkdtemp(dir=tmp))
                    results[label] = crawl(tree, web.address, seeds, workdir)
                    rss, stored, took = results[label]
                    print(f"round {round_ + 1}  {name:9}  {label:26}  peak RSS {rss:7.0f} MB"
                          f"  stored {stored / 1e3:10.1f} KB  {took:5.1f} s", flush=True)
                base_rss = results["baseline (3 small pages)"][0]
                goal = base_rss + 4 * MAX_PAGE * CONCURRENT / 2**20
                bomb_rss = results["three bombs at once"][0]
                print(f"round {round_ + 1}  {name:9}  goal: bombs' peak {bomb_rss:.0f} MB < "
                      f"{goal:.0f} MB (baseline + 4 x 10 MiB x {CONCURRENT}): "
                      f"{'met' if bomb_rss < goal else 'NOT met'}", flush=True)


if __name__ == "__main__":
    main()
