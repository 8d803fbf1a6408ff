"""The shared frontier on a real redis-server: order, dedup, ownership, leases, end, restart."""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import os
import random
import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace

import pytest
import redis
import redis.asyncio

from tests.aio import aio, opened
from tests.conftest import project_crawler
from tests.redis_cluster import RedisCluster
from tests.redis_server import RedisServer
from tianwang.config.frontier import FrontierConfig
from tianwang.config.shared_crawl import RedisConfig
from tianwang.distributed import bloom
from tianwang.distributed.bloom import BloomShape
from tianwang.distributed.connection import connect_async
from tianwang.distributed.mapping import bucket_of
from tianwang.distributed.redisfrontier import PROBE_TIMEOUT, Push, RedisFrontier, job_prefix
from tianwang.distributed.redisscheduler import open_frontier
from tianwang.frontier.queue import FrontierQueue
from tianwang.order import key_of, rank_in, rank_of

BUCKETS = 64
_jobs = itertools.count()


def fingerprint(url: str) -> bytes:
    return hashlib.sha1(url.encode()).digest()


def push_of(url: str, weight: int, priority: int = 0, dont_filter: bool = False) -> Push:
    host = url.split("/")[2]
    fp = None if dont_filter else fingerprint(url)
    return Push(bucket_of(host, BUCKETS), weight, priority, url.encode(), fp)


@pytest.fixture
def job() -> str:
    return f"job{next(_jobs)}"


def node(server: RedisServer, job: str, name: str, expected: int = 10_000, shards: int = 1,
         error_rate: float = 1e-6, **options: object):
    """A node's frontier of the job; with shards > 1, over that many shards (the first
    node's choice of tags, as the crawl makes it), behind the same interface."""
    if shards > 1:  # as the Redis scheduler opens it, the host turns and link cash off
        settings = project_crawler(
            TIANWANG_REDIS_URL=server.url, TIANWANG_REDIS_JOB=job, TIANWANG_NODE_NAME=name,
            TIANWANG_BUCKETS=BUCKETS, TIANWANG_REDIS_SHARDS=shards,
            TIANWANG_EXPECTED_URLS=expected, TIANWANG_HOST_TURNS=0, TIANWANG_HOST_FIRST=0,
            TIANWANG_SEED_HOST_FIRST=0, TIANWANG_LINK_WEIGHT=0).settings
        return opened(open_frontier(RedisConfig.from_settings(settings),
                                    FrontierConfig.from_settings(settings)))
    client = redis.asyncio.Redis.from_url(server.url)
    return opened(RedisFrontier(client, job, name, BUCKETS,
                                BloomShape.for_capacity(expected, error_rate), **options))


def inspect(server: RedisServer) -> redis.Redis:
    """A blocking client, to look at the keys from the test."""
    return redis.Redis.from_url(server.url)


async def drain(frontier: RedisFrontier) -> list[str]:
    taken = await frontier.take(10_000, 0)
    await frontier.ack(t.member for t in taken)
    return [t.blob.decode() for t in taken]


@aio
async def test_sorted_takes_follow_weight_then_priority_then_arrival(redis_server, job) -> None:
    a = node(redis_server, job, "a")
    await a.heartbeat(30)
    pushes = [
        push_of("http://h1.example.com/x/y.html", 8),
        push_of("http://h2.example.com/", 10),
        push_of("http://h3.example.com/p", 9),
        push_of("http://h4.example.com/x/y.html", 8, priority=2),
        push_of("http://h5.example.com/x/y.html", 8),
        push_of("http://h6.example.com/q", 9),
        push_of("http://h7.example.com/deep", -3, priority=-1),
    ]
    assert await a.push(pushes) == [True] * len(pushes)
    assert await drain(a) == [
        "http://h2.example.com/",
        "http://h3.example.com/p",  # 9, first come
        "http://h6.example.com/q",
        "http://h4.example.com/x/y.html",  # 8, priority 2
        "http://h1.example.com/x/y.html",
        "http://h5.example.com/x/y.html",
        "http://h7.example.com/deep",
    ]


