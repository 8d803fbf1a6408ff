"""A long crawl's JOBDIR: its disk and a resume's time and memory, the request log compacted
(the default, TIANWANG_LOG_COMPACT_MB) against never compacted (the log before).

    python bench/jobdir.py [--requests 2000000] [--pending 10000]

The request log alone (tianwang/frontier/requestlog.py), as a crawl in its steady state
uses it: --pending requests waiting at once, each one done making room for the next, until
--requests went through. Then each JOBDIR is resumed in a process of its own (the log read,
the pending requests' places rebuilt) and timed, with its peak RSS; the longest compaction
is the pause it made (the crawl's reactor waits for it; the Bloom filter's save, which a
crawl makes before each, is not in it). Rates are per CPU
second of this process (the machine is shared).
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from scrapy import Request, Spider  # noqa: E402

from tianwang import default_settings as defaults  # noqa: E402
from tianwang.frontier.requestlog import RequestLog  # noqa: E402

NEVER = 1 << 62


class BenchSpider(Spider):
    name = "bench"

    def parse(self, response):
        return None


SPIDER = BenchSpider()


def request(i: int) -> Request:
    host = f"www.site{i % 1000}.example.com"
    return Request(f"http://{host}/dir{i % 7}/sub{i % 13}/page{i}.html", callback=SPIDER.parse)


def run(directory: Path, requests: int, pending: int, compact_after: int) -> dict[str, float]:
    """Push requests through a log holding `pending` at once; its CPU and compactions."""
    log = RequestLog(directory, SPIDER, compact_after)
    log.open(lambda entry: None)
    waiting: list[int] = []
    compactions, longest = 0, 0.0
    started = time.process_time()
    for i in range(requests):
        waiting.append(log.put(request(i), 3, f"www.site{i % 1000}.example.com", bytes(20)))
        if len(waiting) > pending:
            done = waiting[:100]
            del waiting[:100]
            for item in done:
                log.get(item)
            log.done(done)
            if log.needs_compaction:
                paused = time.perf_counter()
                log.compact()
                longest = max(longest, time.perf_counter() - paused)
                compactions += 1
    cpu = time.process_time() - started
    log.close()
    files = {name: (directory / name).stat().st_size for name in ("requests.log", "done.log")}
    return {"cpu": cpu, "compactions": compactions, "pause": longest, **files}


def resume(directory: Path) -> tuple[float, float, int]:
    """Seconds to reopen the JOBDIR's log, peak RSS (MB) and requests pending, measured in a
    process of its own."""
    out = subprocess.run([sys.executable, __file__, "--resume", str(directory)],
                         capture_output=True, text=True, check=True).stdout.split()
    return float(out[0]), float(out[1]), int(out[2])


def resume_child(directory: Path) -> None:
    log = RequestLog(directory, SPIDER)
    pending = 0

    def visit(entry) -> None:
        nonlocal pending
        pending += not entry.done

    started = time.perf_counter()
    log.open(visit)
    seconds = time.perf_counter() - started
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"{seconds:.3f} {rss:.1f} {pending}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2_000_000)
    parser.add_argument("--pending", type=int, default=10_000)
    parser.add_argument("--resume", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.resume:
        resume_child(args.resume)
        return
    print(f"{args.requests:,} requests through a log holding {args.pending:,} at once; "
          f"{os.cpu_count()} cores")
    print("log           requests.log   done.log  compactions (longest s)  CPU s  resume s  "
          "resume RSS MB")
    figures = {}
    for name, after in (("never", NEVER),
                        ("compacted", defaults.TIANWANG_LOG_COMPACT_MB << 20)):
        with tempfile.TemporaryDirectory() as tmp:
            figures[name] = run(Path(tmp), args.requests, args.pending, after)
            seconds, rss, pending = resume(Path(tmp))
            assert pending == args.pending, pending
            figures[name] |= {"resume": seconds, "rss": rss}
        f = figures[name]
        print(f"{name:<12} {f['requests.log'] / 1e6:11.1f} MB {f['done.log'] / 1e6:7.1f} MB "
              f"{f['compactions']:12d} ({f['pause']:9.3f}) {f['cpu']:6.1f} {seconds:9.2f} "
              f"{rss:14.1f}")
    ratio = figures["compacted"]["cpu"] / figures["never"]["cpu"]
    print(f"CPU compacted / never: {ratio:.3f}")


if __name__ == "__main__":
    main()
