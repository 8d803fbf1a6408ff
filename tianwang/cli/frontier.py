"""`tianwang frontier`: the pending requests of a crawl, by weight and by host, while it runs.

    python3 -m tianwang frontier JOBDIR                  # a local crawl run with -s JOBDIR=...
    python3 -m tianwang frontier --redis URL --job NAME  # a crawl shared through Redis

Reads only: the JOBDIR's request log and done list (a record being written is left out), or
the job's queues in Redis (ZSCAN, no lock). A JOBDIR shows each request's weight as pushed (a
url raised later by its links is counted at its first weight); Redis shows the weight its
queue holds it at, per node, and hosts by bucket (a host's bucket is its node's unit).
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

TOP = 20


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "frontier", help="a crawl's pending requests by weight and host (JOBDIR or Redis job)",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("jobdir", nargs="?", metavar="JOBDIR", help="the crawl's JOBDIR")
    parser.add_argument("--redis", metavar="URL", help="a shared crawl's TIANWANG_REDIS_URL")
    parser.add_argument("--job", help="a shared crawl's TIANWANG_REDIS_JOB")
    parser.set_defaults(func=cmd_frontier)


def cmd_frontier(args: argparse.Namespace) -> int:
    if bool(args.jobdir) == bool(args.redis) or bool(args.redis) != bool(args.job):
        print("tianwang frontier: give JOBDIR, or --redis URL --job NAME", file=sys.stderr)
        return 2
    if args.jobdir:
        return _jobdir(Path(args.jobdir))
    return _redis(args.redis, args.job)


def _jobdir(jobdir: Path) -> int:
    from tianwang.formats.requestlog import read_done, scan_log
    from tianwang.frontier.levels import SEPARATOR
    from tianwang.frontier.scheduler import STATE_DIR

    state = jobdir / STATE_DIR
    if not (state / "requests.log").exists():
        print(f"tianwang frontier: {jobdir}: no frontier log ({STATE_DIR}/requests.log)",
              file=sys.stderr)
        return 2
    done = read_done(state / "done.log")
    by_weight: Counter[int] = Counter()
    by_host: Counter[str] = Counter()
    logged = 0
    for record in scan_log(state / "requests.log"):
        logged += 1
        if record.item in done:
            continue
        by_weight[record.weight] += 1
        by_host[record.slot.split(SEPARATOR, 1)[0]] += 1  # the slot is the host and its level
    _print(f"{jobdir}: {sum(by_weight.values()):,} pending of {logged:,} logged",
           by_weight, by_host, "host")
    return 0


def _redis(url: str, job: str) -> int:
    import redis

    from tianwang.distributed.connection import shard_clients
    from tianwang.distributed.redisfrontier import job_prefix, packed_requests, weight_of_score

    try:
        shards = shard_clients(url, job)
        home = shards[-1][1]
        nodes = sorted(n.decode() for n in home.smembers(f"{job_prefix(job)}nodes"))
        by_weight: Counter[int] = Counter()
        by_bucket: Counter[str] = Counter()
        per_node: Counter[str] = Counter()
        packed: Counter[str] = Counter()
        for node in [*nodes, ""]:  # "" : the queue of no node (a bucket between owners)
            name = node or "(unowned)"
            for prefix, client in shards:
                for member, score in client.zscan_iter(f"{prefix}q:{node}", count=1000):
                    per_node[name] += 1
                    by_weight[weight_of_score(member, score)] += 1
                    by_bucket[member.decode().split(":", 1)[0]] += 1
                packed[name] += packed_requests(client, prefix, node)
            per_node[name] += packed[name]
        feed = home.llen(f"{job_prefix(job)}feed")
    except (redis.RedisError, ValueError) as exc:
        print(f"tianwang frontier: {url}: {exc}", file=sys.stderr)
        return 1
    head = (f"job {job}: {sum(per_node.values()):,} pending, {feed:,} urls in the feed; by node: "
            + ", ".join(f"{node} {n:,}" + (f" ({packed[node]:,} packed)" if packed[node] else "")
                        for node, n in per_node.items()))
    if any(packed.values()):
        head += ("\n(packed requests, the worst of a queue past TIANWANG_REDIS_WINDOW, are not "
                 "in the counts by weight and bucket)")
    _print(head, by_weight, by_bucket, "bucket")
    return 0


def _print(head: str, by_weight: Counter[int], by_host: Counter[str], what: str) -> None:
    print(head)
    print("by weight:")
    for weight, count in sorted(by_weight.items(), reverse=True):
        print(f"  w{weight}\t{count:,}")
    print(f"largest {what}s (top {TOP}):")
    for name, count in by_host.most_common(TOP):
        print(f"  {name}\t{count:,}")