@aio
@pytest.mark.parametrize("shards", [1, 3])
async def test_taken_entries_carry_their_weight_and_priority(
    redis_server, job, shards: int
) -> None:
    a = node(redis_server, job, "a", shards=shards)
    await a.heartbeat(30)
    await a.push([push_of("http://h.example.com/", 7, priority=-5)])
    (taken,) = await a.take(1, 0)
    assert (taken.weight, taken.priority) == (7, -5)
    assert taken.bucket == bucket_of("h.example.com", BUCKETS)


@aio
@pytest.mark.parametrize("shards", [1, 3])
async def test_the_bloom_filter_drops_a_url_seen_by_any_node(
    redis_server, job, shards: int
) -> None:
    a, b = node(redis_server, job, "a", shards=shards), node(redis_server, job, "b", shards=shards)
    await a.heartbeat(30)
    await b.heartbeat(30)
    url = "http://dup.example.com/page.html"
    assert await a.push([push_of(url, 9), push_of(url, 9)]) == [True, False]
    assert await b.push([push_of(url, 9)]) == [False]
    assert await b.push([push_of(url, 9, dont_filter=True)]) == [True]  # dont_filter: always


@aio
async def test_bloom_false_positives_stay_near_the_error_rate(redis_server, job) -> None:
    a = node(redis_server, job, "a", expected=5_000, error_rate=1e-2)
    await a.heartbeat(30)
    urls = [f"http://h{i % 50}.example.com/{i}" for i in range(10_000)]
    filling = await a.push([push_of(url, 5) for url in urls[:5_000]])
    assert filling.count(False) < 0.01 * len(filling)  # a filling filter errs less
    # 1000 new urls (each added as it is tested, so the filter ends 20% past capacity).
    fresh = await a.push([push_of(url, 5) for url in urls[5_000:6_000]])
    assert fresh.count(False) / len(fresh) < 0.025  # about 1.3% expected


@aio
@pytest.mark.parametrize("stages", [bloom.STAGES, 1], ids=["stages", "one-filter"])
async def test_past_its_size_the_shared_filter_adds_stages_and_errs_little(
        redis_server, job, monkeypatch: pytest.MonkeyPatch, stages: int) -> None:
    """Ten times the urls it was sized for: new urls taken for seen stay under twice the
    error rate; one filter overfilled (the ablation) takes most of them for seen."""
    monkeypatch.setattr(bloom, "STAGES", stages)
    a = node(redis_server, job, "a", expected=2_000, error_rate=1e-2)
    await a.heartbeat(30)
    urls = [f"http://h{i % 50}.example.com/{i}" for i in range(25_000)]
    for start in range(0, 20_000, 1_000):
        await a.push([push_of(url, 5) for url in urls[start : start + 1_000]])
    fresh = await a.push([push_of(url, 5) for url in urls[20_000:]])
    taken = fresh.count(False) / len(fresh)
    fill = inspect(redis_server).hgetall(a.key("bloom:fill"))
    if stages > 1:
        assert taken < 2e-2 and fill[b"stages"] == b"4", (taken, fill)  # 2,000 + 4,000 + ...
    else:
        assert taken > 0.3, taken


@aio
@pytest.mark.parametrize("shards", [1, 3])
async def test_random_takes_reach_every_request_once(redis_server, job, shards: int) -> None:
    a = node(redis_server, job, "a", shards=shards)
    await a.heartbeat(30)
    urls = {f"http://r{i}.example.com/" for i in range(40)}
    await a.push([push_of(url, 10) for url in sorted(urls)])
    seen: list[str] = []
    while taken := await a.take(0, 3):
        assert len(taken) <= 3
        seen += [t.blob.decode() for t in taken]
    assert sorted(seen) == sorted(urls)
    # Random: the first dozen are not simply the first come.
    assert seen[:12] != sorted(urls, key=lambda u: int(u[8:].split(".")[0]))[:12]


