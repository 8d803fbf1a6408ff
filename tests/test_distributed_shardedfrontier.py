"""A frontier over shards on a real redis-server: what the split adds to the one-shard
frontier (whose tests, in test_distributed_redisfrontier.py, run over three shards too)."""

from __future__ import annotations

import itertools
from collections import Counter

import pytest
import redis

from tests.aio import aio
from tests.test_distributed_redisfrontier import BUCKETS, drain, node, push_of
from tianwang.distributed.mapping import bucket_of
from tianwang.distributed.shards import prefix_of, shard_of

_jobs = itertools.count()


@pytest.fixture
def job() -> str:
    return f"sharded{next(_jobs)}"


@aio
async def test_each_shard_holds_its_buckets_requests(redis_server, job) -> None:
    a = node(redis_server, job, "a", shards=3)
    await a.heartbeat(30)
    urls = [f"http://s{i}.example.com/" for i in range(90)]
    await a.push([push_of(url, 5) for url in urls])
    client = redis.Redis.from_url(redis_server.url)
    tags = client.get(prefix_of(job) + "shards").decode().split(",")
    expected = Counter(shard_of(bucket_of(url.split("/")[2], BUCKETS), 3) for url in urls)
    for index, tag in enumerate(tags):
        assert client.zcard(prefix_of(tag) + "q:a") == expected[index]
    assert not client.exists(prefix_of(job) + "q:a")  # the home holds no request
    assert sorted(await drain(a)) == sorted(urls)


@aio
async def test_takes_go_where_the_nodes_queue_is(redis_server, job) -> None:
    """One host's urls are in one shard: once a take has seen the queues, each take of 10
    brings 10 (not a third of it from each shard)."""
    a = node(redis_server, job, "a", shards=3)
    await a.heartbeat(30)
    urls = [f"http://one.example.com/{i}" for i in range(60)]
    await a.push([push_of(url, 5) for url in urls])
    taken = await a.take(10, 0)
    while batch := await a.take(10, 0):
        assert len(batch) == min(10, len(urls) - len(taken))
        taken += batch
    assert sorted(t.blob.decode() for t in taken) == sorted(urls)


@aio
async def test_two_nodes_share_the_buckets_evenly_over_the_shards(redis_server, job) -> None:
    a, b = node(redis_server, job, "a", shards=3), node(redis_server, job, "b", shards=3)
    await a.heartbeat(30)
    await b.heartbeat(30)
    table = (await a.heartbeat(30)).table or await a.table()
    # 64 buckets in shards of 22, 21, 21: the odd bucket of each goes to another node.
    assert Counter(table) == {"a": 32, "b": 32}
    assert await b.table() == table


@aio
async def test_a_change_between_two_looks_at_the_end_is_seen(redis_server, job) -> None:
    """The end over shards is two looks that must agree: a url pushed, taken and acked in
    between leaves both looks empty but not the same, so the job is not taken for done."""
    a = node(redis_server, job, "a", shards=3)
    await a.heartbeat(30)
    await a.push([push_of("http://e.example.com/", 5)])
    await drain(a)
    assert await a.finished()
    first = await a._look()
    await a.push([push_of("http://f.example.com/", 5)])
    await drain(a)
    second = await a._look()
    assert first is not None and second is not None and first != second
    assert await a.finished()


@aio
async def test_a_shard_the_last_take_found_empty_is_looked_at_again(redis_server, job) -> None:
    """A take splits by what each shard held at the last one: a shard empty then and filled
    since (by another node's push) gets its share from the next takes on, while the
    first shard still holds plenty."""
    a, b = node(redis_server, job, "a", shards=3), node(redis_server, job, "b", shards=3)
    await a.heartbeat(30)
    big = [f"http://big.example.com/{i}" for i in range(100)]
    await a.push([push_of(url, 5) for url in big])
    await a.take(10, 0)  # learns: all of a's queue in big's shard
    small_host = next(f"small{i}.example.com" for i in range(100)
                      if shard_of(bucket_of(f"small{i}.example.com", BUCKETS), 3)
                      != shard_of(bucket_of("big.example.com", BUCKETS), 3))
    small = [f"http://{small_host}/{i}" for i in range(10)]
    await b.push([push_of(url, 5) for url in small])  # into a's queue, in another shard
    taken = []
    for _ in range(3):
        taken += [t.blob.decode() for t in await a.take(10, 0)]
    assert set(taken) & set(small)
    assert len(set(taken) & set(big)) >= 20  # big's shard still gives most
