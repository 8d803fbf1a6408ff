"""CPU per page on real pages: tianwang, GNU wget and plain Scrapy crawling the same trees.

    python bench/realpages.py [--rounds 3]

The pages are HTML documentation trees Debian ships (the Python 3.11 library reference and
the PostgreSQL 15 manual, 1,695 pages of 4 to 1,500 KB, 40 KB on average), installed by
apt-get if missing, mirrored by wget and served by nginx on loopback as two hosts
(tests/docs_web.py): nothing leaves the machine. Each round crawls the whole mirror three
times, the crawlers' order turning round by round:

- tianwang: `scrapy crawl site`, the full default stack (storage, dedup, link graph), no
  level limit, no delay, 16 requests at once, 8 per host, through nginx as its proxy;
- wget: `wget --recursive` of the same index pages (one connection, as wget does), keeping
  the same pages (HTML and text), through the same proxy;
- plain: bench/plain_spider.py (Scrapy's defaults, no storage) with the same settings.

All three obey robots.txt. The CPU is the crawler process's user+system time (getrusage);
a page is a 200 answer in nginx's access log for that run (robots.txt aside), so every
crawler is counted by the same server. Each crawler also fetches a one-page tree, whose CPU
is its start and stop: "marginal" is (CPU - that) / pages. Prints one line per run, then
medians and the ratios of medians (tianwang / wget: goal <= 3).
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.crawl import site_command  # noqa: E402
from tests.docs_web import DocsWeb, mirror_docs, tree_paths, wget_command  # noqa: E402

CRAWLERS = ("tianwang", "wget", "plain")
POLITE = {  # the same for both Scrapy crawlers
    "DOWNLOAD_DELAY": "0",
    "CONCURRENT_REQUESTS": "16",
    "CONCURRENT_REQUESTS_PER_DOMAIN": "8",
    "ROBOTSTXT_OBEY": "True",
    "LOG_LEVEL": "WARNING",
    "TELNETCONSOLE_ENABLED": "False",
}
ONE_PAGE_HOST = "one.docs.test"


def command(crawler: str, proxy: str, seeds: list[str], work: Path) -> tuple[list[str], dict]:
    seed_file = work / "seeds.txt"
    seed_file.write_text("".join(f"{url}\n" for url in seeds), encoding="utf-8")
    if crawler == "wget":
        return wget_command(proxy, work / "wget", seeds), dict(os.environ)
    if crawler == "tianwang":
        return site_command(seed_file, {**POLITE, "TIANWANG_PROXY": proxy,
                                        "TIANWANG_DATA_DIR": str(work / "data"),
                                        "TIANWANG_MAX_LEVELS": "0"})
    plain = [sys.executable, "-m", "scrapy", "runspider", str(ROOT / "bench" / "plain_spider.py"),
             "-a", f"seeds={seed_file}"]
    for key, value in {**POLITE, "DEPTH_LIMIT": "0"}.items():
        plain += ["-s", f"{key}={value}"]
    return plain, {**os.environ, "PYTHONPATH": str(ROOT), "http_proxy": proxy}


def run(crawler: str, web: DocsWeb, seeds: list[str], work: Path) -> dict:
    """One crawl: its CPU seconds, wall seconds, and the server's count of its pages."""
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    argv, env = command(crawler, web.address, seeds, work)
    since = web.log_size()
    before, start = resource.getrusage(resource.RUSAGE_CHILDREN), time.monotonic()
    done = subprocess.run(argv, cwd=work, env=env, capture_output=True)
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in ((0, 8) if crawler == "wget" else (0,)):
        raise RuntimeError(f"{crawler} exited {done.returncode}: {done.stderr[-2000:]!r}")
    log = web.requests(since)
    pages = {(line["host"], line["path"]) for line in log
             if line["status"] == 200 and line["path"] != "/robots.txt"}
    return {"cpu": after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime,
            "wall": wall, "requests": len(log), "pages": pages}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        mirror = mirror_docs(tmp / "docs")
        truth = {(host, path) for host, root in mirror.items() for path in tree_paths(root)}
        one = tmp / "one"
        one.mkdir()
        (one / "index.html").write_text("<html><body>one page</body></html>", encoding="utf-8")
        roots = {**mirror, ONE_PAGE_HOST: one}
        seeds = [f"http://{host}/index.html" for host in mirror]
        size = sum(path.stat().st_size for root in mirror.values() for path in root.rglob("*")
                   if path.is_file())
        print(f"tree: {len(truth)} pages, {size / 1e6:.1f} MB, hosts {', '.join(mirror)}",
              flush=True)
        runs: dict[str, list[dict]] = {crawler: [] for crawler in CRAWLERS}
        startup: dict[str, list[float]] = {crawler: [] for crawler in CRAWLERS}
        with DocsWeb(roots, tmp / "web") as web:
            for crawler in CRAWLERS:  # warm-up (page cache, .pyc) and each one's start-up
                run(crawler, web, seeds, tmp / "work")
            for round_no in range(1, args.rounds + 1):
                turn = round_no % len(CRAWLERS)
                for crawler in CRAWLERS[turn:] + CRAWLERS[:turn]:
                    found = run(crawler, web, seeds, tmp / "work")
                    startup[crawler].append(
                        run(crawler, web, [f"http://{ONE_PAGE_HOST}/index.html"],
                            tmp / "work")["cpu"])
                    runs[crawler].append(found)
                    same = "all pages" if found["pages"] == truth else (
                        f"MISSING {len(truth - found['pages'])}, extra "
                        f"{len(found['pages'] - truth)}")
                    print(f"round {round_no} {crawler:8s}: {len(found['pages'])} pages "
                          f"({same}), {found['requests']} requests, {found['cpu']:.2f} cpu s, "
                          f"{found['wall']:.1f} s, "
                          f"{1000 * found['cpu'] / len(found['pages']):.2f} cpu ms/page; "
                          f"one page {startup[crawler][-1]:.2f} cpu s", flush=True)
    med = statistics.median
    per_page = {c: med(r["cpu"] / len(r["pages"]) for r in runs[c]) * 1000 for c in CRAWLERS}
    marginal = {c: med((r["cpu"] - s) / len(r["pages"]) for r, s in
                       zip(runs[c], startup[c], strict=True)) * 1000 for c in CRAWLERS}
    for crawler in CRAWLERS:
        print(f"median {crawler}: {per_page[crawler]:.2f} cpu ms/page, marginal "
              f"{marginal[crawler]:.2f} (start and stop {med(startup[crawler]):.2f} cpu s), "
              f"{med(len(r['pages']) / r['wall'] for r in runs[crawler]):.0f} pages/s")
    rounds = [t["cpu"] / len(t["pages"]) / (w["cpu"] / len(w["pages"]))
              for t, w in zip(runs["tianwang"], runs["wget"], strict=True)]
    print(f"tianwang / wget, cpu per page: {per_page['tianwang'] / per_page['wget']:.2f} "
          f"(rounds {min(rounds):.2f} to {max(rounds):.2f}; goal <= 3), marginal "
          f"{marginal['tianwang'] / marginal['wget']:.2f}")
    print(f"tianwang / plain Scrapy, cpu per page: "
          f"{per_page['tianwang'] / per_page['plain']:.2f}, marginal "
          f"{marginal['tianwang'] / marginal['plain']:.2f} (below 1: tianwang cheaper)")
    print(f"machine: {os.cpu_count()} cores, python {sys.version.split()[0]}, "
          f"load {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
