"""Peak RSS and pending requests of crawls fed hosts that attack a whole crawl.

    python bench/floods.py [--base COMMIT] [--seconds 60]

Serves `testweb serve --floods` from this tree and crawls, with the code of this tree and
of the commit --base, each for at most --seconds (CLOSESPIDER_TIMEOUT), two webs:

- link bombs: six hosts whose homepage holds 700,000 in-host links (the project's defaults,
  but no delay: the frontier fills at the first page);
- host farms: a site whose in-host links redirect to new subdomains, and one whose pages
  link to new subdomains (no level limit, links to other hosts followed).

Prints, per crawl: peak RSS (wait4's ru_maxrss), the most requests pending at once (from
the progress line, every second), hosts fetched, pages stored, and the seconds it took.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.crawl import site_command, timed_process  # noqa: E402
from bench.versus import archived  # noqa: E402
from tianwang.testweb.floods import LINK_BOMB, LINK_FARM, REDIRECT_FARM  # noqa: E402
from tianwang.testweb.launcher import TestWebProcess  # noqa: E402

BOMBS = [f"http://www{k}.{LINK_BOMB.removeprefix('www.')}/" for k in range(1, 7)]
FARMS = [f"http://www.{REDIRECT_FARM}/", f"http://www.{LINK_FARM}/"]
WEBS = {
    "link bombs": (BOMBS, {"DOWNLOAD_DELAY": "0"}),
    "host farms": (FARMS, {"DOWNLOAD_DELAY": "0", "TIANWANG_MAX_LEVELS": "0",
                           "TIANWANG_STAY_IN_HOST": "False"}),
}
PENDING = re.compile(r"progress: .* pending ([\d,]+)")


def crawl(tree: Path, proxy: str, seeds: list[str], settings: dict[str, str], seconds: int,
          workdir: Path) -> dict:
    settings = {"TIANWANG_PROXY": proxy, "TIANWANG_DATA_DIR": str(workdir / "data"),
                "CLOSESPIDER_TIMEOUT": str(seconds), "TIANWANG_PROGRESS_INTERVAL": "1",
                "LOG_LEVEL": "INFO", **settings}
    command, env = site_command(",".join(seeds), settings, tree)
    _code, rss_mb, took = timed_process(command, env, tree, workdir / "crawl.log")
    text = (workdir / "crawl.log").read_text(errors="replace")
    pending = [int(n.replace(",", "")) for n in PENDING.findall(text)]
    stored = re.findall(r"stored ([\d,]+) pages from ([\d,]+) hosts", text)
    return {"rss_mb": rss_mb, "pending": max(pending, default=0),
            "stored": int(stored[-1][0].replace(",", "")) if stored else 0,
            "seconds": took}


def hosts_fetched(log: Path, since: int) -> int:
    lines = log.read_text().splitlines()[since:]
    return len({urlsplit(json.loads(line)["url"]).hostname for line in lines})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", help="a commit to compare with (e.g. b9a455e)")
    parser.add_argument("--seconds", type=int, default=60)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        trees = [("this tree", ROOT)]
        if args.base:
            trees.append((args.base, archived(args.base, Path(tmp) / "base")))
        log = Path(tmp) / "access.jsonl"
        with TestWebProcess(1, 2, 10, access_log=log, extra_args=("--floods",)) as web:
            print(f"{'web':11} {'code':9} {'peak RSS':>9} {'pending':>9} {'hosts':>6} "
                  f"{'stored':>7} {'seconds':>8}")
            for name, (seeds, settings) in WEBS.items():
                for label, tree in trees:
                    workdir = Path(tempfile.mkdtemp(dir=tmp))
                    since = len(log.read_text().splitlines()) if log.exists() else 0
                    got = crawl(tree, web.address, seeds, settings, args.seconds, workdir)
                    hosts = hosts_fetched(log, since)
                    print(f"{name:11} {label:9} {got['rss_mb']:7.0f} MB {got['pending']:9,} "
                          f"{hosts:6,} {got['stored']:7,} {got['seconds']:8.1f}", flush=True)


if __name__ == "__main__":
    main()
