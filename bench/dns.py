"""Names resolved at once: the stack's resolver against Scrapy's, on a slow DNS server.

    python bench/dns.py [--names 500] [--delay 0.2] [--rounds 3]

A real DNS server on loopback (tests/dns_server.py, 127.0.0.77:53) answers every name under
.test after --delay seconds, as a remote recursive server answers a name it has not cached.
Each resolver, in a process of its own, is asked --names new names at once (as a crawl
meeting new hosts asks them) through reactor.nameResolver, the way Scrapy's HTTP client and
the host filter ask; the process's wall time until all are answered and its CPU time are
printed, and the most queries the server held at once. Every resolver reads
/etc/resolv.conf, pointed at the server by a bind mount in a private mount namespace
(unshare: root only; nothing outside the process sees it):

- scrapy: Scrapy's default, CachingThreadedResolver (getaddrinfo, IPv4, in Twisted's thread
  pool of REACTOR_THREADPOOL_MAXSIZE = 10);
- scrapy-64: the same with 64 threads;
- tianwang: tianwang.resolver.CachingResolver (the stack's default).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

ADDRESS = "127.0.0.77"  # loopback, port 53: the only port glibc's resolv.conf can name
KINDS = {
    "scrapy": ("scrapy.resolver.CachingThreadedResolver", 10),
    "scrapy-64": ("scrapy.resolver.CachingThreadedResolver", 64),
    "tianwang": ("tianwang.resolver.CachingResolver", 10),
}


def worker(kind: str, names: int, out: Path) -> None:
    """In the namespace: install the resolver as Scrapy does, ask every name at once."""
    from twisted.internet import asyncioreactor

    asyncioreactor.install()
    from scrapy.settings import Settings
    from scrapy.utils.misc import build_from_crawler, load_object
    from twisted.internet import defer, reactor

    import tianwang.default_settings as defaults
    from tianwang.middlewares.hostfilter import resolve

    path, threads = KINDS[kind]
    settings = Settings({name: getattr(defaults, name) for name in dir(defaults)
                         if name.startswith(("TIANWANG_DNS", "DNSCACHE"))})
    settings.set("REACTOR_THREADPOOL_MAXSIZE", threads)
    holder = type("Process", (), {"settings": settings})()  # what Scrapy passes: its process
    resolver = build_from_crawler(load_object(path), holder, reactor=reactor)
    resolver.install_on_reactor()
    reactor.getThreadPool().adjustPoolsize(maxthreads=threads)
    result: dict = {}

    async def run() -> None:
        start, cpu = time.monotonic(), time.process_time()
        found = await defer.gatherResults(
            [resolve(reactor, f"n{kind}-{n}.test", 80) for n in range(names)])
        result.update(wall=time.monotonic() - start, cpu=time.process_time() - cpu,
                      resolved=sum(1 for addresses in found if addresses))
        reactor.stop()

    reactor.callWhenRunning(lambda: defer.ensureDeferred(run()))
    reactor.run()
    out.write_text(json.dumps(result), encoding="utf-8")


def measure(kind: str, names: int, tmp: Path) -> dict:
    conf, out = tmp / "resolv.conf", tmp / f"{kind}.json"
    conf.write_text(f"nameserver {ADDRESS}\noptions timeout:5 attempts:1\n", encoding="utf-8")
    inner = (f"mount --bind {conf} /etc/resolv.conf && exec {sys.executable} "
             f"{Path(__file__).resolve()} --worker {kind} --names {names} --out {out}")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(["unshare", "--mount", "sh", "-c", inner], check=True,
                   env={**os.environ, "PYTHONPATH": str(ROOT)})
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    found = json.loads(out.read_text(encoding="utf-8"))
    found["process_cpu"] = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--names", type=int, default=500)
    parser.add_argument("--delay", type=float, default=0.2)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--worker", choices=sorted(KINDS))
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    if args.worker:
        worker(args.worker, args.names, args.out)
        return 0
    from tests.dns_server import DNSServerProcess

    runs: dict[str, list[dict]] = {kind: [] for kind in KINDS}
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        with DNSServerProcess(tmp / "dns.jsonl", "--address", ADDRESS, "--port", "53",
                              "--delay", str(args.delay)) as server:
            kinds = list(KINDS)
            for round_no in range(1, args.rounds + 1):
                for kind in kinds if round_no % 2 else kinds[::-1]:
                    seen = len(server.lines())
                    found = measure(kind, args.names, tmp)
                    asked = server.lines()[seen:]
                    found["most_waiting"] = max((q["waiting"] for q in asked), default=0)
                    found["queries"] = len(asked)
                    runs[kind].append(found)
                    print(f"round {round_no} {kind:9s}: {found['resolved']}/{args.names} "
                          f"resolved in {found['wall']:.2f} s, {found['queries']} queries, "
                          f"at most {found['most_waiting']} at once, lookups' cpu "
                          f"{found['cpu']:.2f} s (process {found['process_cpu']:.2f} s)",
                          flush=True)
    med = statistics.median
    for kind in KINDS:
        wall = med(r["wall"] for r in runs[kind])
        print(f"median {kind:9s}: {wall:.2f} s, {args.names / wall:.0f} names/s, "
              f"{1e6 * med(r['cpu'] for r in runs[kind]) / args.names:.0f} us cpu a name, "
              f"at most {med(r['most_waiting'] for r in runs[kind]):.0f} queries at once")
    print(f"{args.names} new names at once, the server answering each in {args.delay} s; "
          f"machine: {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
