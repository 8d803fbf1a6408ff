"""`tianwang feed`: urls into a running shared crawl (Redis), as scrapy-redis users feed theirs.

    python3 -m tianwang feed --redis redis://10.0.0.5:6379/0 --job cn1 http://www.pku.edu.cn/
    python3 -m tianwang feed --redis ... --job cn1 -f more-seeds.txt
    python3 -m tianwang feed --redis ... --job cn1 --reset      # delete the job's keys

The urls go to the job's list `tianwang:{<job>}:feed` (redis-cli rpush does the same). A node
of the job takes them within a poll (0.1 s) and pushes them as it pushes seeds: the Bloom
filter drops those the job has seen, and each is fetched by its host's node. A job whose
nodes all ended takes them when a node runs again. `--reset` deletes every key of the job,
so that running it again crawls afresh.
"""

from __future__ import annotations

import argparse
import sys

from tianwang.seeds import SeedError, load_seeds


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "feed", help="push urls into a running shared crawl's Redis feed (or --reset a job)",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--redis", required=True, metavar="URL",
                        help="the job's TIANWANG_REDIS_URL, redis://host:port/db")
    parser.add_argument("--job", required=True, help="the job's TIANWANG_REDIS_JOB")
    parser.add_argument("urls", nargs="*", metavar="URL", help="urls or host names")
    parser.add_argument("-f", "--file", help="a seeds file (one url a line, # comments)")
    parser.add_argument("--reset", action="store_true", help="delete every key of the job")
    parser.set_defaults(func=cmd_feed)


def cmd_feed(args: argparse.Namespace) -> int:
    import redis

    from tianwang.distributed.connection import job_client, shard_clients
    from tianwang.distributed.redisfrontier import job_prefix

    if args.reset == bool(args.urls or args.file):
        print("tianwang feed: give urls (or -f FILE), or --reset", file=sys.stderr)
        return 2
    urls: list[str] = []
    try:
        if args.file:
            urls += load_seeds(args.file)
        if args.urls:
            urls += load_seeds(",".join(args.urls))
    except SeedError as exc:
        print(f"tianwang feed: {exc}", file=sys.stderr)
        return 2
    prefix = job_prefix(args.job)
    try:
        if args.reset:
            deleted = 0
            for shard_prefix, client in shard_clients(args.redis, args.job):
                keys = list(client.scan_iter(match=f"{shard_prefix}*", count=1000))
                for start in range(0, len(keys), 1000):
                    client.delete(*keys[start:start + 1000])
                deleted += len(keys)
            print(f"deleted {deleted} keys of job {args.job}")
            return 0
        job_client(args.redis, prefix).rpush(f"{prefix}feed", *urls)
    except (redis.RedisError, ValueError) as exc:
        print(f"tianwang feed: {args.redis}: {exc}", file=sys.stderr)
        return 1
    print(f"pushed {len(urls)} urls into {prefix}feed")
    return 0