@aio
@pytest.mark.parametrize("shards", [1, 3])
async def test_a_request_goes_to_the_queue_of_its_hosts_owner(
    redis_server, job, shards: int
) -> None:
    a, b = node(redis_server, job, "a", shards=shards), node(redis_server, job, "b", shards=shards)
    await a.heartbeat(30)
    await b.heartbeat(30)
    table = (await a.heartbeat(30)).table or await a.table()
    assert set(table) == {"a", "b"}
    urls = [f"http://o{i}.example.com/" for i in range(60)]
    await a.push([push_of(url, 10) for url in urls])
    got_a, got_b = await drain(a), await drain(b)
    assert sorted(got_a + got_b) == sorted(urls)
    for url, owner in [(u, "a") for u in got_a] + [(u, "b") for u in got_b]:
        assert table[bucket_of(url.split("/")[2], BUCKETS)] == owner


@aio
@pytest.mark.parametrize("shards", [1, 3])
async def test_a_dead_nodes_leases_and_queue_go_to_the_live_nodes(
    redis_server, job, shards: int
) -> None:
    a, b = node(redis_server, job, "a", shards=shards), node(redis_server, job, "b", shards=shards)
    await a.heartbeat(1)
    await b.heartbeat(1)
    urls = [f"http://d{i}.example.com/" for i in range(60)]
    await a.push([push_of(url, 10) for url in urls])
    held = await a.take(5, 0)  # leased by a, which then dies
    assert held
    for _ in range(300):  # until b sees a's key expired (Redis's clock: 1 s)
        time.sleep(0.1)
        membership = await b.heartbeat(1)
        if membership.reaped:
            break
    assert membership.reaped > 0
    assert set(await b.table()) == {"b"}
    assert sorted(await drain(b)) == sorted(urls)
    assert await b.finished()


@aio
@pytest.mark.parametrize("shards", [1, 3])
async def test_the_end_needs_a_seed_every_start_pushed_and_no_lease_out(
    redis_server, job, shards: int
) -> None:
    a = node(redis_server, job, "a", shards=shards)
    await a.heartbeat(30)
    assert not await a.finished()  # nothing pushed yet: a joining node waits for the seeds
    await a.starting(True)
    await a.push([push_of("http://e.example.com/", 10)])
    assert not await a.finished()
    await a.starting(False)
    (taken,) = await a.take(1, 0)
    assert not await a.finished()  # leased, not done
    await a.ack([taken.member])
    assert await a.finished()


@aio
@pytest.mark.parametrize("shards", [1, 3])
async def test_a_released_request_is_taken_again(redis_server, job, shards: int) -> None:
    a = node(redis_server, job, "a", shards=shards)
    await a.heartbeat(30)
    await a.push([push_of("http://g.example.com/", 10)])
    (taken,) = await a.take(1, 0)
    await a.release([taken.member])
    assert [t.member for t in await a.take(1, 0)] == [taken.member]


@aio
@pytest.mark.parametrize("shards", [1, 3])
async def test_a_redis_restart_loses_no_queued_request(tmp_path, shards: int) -> None:
    server = RedisServer(tmp_path / "redis").start()
    try:
        a = node(server, "restart", "a", shards=shards)
        await a.heartbeat(30)
        urls = [f"http://s{i}.example.com/p{i % 3}" for i in range(100)]
        await a.push([push_of(url, 10 - i % 3) for i, url in enumerate(urls)])
        server.restart()
        a = node(server, "restart", "a", shards=shards)
        assert sorted(await drain(a)) == sorted(urls)
        assert await a.push([push_of(urls[0], 10)]) == [False]  # the Bloom filter survived too
    finally:
        server.stop()


@aio
@pytest.mark.parametrize("shards", [1, 3])
async def test_what_a_leaving_node_holds_goes_to_the_others(redis_server, job, shards: int) -> None:
    a, b = node(redis_server, job, "a", shards=shards), node(redis_server, job, "b", shards=shards)
    await a.heartbeat(30)
    await b.heartbeat(30)
    urls = [f"http://l{i}.example.com/" for i in range(60)]
    await a.push([push_of(url, 10) for url in urls])
    held = await a.take(3, 0)
    await a.release([t.member for t in held])
    await a.leave()
    assert not await b.finished()  # a's requests are still to be fetched
    await b.heartbeat(30)  # rebalances without a, then hands on what a left
    assert set(await b.table()) == {"b"}
    assert sorted(await drain(b)) == sorted(urls)
    assert await b.finished()


