"""CPU per page of the `site` spider with the host and content filters on vs off, same run.

    python bench/filters.py [--hosts 200] [--seed 1] [--rounds 5] [--junk]
    python bench/filters.py --micro     # microseconds per request of each filter, in-process

The same crawl (the project's settings, storage on) through one test web process, once with
HostFilterMiddleware and ContentTypeMiddleware enabled and once with both removed from
DOWNLOADER_MIDDLEWARES; rounds alternate which runs first and the ratio of medians is
reported. CPU per page is the crawl process's user+system time (getrusage, as bench/crawl.py)
per 1,000 stored pages: both crawls store the same pages, while the filters-on crawl receives
fewer responses (it stops non-text ones), so per-stored-page is the fair unit.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.crawl import COMMON, measured_run, rate  # noqa: E402
from tianwang import default_settings as project  # noqa: E402
from tianwang.testweb.launcher import TestWebProcess, write_seeds  # noqa: E402
from tianwang.testweb.model import SyntheticWeb  # noqa: E402

FILTERS = (
    "tianwang.middlewares.hostfilter.HostFilterMiddleware",
    "tianwang.middlewares.contenttype.ContentTypeMiddleware",
)


def filters_off() -> str:
    """The project's DOWNLOADER_MIDDLEWARES with the two filters disabled."""
    return json.dumps({**project.DOWNLOADER_MIDDLEWARES, **dict.fromkeys(FILTERS)})


def run_site(filters: bool, proxy: str, seeds: Path, workdir: Path) -> dict:
    stats_file = workdir / "stats.json"
    settings = {**COMMON, "BENCH_STATS_FILE": str(stats_file), "TIANWANG_PROXY": proxy,
                "TIANWANG_DATA_DIR": str(workdir / "data")}
    if not filters:
        settings["DOWNLOADER_MIDDLEWARES"] = filters_off()
    command = [sys.executable, "-m", "scrapy", "crawl", "site", "-a", f"seeds={seeds}"]
    for key, value in settings.items():
        command += ["-s", f"{key}={value}"]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "SCRAPY_SETTINGS_MODULE": "tianwang.settings"}
    env.pop("http_proxy", None)
    return measured_run(command, env, workdir, stats_file)


def cpu_per_1000_stored(stats: dict) -> float:
    return 1000 * stats["cpu_seconds"] / max(stats.get("tianwang/storage/records", 0), 1)


def measure(hosts: int, seed: int, rounds: int, junk: bool) -> dict[str, list[dict]]:
    runs: dict[str, list[dict]] = {"on": [], "off": []}
    extra = ("--junk",) if junk else ()
    web = SyntheticWeb(seed, hosts, junk=junk)
    homepages = web.homepages() + (web.junk.homepages() if web.junk else [])
    server = TestWebProcess(seed, hosts, extra_args=extra)
    with tempfile.TemporaryDirectory() as tmp, server:
        seeds = write_seeds(Path(tmp) / "seeds.txt", homepages)
        with tempfile.TemporaryDirectory(dir=tmp) as warm:  # the server builds its hosts
            run_site(True, server.address, seeds, Path(warm))
        for round_no in range(1, rounds + 1):
            for kind in ("on", "off") if round_no % 2 else ("off", "on"):
                with tempfile.TemporaryDirectory(dir=tmp) as workdir:
                    stats = run_site(kind == "on", server.address, seeds, Path(workdir))
                runs[kind].append(stats)
                print(line(round_no, kind, stats), flush=True)
    return runs


def line(round_no: int, kind: str, stats: dict) -> str:
    filtered = sum(v for k, v in stats.items() if k.startswith("tianwang/filter/")
                   and not k.endswith("_bytes"))
    return (
        f"round {round_no} filters {kind:3s}: {stats.get('response_received_count')} responses, "
        f"{stats.get('tianwang/storage/records')} stored, {filtered} filtered, "
        f"{stats.get('downloader/response_bytes')} bytes, {rate(stats):.1f} pages/s, "
        f"{cpu_per_1000_stored(stats):.3f} cpu s/1000 stored pages"
    )


def micro(count: int = 100_000) -> None:
    """Microseconds per request of each filter's work on a page that passes, in this process."""
    import time

    from scrapy import Request
    from scrapy.http.headers import Headers

    from tianwang.hosts import HostRules, SpamList
    from tianwang.middlewares.contenttype import ContentTypeMiddleware
    from tianwang.middlewares.hostfilter import HostFilterMiddleware

    class Stats:
        def inc_value(self, key: str, count: int = 1) -> None:
            pass

    spam = SpamList.from_lines(["fangwen.com", "^u[0-9]+\\.a8blog\\.cn$"])
    hosts = HostFilterMiddleware(HostRules(spam), True, Stats(), proxy="http://127.0.0.1:1")
    types = ContentTypeMiddleware(frozenset({"text/html", "text/plain"}), 10 << 20, Stats())
    requests = [Request(f"http://www.site{i % 500}.com.cn/news/{i}.html") for i in range(count)]
    headers = Headers({"Content-Type": "text/html; charset=gbk", "Content-Length": "7000"})

    def drive(request: Request) -> None:
        try:
            hosts.process_request(request).send(None)
        except StopIteration:
            pass

    for name, call in (
        ("host filter process_request", drive),
        ("content filter headers_received + one bytes_received",
         lambda r: (types.headers_received(headers, 7000, r), types.bytes_received(b"x", r))),
    ):
        start = time.process_time()
        for request in requests:
            call(request)
        micros = 1e6 * (time.process_time() - start) / count
        print(f"{name}: {micros:.2f} us per request", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=200)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--junk", action="store_true", help="add the test web's junk hosts")
    parser.add_argument("--micro", action="store_true", help="only time each filter's calls")
    args = parser.parse_args()
    if args.micro:
        micro()
        return 0
    runs = measure(args.hosts, args.seed, args.rounds, args.junk)
    on = statistics.median(cpu_per_1000_stored(s) for s in runs["on"])
    off = statistics.median(cpu_per_1000_stored(s) for s in runs["off"])
    pairs = [cpu_per_1000_stored(a) / cpu_per_1000_stored(b)
             for a, b in zip(runs["on"], runs["off"], strict=True)]
    print(f"median filters on: {on:.3f} cpu s/1000 stored pages")
    print(f"median filters off: {off:.3f} cpu s/1000 stored pages")
    print(f"ratio on/off: {on / off:.3f} (target < 1.03); per round: "
          + ", ".join(f"{p:.3f}" for p in pairs))
    print(f"machine: {os.cpu_count()} cores, python {sys.version.split()[0]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
