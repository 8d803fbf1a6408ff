"""Push+pop requests/s of the frontier alone, in memory and under JOBDIR; RSS of N pending.

    python bench/frontier.py [--requests 200000] [--rounds 5]
    python bench/frontier.py --pending 10000000      # RSS with 10 million pending (~10 min)
    python bench/frontier.py --waiting 1000,10000,100000  # picks/s with most hosts waiting

"Frontier alone" is the queue (FrontierQueue) and the request store, Request objects in
and out: push n requests, then pop them all. Rates are per wall second and per CPU second of
this process (the machine is shared: the CPU figure is what a quiet machine would show).
The same through the whole scheduler (enqueue_request/next_request: Scrapy's fingerprint,
Bloom filter, weight) is printed beside it.
Requests are spread over 1,000 hosts with paths of 0 to 4 directories, callback a spider
method, as the site spider makes them. Rounds alternate the modes; medians are reported.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from array import array
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from scrapy import Request, Spider  # noqa: E402
from scrapy.utils.test import get_crawler  # noqa: E402

from tianwang import default_settings as defaults  # noqa: E402
from tianwang.frontier.dupefilter import BloomDupeFilter  # noqa: E402
from tianwang.frontier.linkscore import LinkCash  # noqa: E402
from tianwang.frontier.queue import FrontierQueue  # noqa: E402
from tianwang.frontier.requestlog import MemoryStore, RequestLog  # noqa: E402
from tianwang.frontier.scheduler import FrontierScheduler  # noqa: E402
from tianwang.urls import url_weight  # noqa: E402


class BenchSpider(Spider):
    name = "bench"

    def parse(self, response):  # pragma: no cover - never called
        return None


def default_queue(seed: int | None = 1) -> FrontierQueue:
    """The queue with the default picks (sorted, host and random), turns and first requests."""
    return FrontierQueue(defaults.TIANWANG_SORTED_PICKS, defaults.TIANWANG_RANDOM_PICKS,
                         seed=seed, turns=defaults.TIANWANG_HOST_TURNS,
                         first=defaults.TIANWANG_HOST_FIRST,
                         host_picks=defaults.TIANWANG_HOST_PICKS)


def make_urls(n: int, seed: int = 1) -> list[str]:
    rng = random.Random(seed)
    urls = []
    for i in range(n):
        dirs = "".join(f"/d{rng.randrange(20)}" for _ in range(rng.randrange(5)))
        urls.append(f"http://www{rng.randrange(1000)}.example.com{dirs}/page{i}.html")
    return urls


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


class Clock:
    """Wall and CPU seconds of the timed parts only."""

    def __init__(self) -> None:
        self.wall = self.cpu = 0.0

    def __enter__(self) -> Clock:
        self._wall, self._cpu = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall += time.perf_counter() - self._wall
        self.cpu += time.process_time() - self._cpu


def push_all(urls: list[str], spider: BenchSpider, push, clock: Clock) -> None:
    """Requests built a page's worth (50 links) at a time, untimed, as a spider yields them,
    then pushed, timed: pushing fresh objects, as a crawl does, not ones long out of cache."""
    for first in range(0, len(urls), 50):
        requests = [Request(url, callback=spider.parse) for url in urls[first : first + 50]]
        with clock:
            for request in requests:
                push(request)


def frontier_rate(urls: list[str], jobdir: Path | None, links: bool = False
                  ) -> tuple[float, float]:
    """Push+pop of the queue and store alone: requests per wall second and per CPU second
    (one push and one pop = one request).

    links: with link relations as the default scheduler has them (LinkCash: each push adds
    its url's cash and weighs it; and for every page's 50 links, 10 links to urls pushed
    before, each found by its key, credited and raised in the queue if pending)."""
    spider = BenchSpider()
    store = RequestLog(jobdir, spider) if jobdir else MemoryStore(spider)
    store.open(lambda entry: None)
    queue = default_queue()
    cash = LinkCash(0.75, 8) if links else None
    rng = random.Random(7)
    keys: list[int] = []
    slots: dict[str, int] = {}

    stored = array("q")  # the queue's item -> the store's id, as the scheduler keeps it

    def push(request: Request) -> None:
        url = request.url
        weight = url_weight(url)
        slot = url.split("/", 3)[2]
        item = queue.new_item()
        if item == len(stored):
            stored.append(0)
        stored[item] = store.put(request, weight, slot, None)
        if cash is not None:
            key = hash(url) & 0xFFFFFFFFFFFFFFFF  # the fingerprint's cost is not the frontier's
            share = cash.share(1.0, 50, slot[-5] == "7")
            cash.add(item, key, share)
            weight += cash.bonus(share)
            keys.append(key)
            if item % 5 == 0:  # 10 of every 50 links lead to a url seen before
                old = cash.find(keys[rng.randrange(len(keys))])
                if old >= 0 and queue.pending(old):  # every one raised: the worst case
                    cash.credit(old, share)
                    queue.raise_weight(old, (queue.weight(old) + 1, 0))
        queue.push(item, (weight, 0), slots.setdefault(slot, len(slots)))

    clock = Clock()
    push_all(urls, spider, push, clock)
    with clock:
        while len(queue):
            item = queue.pop()
            store.get(stored[item])
            queue.release(item)
            if cash is not None:
                cash.forget(item)
    store.close()
    return len(urls) / clock.wall, len(urls) / clock.cpu


def scheduler_rate(urls: list[str], jobdir: Path | None) -> tuple[float, float]:
    """The same through FrontierScheduler.enqueue_request / next_request."""
    settings = {"TIANWANG_EXPECTED_URLS": max(len(urls), 1000)}
    if jobdir:
        settings["JOBDIR"] = str(jobdir)
    crawler = get_crawler(BenchSpider, settings_dict=_project_settings() | settings)
    spider = BenchSpider()
    scheduler = FrontierScheduler.from_crawler(crawler)
    scheduler.open(spider)
    clock = Clock()
    push_all(urls, spider, scheduler.enqueue_request, clock)
    with clock:
        while scheduler.next_request() is not None:
            pass
    scheduler.close("finished")
    return len(urls) / clock.wall, len(urls) / clock.cpu


def _project_settings() -> dict:
    return {name: getattr(defaults, name) for name in dir(defaults) if name.isupper()}


def measure(n: int, rounds: int) -> dict[str, list[tuple[float, float]]]:
    urls = make_urls(n)
    kinds = ("frontier memory", "frontier jobdir", "links memory", "links jobdir",
             "scheduler memory", "scheduler jobdir")
    rates: dict[str, list[tuple[float, float]]] = {kind: [] for kind in kinds}
    for round_no in range(1, rounds + 1):
        order = kinds if round_no % 2 else tuple(reversed(kinds))
        for kind in order:
            with tempfile.TemporaryDirectory() as tmp:
                jobdir = Path(tmp) / "job" if kind.endswith("jobdir") else None
                if kind.startswith("scheduler"):
                    wall, cpu = scheduler_rate(urls, jobdir)
                else:
                    wall, cpu = frontier_rate(urls, jobdir, links=kind.startswith("links"))
            rates[kind].append((wall, cpu))
            print(
                f"round {round_no} {kind:16s}: {wall:9,.0f} requests/s push+pop, "
                f"{cpu:9,.0f} per CPU second",
                flush=True,
            )
    return rates


def pending_rss(n: int) -> None:
    """Push n requests into the frontier under JOBDIR (queue, log, Bloom filter sized for 10
    million at 1e-6, as the defaults) and report RSS; then resume it in a fresh process.

    The fingerprint here is sha1 of the url, not Scrapy's (which costs ~35 us a request and
    takes no memory the frontier keeps): this run is about memory, not speed.
    """
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp) / "job"
        spider = BenchSpider()
        before = rss_mb()
        log = RequestLog(directory, spider)
        queue = default_queue()
        cash = LinkCash(0.75, 8)  # link relations, as the defaults have them
        bloom = _bloom()
        log.open(lambda entry: None)
        slots: dict[str, int] = {}
        start = time.perf_counter()
        for first in range(0, n, 100_000):
            for url in make_urls(min(100_000, n - first), seed=first):
                fingerprint = hashlib.sha1(url.encode()).digest()
                weight, slot = url_weight(url), url.split("/", 3)[2]
                item = log.put(Request(url, callback=spider.parse), weight, slot, fingerprint)
                bloom.add(fingerprint)
                cash.add(item, LinkCash.key(fingerprint), 0.02)
                weight += cash.bonus(0.02)
                queue.push(item, (weight, 0), slots.setdefault(slot, len(slots)))
        pushed = time.perf_counter() - start
        log.flush()
        print(f"{len(queue):,} pending after {pushed:.0f} s ({n / pushed:,.0f} pushes/s)")
        print(f"RSS {rss_mb():,.0f} MB (before: {before:,.0f} MB)")
        start = time.perf_counter()
        taken = [queue.pop() for _ in range(100_000)]
        for item in taken:
            log.get(item)
        log.done(taken)
        print(f"100,000 pops: {100_000 / (time.perf_counter() - start):,.0f} pops/s")
        size = (directory / "requests.log").stat().st_size
        print(f"log {size / 1e6:,.0f} MB, {size / n:.0f} bytes/request")
        bloom.save(directory / "bloom.bin", len(log))
        log.close()
        del log, queue, bloom, cash
        subprocess.run([sys.executable, __file__, "--resume", str(directory)], check=True)


def _bloom() -> BloomDupeFilter:
    import tianwang.default_settings as defaults

    return BloomDupeFilter(defaults.TIANWANG_EXPECTED_URLS, defaults.TIANWANG_BLOOM_ERROR_RATE)


def resume(directory: Path) -> None:
    """Reopen a frontier left by pending_rss, as FrontierScheduler.open does."""
    before = rss_mb()
    start = time.perf_counter()
    log = RequestLog(directory, BenchSpider())
    queue = default_queue(None)
    bloom = _bloom()
    covered = bloom.load(directory / "bloom.bin")
    slots: dict[str, int] = {}

    def visit(entry) -> None:
        if entry.fingerprint is not None and entry.item >= covered:
            bloom.add(entry.fingerprint)
        if not entry.done:
            queue.push(
                entry.item, (entry.weight, entry.priority), slots.setdefault(entry.slot, len(slots))
            )

    log.open(visit)
    print(
        f"resume in a fresh process: {len(queue):,} pending in "
        f"{time.perf_counter() - start:.0f} s, RSS {rss_mb():,.0f} MB (before: {before:,.0f} MB)"
    )
    log.close()


def waiting_rate(hosts: int, per_host: int = 5, old: bool = False) -> float:
    """Picks a CPU second when most hosts wait (their delay): each pick's host waits for the
    next 90% of the hosts' worth of picks, so a tenth of them are ready at any time. The
    ready-host queue is told which hosts wait (block, unblock); the queue before it (tests/
    reference_queue.py, `old`) was asked of each host at each pick."""
    from collections import deque

    from tests.reference_queue import FrontierQueue as OldQueue

    rng = random.Random(3)
    kind = OldQueue if old else FrontierQueue
    queue = kind(3, 1, seed=1, turns=16)
    for item in range(hosts * per_host):
        queue.push(item, (rng.randrange(4, 10), 0), item % hosts)
    waits, blocked = deque(), bytearray(hosts)
    hold = int(hosts * 0.9)
    picks = hosts + min(hosts, 20_000)  # the first `hosts` picks, untimed, fill the waits
    start = 0.0
    for pick in range(picks):
        if pick == hosts:
            start = time.process_time()
        while waits and waits[0][0] <= pick:
            _, slot = waits.popleft()
            blocked[slot] = 0
            if not old:
                queue.unblock(slot)
        item = queue.pop(blocked.__getitem__) if old else queue.pop()
        if item is None:
            break
        slot = item % hosts
        blocked[slot] = 1
        if not old:
            queue.block(slot)
        waits.append((pick + hold, slot))
    return (picks - hosts) / (time.process_time() - start)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--pending", type=int, default=0, help="RSS run with this many pending")
    parser.add_argument("--resume", type=Path, help=argparse.SUPPRESS)  # pending_rss's child
    parser.add_argument("--waiting", help="hosts, e.g. 1000,10000,100000: picks a CPU second "
                        "with 90%% of them waiting, this queue against the one before it")
    args = parser.parse_args()
    if args.waiting:
        for hosts in map(int, args.waiting.split(",")):
            new, old = waiting_rate(hosts), waiting_rate(hosts, old=True)
            print(f"{hosts:>7,} hosts, 90% waiting: ready-host queue {new:9,.0f} picks per CPU "
                  f"s, the queue before it {old:9,.0f} ({new / old:.1f}x)", flush=True)
        return 0
    if args.resume:
        resume(args.resume)
        return 0
    if args.pending:
        pending_rss(args.pending)
    else:
        rates = measure(args.requests, args.rounds)
        for kind, values in rates.items():
            wall = statistics.median(wall for wall, _ in values)
            cpu = statistics.median(cpu for _, cpu in values)
            print(f"median {kind:16s}: {wall:9,.0f} requests/s push+pop, {cpu:9,.0f} per CPU s")
    print(f"machine: {os.cpu_count()} cores, python {sys.version.split()[0]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