@aio
@pytest.mark.parametrize(("turns", "order"), [(0, "a1 a2 a3 b1 b2 b3"), (2, "a1 b1 a2 b2 a3 b3")])
async def test_hosts_take_turns_among_equal_weights_as_in_the_local_frontier(
    redis_server, job, turns: int, order: str
) -> None:
    a = node(redis_server, job, "a", turns=turns)
    await a.heartbeat(30)
    pushes = []
    for name in ("a1", "a2", "a3", "b1", "b2", "b3"):
        url = f"http://{name[0]}.example.com/{name}"
        pushes.append(Push(0, 9, 0, url.encode(), fingerprint(url), f"{name[0]}.example.com"))
    await a.push(pushes)
    assert [url.rsplit("/", 1)[1] for url in await drain(a)] == order.split()


@aio
async def test_a_hosts_first_requests_come_in_the_local_frontiers_order(redis_server, job) -> None:
    """The shared frontier's scores against the local queue (itself checked against a
    reference in test_frontier_queue.py): the same pushes, seeds among them, leave Redis in
    the local queue's sorted order, and each taken entry says its first turn."""
    rng = random.Random(25)
    a = node(redis_server, job, "a", turns=4, first=2, seed_first=5)
    await a.heartbeat(30)
    local = FrontierQueue(10**6, 1, turns=4, first=2, seed_first=5)
    pushes = []
    for item in range(2_000):
        slot, weight = rng.randrange(60), rng.choice([9, 8, 8, 5, 3, 0, -2])
        seed = slot % 6 == 0 and rng.random() < 0.3
        url = f"http://h{slot}.example.com/{item}"
        pushes.append(Push(0, weight, 0, url.encode(), fingerprint(url), f"h{slot}", seed))
        local.push(item, (weight, 0), slot, seed)
    for start in range(0, len(pushes), 100):  # in batches, as a node pushes
        await a.push(pushes[start:start + 100])
    taken = await a.take(10_000, 0)
    assert [int(t.blob.rsplit(b"/", 1)[1]) for t in taken] == drain_queue(local)
    turns = [t.first_turn for t in taken]
    assert turns[0] == 0 and None in turns and max(t for t in turns if t is not None) == 4
    assert [t.weight for t in taken if t.first_turn is None] == sorted(
        (t.weight for t in taken if t.first_turn is None), reverse=True)


@aio
async def test_a_seed_found_by_a_link_first_still_gives_its_host_a_seeds_first_requests(
        redis_server, job) -> None:
    a = node(redis_server, job, "a", first=2, seed_first=5)
    await a.heartbeat(30)
    home, host = "http://h.example.com/", "h.example.com"
    await a.push([Push(0, 9, 0, home.encode(), fingerprint(home), host, False)])  # a link's
    await a.push([Push(0, 9, 0, home.encode(), fingerprint(home), host, True)])  # the seed: seen
    pages = [f"{home}p{i}.html" for i in range(8)]
    await a.push([Push(0, 5, 0, url.encode(), fingerprint(url), host, False) for url in pages])
    taken = await a.take(100, 0)
    assert len(taken) == 9
    assert sum(t.first_turn is not None for t in taken) == 5  # not the 2 of a linked host


def drain_queue(queue: FrontierQueue) -> list[int]:
    out = []
    while (item := queue.pop()) is not None:
        out.append(item)
    return out


@aio
async def test_the_script_sets_the_bits_python_computes(redis_server, job) -> None:
    a = node(redis_server, job, "a", expected=1_000)
    await a.heartbeat(30)
    urls = [f"http://b{i}.example.com/" for i in range(50)]
    await a.push([push_of(url, 5) for url in urls])
    client = inspect(redis_server)
    for url in urls:
        for position in a.bloom.positions(fingerprint(url)):
            assert client.getbit(a.key("bloom:0"), position) == 1


