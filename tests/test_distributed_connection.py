"""Clients of the shared crawl's Redis on a real Redis Cluster: the job's master found from any
node, and found again after a failover."""

from __future__ import annotations

import pytest
import pytest_twisted
import redis
import redis.asyncio
from scrapy.settings import Settings
from scrapy.utils.defer import deferred_from_coro

from tests.conftest import project_crawler
from tests.redis_cluster import RedisCluster
from tests.redis_server import RedisServer
from tianwang.config import SettingError
from tianwang.distributed.connection import check_redis, connect, connect_async, is_cluster_node
from tianwang.distributed.redisfrontier import job_prefix

PREFIX = job_prefix("conn")
# Two keys of the job, as the frontier's scripts build them (numkeys 0): one slot, one master.
BOTH = "redis.call('SET', ARGV[1] .. 'a', ARGV[2]); return redis.call('INCR', ARGV[1] .. 'b')"


def other_node(cluster: RedisCluster, key: str) -> str:
    """The url of a node that is not the key's master: the client must find it."""
    master = cluster.master_of(key)
    port = next(port for port in cluster.live_ports() if port != master)
    return f"redis://127.0.0.1:{port}"


def test_a_client_given_any_node_runs_the_jobs_scripts_on_its_master_and_after_failover(
    redis_cluster: RedisCluster,
) -> None:
    client = connect(other_node(redis_cluster, PREFIX), PREFIX)
    assert client.eval(BOTH, 0, PREFIX, "x") == 1
    assert client.execute_command("WAIT", 1, 2000) == 1  # on the replica before the kill
    master = redis_cluster.master_of(PREFIX)
    redis_cluster.kill(master)
    redis_cluster.wait_failover(master)
    # The same client, its connection to the dead master gone: it finds the promoted replica.
    assert client.eval(BOTH, 0, PREFIX, "y") == 2
    assert client.get(PREFIX + "a") == b"y"
    client.close()


@pytest_twisted.ensureDeferred
async def test_the_async_client_finds_the_jobs_master_too(redis_cluster: RedisCluster) -> None:
    """(The MD5 claims' client, in an asyncio task of the crawl's loop.)"""

    async def claim() -> list:
        client = connect_async(other_node(redis_cluster, PREFIX + "md5"), PREFIX + "md5")
        async with client.pipeline(transaction=False) as pipe:
            pipe.hsetnx(PREFIX + "md5", b"m", "http://a/")
            pipe.hsetnx(PREFIX + "md5", b"m", "http://b/")
            pipe.hget(PREFIX + "md5", b"m")
            replies = await pipe.execute()
        await client.aclose()
        return replies

    assert await deferred_from_coro(claim()) == [1, 0, b"http://a/"]


PACKED_ARGS = ("HSET", "k", b"\xff\x00", "\u00e9\u4e2d", 1 / 3, 2.0**-24, -0.0, 10**30, -5,
               memoryview(b"ab"), bytearray(b"cd"), b"x" * 10_000)


@pytest.mark.parametrize("url", ["redis://127.0.0.1:1/", "unix:///nowhere.sock",
                                 "rediss://127.0.0.1:1/"])
def test_the_async_clients_connections_pack_commands_as_redis_pys_own_do(url: str) -> None:
    """hiredis packs them (in C), byte for byte as redis-py's Python packer, whatever the
    url's connection kind; a value Redis cannot take is the same DataError."""
    packed = connect_async(url).connection_pool.make_connection()
    plain = redis.asyncio.Connection()
    assert type(packed).__name__.startswith("Hiredis")
    for args in (PACKED_ARGS, ("CONFIG GET", "maxmemory"), (b"CLIENT SETNAME", "n")):
        assert b"".join(packed.pack_command(*args)) == b"".join(plain.pack_command(*args))
    commands = [("SET", "a", 1.5), ("GET", "a")]
    assert b"".join(packed.pack_commands(commands)) == b"".join(plain.pack_commands(commands))
    for bad in (True, None):
        with pytest.raises(redis.DataError):
            packed.pack_command("SET", "k", bad)


def test_a_cluster_node_is_told_from_a_plain_server(
    redis_cluster: RedisCluster, redis_server: RedisServer
) -> None:
    assert is_cluster_node(redis_cluster.url)
    assert not is_cluster_node(redis_server.url)


def test_on_a_cluster_the_wrong_mode_or_a_lease_shorter_than_a_failover_is_refused(
    redis_cluster: RedisCluster,
) -> None:
    def settings(**values: object) -> Settings:
        return project_crawler(TIANWANG_REDIS_URL=redis_cluster.url, **values).settings

    with pytest.raises(SettingError, match="TIANWANG_REDIS_URL.*not in a cluster"):
        check_redis(settings())
    # The fixture's cluster-node-timeout is 2 s: a failover takes about 4 s.
    with pytest.raises(SettingError, match="TIANWANG_LEASE_SECONDS.*about 4 s"):
        check_redis(settings(TIANWANG_REDIS_CLUSTER=True, TIANWANG_LEASE_SECONDS=2))
    check_redis(settings(TIANWANG_REDIS_CLUSTER=True, TIANWANG_LEASE_SECONDS=10))


def test_more_shards_than_buckets_or_a_count_other_than_the_jobs_is_refused(
    redis_server: RedisServer,
) -> None:
    def settings(**values: object) -> Settings:
        return project_crawler(TIANWANG_REDIS_URL=redis_server.url, TIANWANG_REDIS_JOB="refuse",
                               **values).settings

    with pytest.raises(SettingError, match="TIANWANG_REDIS_SHARDS.*at most TIANWANG_BUCKETS"):
        check_redis(settings(TIANWANG_REDIS_SHARDS=100, TIANWANG_BUCKETS=64))
    check_redis(settings(TIANWANG_REDIS_SHARDS=4))  # the job's first node: 4 it is
    check_redis(settings())  # 0: whatever the job has
    with pytest.raises(SettingError, match="TIANWANG_REDIS_SHARDS.*4, the shards job refuse"):
        check_redis(settings(TIANWANG_REDIS_SHARDS=2))