@aio
async def test_a_stored_mark_reaches_the_next_taker_and_goes_with_the_ack(
    redis_server, job
) -> None:
    a, b = node(redis_server, job, "a"), node(redis_server, job, "b")
    await a.heartbeat(1)
    await a.push([push_of("http://m.example.com/", 10)])
    (taken,) = await a.take(1, 0)
    assert not taken.stored
    a.stored(taken.member)  # a stores the page, then dies before its ack
    await a.sync((), (), 0, 0)  # (the mark's reply is read by the next sync)
    time.sleep(1.2)
    await b.heartbeat(1)  # reaps a: the request is b's now, marked as stored
    (again,) = await b.take(1, 0)
    assert again.member == taken.member and again.stored
    await b.ack([again.member])
    assert not inspect(redis_server).hexists(b.key("stored"), again.member)


@aio
async def test_a_probe_of_a_redis_gone_answers_within_its_timeout_and_marks_wait(tmp_path) -> None:
    """With the product's client (each call retries for about 30 s), reachable() says no
    within PROBE_TIMEOUT of a stopped server; a mark made meanwhile (send=False) reaches Redis
    with the first sync once it is back, and the server's own data (AOF) is all there."""
    server = RedisServer(tmp_path / "redis").start()
    try:
        a = opened(RedisFrontier(connect_async(server.url), "away", "a", BUCKETS,
                                 BloomShape.for_capacity(10_000, 1e-6)))
        await a.load_scripts()
        await a.heartbeat(60)
        await a.push([push_of("http://w.example.com/", 10)])
        (taken,) = await a.take(1, 0)
        assert await a.reachable()
        server.stop()
        began = time.monotonic()
        assert not await a.reachable()
        # Within its own timeout, with a margin for a loaded machine: far from the client's 30 s.
        assert time.monotonic() - began < PROBE_TIMEOUT * 5
        a.stored(taken.member, send=False)
        assert a.marks_unsent == 1
        server.start()
        assert await a.reachable()
        await a.sync((), (), 0, 0)
        assert a.marks_unsent == 0
        assert inspect(server).hexists(a.key("stored"), taken.member)
    finally:
        server.stop()


# --- on a Redis Cluster: each sync's writes on the replica before its reply is used ---------


async def cluster_node(cluster: RedisCluster, job: str) -> tuple[RedisFrontier, int]:
    """A node of the job on the cluster, joined, its scripts loaded as a scheduler's are at
    open (a first push would otherwise be sent twice, and wait twice for a stopped replica);
    and the port of the replica of the job's master."""
    client = connect_async(cluster.url, job_prefix(job))
    frontier = opened(RedisFrontier(client, job, "a", BUCKETS,
                                    BloomShape.for_capacity(10_000, 1e-6), replicas=1))
    await frontier.load_scripts()
    await frontier.heartbeat(30)
    return frontier, cluster.replica_of(cluster.master_of(frontier.prefix))


@contextmanager
def stopped(process) -> Iterator[None]:
    """A redis-server stopped (SIGSTOP: a replica stalled) until the block ends."""
    os.kill(process.pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(process.pid, signal.SIGCONT)


@aio
async def test_on_a_cluster_a_sync_returns_once_its_writes_are_on_the_replica(
    redis_cluster: RedisCluster, job: str
) -> None:
    """Ordered by events, not by the clock: with the replica stopped, the push's write is on
    the master and its reply still not back (its WAIT waits for the replica, for as long as
    this test lets it: a minute); once the replica runs again the reply comes, the replica
    confirmed it, and the replica holds the request."""
    frontier, replica = await cluster_node(redis_cluster, job)
    frontier.queue.wait_ms = 60_000
    master = redis_cluster.master_of(frontier.prefix)
    with stopped(redis_cluster.procs[replica]):
        push = asyncio.ensure_future(frontier.push([push_of("http://a.example.com/", 9)]))
        with redis_cluster.node(master) as client:
            while not client.hlen(frontier.key("req")):  # the write is on the master ...
                assert not push.done(), push
                await asyncio.sleep(0.01)
        await asyncio.sleep(0.05)
        assert not push.done()  # ... and its reply waits for the stopped replica
    assert await push == [True]
    assert frontier.unreplicated == 0
    with redis_cluster.node(replica) as client:  # the replica holds the request
        client.execute_command("READONLY")
        assert client.hlen(frontier.key("req")) == 1


@aio
async def test_on_a_cluster_a_replica_down_costs_one_wait_then_the_crawl_goes_on(
    redis_cluster: RedisCluster, job: str
) -> None:
    frontier, replica = await cluster_node(redis_cluster, job)
    with stopped(redis_cluster.procs[replica]):
        began = time.monotonic()
        await frontier.push([push_of("http://a.example.com/", 9)])
        first = time.monotonic() - began
        await frontier.push([push_of("http://b.example.com/", 9)])
    assert first >= 0.9  # it waited WAIT_MS for the replica, then gave up on it ...
    # ... and the second push did not wait: a WAIT then would have missed the stopped
    # replica too (a time bound would be at the mercy of the machine's load).
    assert frontier.unreplicated == 1
    assert [t.blob for t in await frontier.take(10, 0)] == [b"http://a.example.com/",
                                                           b"http://b.example.com/"]


@aio
async def test_a_links_cash_raises_a_queued_url_and_leaves_with_its_ack(redis_server, job) -> None:
    """A push of a url seen before brings its share: a queued url rises above its equal, a
    taken one gains cash only; once acked nothing of it is left but its Bloom bits, and a
    later link to it records nothing."""
    client = redis.Redis.from_url(redis_server.url)
    a = node(redis_server, job, "a", link_weight=1.0)
    await a.heartbeat(30)
    u, v = "http://h1.example.com/x", "http://h2.example.com/y"

    def linked(url: str, share: float) -> Push:
        return replace(push_of(url, 5), share=share)

    def entries() -> int:
        return sum(client.hlen(key) for key in client.scan_iter(a.key("link:*")))

    assert (await a.sync([linked(u, 1 / 8), linked(v, 1 / 8)], (), 0, 0))[0] == [True, True]
    assert (await a.sync([linked(v, 1.0)], (), 0, 0))[0] == [False]  # 1/8 -> 9/8: 3 doublings up
    assert a.raised == 1
    taken = await a.take(10, 0)  # the weight pushed, 5, plus the bonus of the cash: -3, then 0
    assert [(t.blob.decode(), t.weight) for t in taken] == [(v, 5), (u, 2)]
    await a.sync([linked(v, 1.0)], (), 0, 0)  # taken: its cash grows, nothing to raise
    assert a.raised == 0
    assert await a.cash_of([fingerprint(u), fingerprint(v)]) == [1 / 8, 17 / 8]
    assert entries() == 2
    await a.ack([t.member for t in taken],
                [a.link_key(fingerprint(t.blob.decode())) for t in taken])
    assert entries() == 0
    assert (await a.sync([linked(v, 1.0)], (), 0, 0))[0] == [False]
    assert entries() == 0 and await a.cash_of([fingerprint(v)]) == [0.0]


@aio
async def test_a_queue_past_its_window_is_packed_and_comes_back_whole_in_order(
    redis_server, job
) -> None:
    """Past the window the worst requests leave the queue (and their stored requests) for
    compressed chunks; taken in batches, with the window kept as a heartbeat keeps it, every
    request comes back once, in the order of weight then arrival, as with no window."""
    client = redis.Redis.from_url(redis_server.url)
    a = node(redis_server, job, "a")
    await a.heartbeat(30)
    rng = random.Random(7)
    urls = [f"http://h{i % 37}.example.com/p{i}" for i in range(2500)]
    weights = [rng.randint(0, 20) for _ in urls]
    await a.push([push_of(url, weight) for url, weight in zip(urls, weights, strict=True)])
    window = await a.window(1000)
    assert window.packed == 2500 - 750 and window.chunks == 2
    assert client.zcard(a.key("q:a")) == 750 and client.hlen(a.key("req")) == 750
    taken: list[str] = []
    while batch := await a.take(100, 0):
        taken += [t.blob.decode() for t in batch]
        await a.ack(t.member for t in batch)
        await a.window(1000)
    expected = sorted(range(len(urls)), key=lambda i: (-weights[i], i))
    assert taken == [urls[i] for i in expected]
    assert client.hlen(a.key("chunks")) == 0 and await a.finished()


@aio
async def test_a_dead_nodes_chunks_go_to_the_node_that_reaps_it(redis_server, job) -> None:
    """The chunks of a node taken for dead are the reaping node's to unpack: the job is not
    finished while a chunk is left, and every request is taken once."""
    a, b = node(redis_server, job, "a"), node(redis_server, job, "b")
    await a.heartbeat(1)
    urls = [f"http://h{i % 11}.example.com/p{i}" for i in range(300)]
    await a.push([push_of(url, 5) for url in urls])
    await a.starting(False)
    assert (await a.window(100)).chunks == 1
    await b.heartbeat(30)
    time.sleep(1.2)  # a's heartbeat key expires: a is dead
    assert (await b.heartbeat(30)).reaped == 75  # a's queue (75 left of the window's 3/4)
    first = await drain(b)
    assert len(first) == 75 and not await b.finished()  # a chunk is left
    assert (await b.window(100)).unpacked == 225
    assert sorted(first + await drain(b)) == sorted(urls)
    assert await b.finished()


@aio
async def test_a_damaged_chunk_is_set_aside_and_the_others_still_come_back(
    redis_server, job
) -> None:
    client = redis.Redis.from_url(redis_server.url)
    a = node(redis_server, job, "a")
    await a.heartbeat(30)
    urls = [f"http://h{i % 7}.example.com/p{i}" for i in range(60)]
    await a.push([push_of(url, 5) for url in urls[:40]])  # equal weights: taken in arrival order
    assert (await a.window(10)).packed == 33  # urls 7-39; 0-6 stay queued
    await a.push([push_of(url, 5) for url in urls[40:]])
    assert (await a.window(10)).packed == 20  # urls 40-59: a second chunk
    best = client.zrange(a.key("pack:a"), 0, 0)[0]
    client.hset(a.key("chunks"), best, b"not zlib")
    taken = await drain(a)
    assert (await a.window(10)).damaged == (best.decode(),)
    assert client.hget(a.key("badchunks"), best) == b"not zlib"
    assert sorted(taken + await drain(a)) == sorted(urls[:7] + urls[40:])
    assert await a.finished()


@aio
@pytest.mark.parametrize("start", [2**31 - 40, 2**32 - 40])
async def test_a_shard_past_two_to_the_31_pushes_keeps_weights_order_and_every_request(
    redis_server, job, start: int
) -> None:
    """A shard's counter of pushes passes 2**31 and 2**32 in a long busy crawl (a month at
    a few thousand new urls a second): the requests pushed across it keep their weights,
    leave by weight, and all come back once, through the window's chunks too; a link then
    still raises a url pushed past it."""
    client = redis.Redis.from_url(redis_server.url)
    a = node(redis_server, job, "a", link_weight=1.0)
    await a.heartbeat(30)
    client.set(a.key("seq"), start)
    rng = random.Random(3)
    urls = [f"http://h{i % 13}.example.com/p{i}" for i in range(300)]
    weights = [rng.randint(0, 9) for _ in urls]
    await a.push([replace(push_of(url, weight), share=1.0)
                  for url, weight in zip(urls, weights, strict=True)])
    assert int(client.get(a.key("seq"))) > start + 200
    # Every score reads back the rank it was given (the key of its weight, turn 0).
    scores = client.zrange(a.key("q:a"), 0, -1, withscores=True)
    assert {rank_in(score) for _member, score in scores} <= {
        rank_of(key_of(weight, 0), 0) for weight in range(10)}
    raised = urls[-1]  # pushed past the counter's wrap: a link brings it 2**12 doublings more
    assert await a.push([replace(push_of(raised, weights[-1]), share=4096.0)]) == [False]
    assert a.raised == 1
    assert (await a.window(100)).chunks >= 1
    taken = []
    while batch := await a.take(50, 0):
        taken += batch
        await a.ack(t.member for t in batch)
        await a.window(100)
    got = {t.blob.decode(): t.weight for t in taken}
    assert sorted(got) == sorted(urls) and len(taken) == len(urls)
    assert got[raised] == weights[-1] + 12
    expected = {url: weight for url, weight in zip(urls, weights, strict=True)} | {
        raised: weights[-1] + 12}
    assert got == expected
    assert [t.weight for t in taken] == sorted((t.weight for t in taken), reverse=True)
