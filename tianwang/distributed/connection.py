"""Clients of the shared crawl's Redis: one redis-server, or the masters of a Redis Cluster.

A job's keys are split into shards, each under one hash tag (shards.py), so on a Redis
Cluster each shard lives in one slot, served by one master: the scripts, pipelines and WATCH
of one redis-server run there unchanged. On a cluster a node holds a plain client per shard
(and one for the job's home) whose connections find that slot's master when they connect
(``CLUSTER SLOTS``, asked of any node known), and a reply saying the slot is served
elsewhere (MOVED, READONLY, CLUSTERDOWN: a failover under way) drops the connection and
retries, as a dropped connection is: after a failover the next connect finds the promoted
replica. The job's shard tags are chosen here, from the cluster's masters, by its first node
(job_tags).

Both clients ride out a restart or a failover for about 30 s before the crawl gives up."""

from __future__ import annotations

import functools
from typing import Any

import hiredis
import redis
import redis.asyncio
from redis.asyncio.retry import Retry as AsyncRetry
from redis.backoff import ExponentialBackoff
from redis.connection import HiredisRespSerializer
from redis.crc import key_slot
from redis.exceptions import ClusterDownError, MovedError, ReadOnlyError, TryAgainError
from redis.retry import Retry
from scrapy_redis.connection import get_redis

from tianwang.config import SettingError
from tianwang.config.shared_crawl import RedisConfig, safe_url
from tianwang.distributed.shards import (
    agree_tags,
    prefix_of,
    stored_tags,
    tags_for,
    wanted_ranges,
)

RETRY_BACKOFF, RETRY_TRIES = ExponentialBackoff(cap=0.5, base=0.05), 60
RETRY_ERRORS = [redis.ConnectionError, redis.TimeoutError, redis.BusyLoadingError]
# A cluster's answers while its slot moves to another master.
CLUSTER_ERRORS = [MovedError, ReadOnlyError, ClusterDownError, TryAgainError]
TIMEOUTS = {"socket_timeout": 30, "socket_connect_timeout": 10}


def connect(url: str, cluster_key: str | None = None) -> redis.Redis:
    """A client of the Redis at url; with cluster_key, of the master serving that key's slot
    in the Redis Cluster url is a node of."""
    if cluster_key is None:  # scrapy-redis's connection helper, as before
        return get_redis(url=url, retry=Retry(RETRY_BACKOFF, RETRY_TRIES),
                         retry_on_error=RETRY_ERRORS, health_check_interval=30, **TIMEOUTS)
    pool = _slot_master_pool(url, cluster_key, retry=Retry(RETRY_BACKOFF, RETRY_TRIES),
                             retry_on_error=RETRY_ERRORS + CLUSTER_ERRORS,
                             health_check_interval=30, **TIMEOUTS)
    return redis.Redis.from_pool(pool)  # closes the pool with the client


def connect_async(url: str, cluster_key: str | None = None) -> redis.asyncio.Redis:
    """The same, for asyncio (made in the crawl's event loop), its commands packed in C."""
    retry = {"retry": AsyncRetry(RETRY_BACKOFF, RETRY_TRIES)}
    if cluster_key is None:
        pool = redis.asyncio.ConnectionPool.from_url(url, retry_on_error=RETRY_ERRORS,
                                                     **retry, **TIMEOUTS)
    else:
        pool = _slot_master_pool(url, cluster_key, asynchronous=True,
                                 retry_on_error=RETRY_ERRORS + CLUSTER_ERRORS, **retry,
                                 **TIMEOUTS)
    pool.connection_class = _hiredis_packing(pool.connection_class)
    return redis.asyncio.Redis.from_pool(pool)  # closes the pool with the client


@functools.cache
def _hiredis_packing(connection_class: type) -> type:
    """The asyncio connection class, packing commands with hiredis as redis-py's synchronous
    client does (its asyncio one packs in Python: a shared node's largest client cost after
    reply parsing, which hiredis does for both)."""
    return type(f"Hiredis{connection_class.__name__}", (_HiredisPacking, connection_class), {})


class _HiredisPacking:
    """A mixin of redis-py's asyncio connections: pack_command in C."""

    _serializer = HiredisRespSerializer()

    def pack_command(self, *args: Any) -> list[bytes]:
        # redis-py's HiredisRespSerializer, less its look at every argument (half its time
        # on a push of 16 requests): hiredis refuses a bytearray or memoryview, which the
        # serializer then converts, and raises redis-py's DataError for what Redis cannot take.
        command = args[0]
        if isinstance(command, str):
            command = command.encode()
        if b" " in command:  # "CONFIG GET": the words go as separate arguments
            args = (*command.split(), *args[1:])
        try:
            return [hiredis.pack_command(args)]
        except TypeError:
            return self._serializer.pack(*args)


def job_client(url: str, prefix: str) -> redis.Redis:
    """A client of one job's keys for the command-line tools, which are not told the mode:
    the server says whether it is a cluster node. No retries: a dead server fails at once."""
    if not is_cluster_node(url):
        return redis.Redis.from_url(url, socket_connect_timeout=10)
    return redis.Redis.from_pool(_slot_master_pool(url, prefix, socket_connect_timeout=10))


def shard_clients(url: str, job: str) -> list[tuple[str, redis.Redis]]:
    """(prefix, client) of each shard of a job, as its home lists them (shards.py), for the
    command-line tools; the home alone for a job with one shard or none yet."""
    home = job_client(url, prefix_of(job))
    tags = stored_tags(home, job) or [job]
    clients = [(prefix_of(tag), home if tag == job else job_client(url, prefix_of(tag)))
               for tag in tags]
    if tags != [job]:
        clients.append((prefix_of(job), home))  # the home last: its feed, nodes and flags
    return clients


def _slot_master_pool(url: str, key: str, asynchronous: bool = False, **kwargs: Any):
    """A pool of connections to the master serving key's slot in url's cluster."""
    if asynchronous:
        pool_class, connection_class = redis.asyncio.ConnectionPool, AsyncSlotMasterConnection
    else:
        pool_class, connection_class = redis.ConnectionPool, SlotMasterConnection
    return pool_class.from_url(url, connection_class=connection_class,
                               locator=SlotLocator(url, key), **kwargs)


def check_redis(settings: Any, spider_name: str = "") -> None:
    """The distributed settings make sense and the Redis server answers, or SettingError."""
    config = RedisConfig.from_settings(settings, spider_name)
    try:
        cluster = is_cluster_node(config.url)
    except redis.RedisError as error:
        raise SettingError("TIANWANG_REDIS_URL", safe_url(config.url),
                           f"a Redis server ({error})") from None
    if cluster != config.cluster:  # the wrong client fails later, key by key (MOVED)
        wanted = "a Redis Cluster node" if config.cluster else "a Redis server not in a cluster"
        raise SettingError("TIANWANG_REDIS_URL", safe_url(config.url),
                           f"{wanted}, as TIANWANG_REDIS_CLUSTER = {config.cluster} says")
    job_tags(config)  # its shard count, against the job's
    failover = failover_seconds(config.url) if cluster else None
    if failover is not None and config.lease_seconds <= failover:
        # A node whose heartbeat waits out a failover past its lease is taken for dead and
        # its requests in flight given to another node: fetched and stored twice.
        raise SettingError("TIANWANG_LEASE_SECONDS", config.lease_seconds,
                           f"longer than a failover of this cluster (about {failover:g} s: "
                           "its cluster-node-timeout and 2 s)")


def job_tags(config: RedisConfig) -> list[str]:
    """The hash tags of the job's shards (shards.py), as its first node chose them; or
    SettingError if TIANWANG_REDIS_SHARDS asks another count."""
    masters = master_ranges(config.url) if config.cluster else None
    wanted = tags_for(config.job, wanted_ranges(config.shards, masters))
    with connect(config.url, prefix_of(config.job) if config.cluster else None) as home:
        tags = agree_tags(home, config.job, wanted)
    if config.shards and len(tags) != config.shards:
        raise SettingError("TIANWANG_REDIS_SHARDS", config.shards,
                           f"{len(tags)}, the shards job {config.job} was begun with (or 0)")
    return tags


def master_ranges(url: str) -> list[tuple[int, int]]:
    """The largest slot range of each master of url's cluster, in slot order."""
    with redis.Redis.from_url(url, socket_connect_timeout=10) as client:
        reply = client.execute_command("CLUSTER SLOTS")
    largest: dict[tuple[str, int], tuple[int, int]] = {}
    for start, end, master, *_replicas in reply:
        address = (_text(master[0]), int(master[1]))
        low, high = largest.get(address, (0, -1))
        if end - start > high - low:
            largest[address] = (int(start), int(end))
    return sorted(largest.values())


def is_cluster_node(url: str) -> bool:
    """Whether the Redis at url runs with cluster-enabled (raises RedisError if it does not
    answer)."""
    with redis.Redis.from_url(url, socket_connect_timeout=10) as client:
        return bool(client.info("cluster").get("cluster_enabled"))


def failover_seconds(url: str) -> float | None:
    """About how long a failover of the cluster url is a node of takes: its
    cluster-node-timeout to find the master dead, and a second or two to elect and promote
    a replica (measured here: 2.1-2.6 s at 1000 ms). None if CONFIG is not allowed."""
    try:
        with redis.Redis.from_url(url, socket_connect_timeout=10) as client:
            reply = client.config_get("cluster-node-timeout")
    except redis.ResponseError:  # CONFIG renamed or refused (managed services)
        return None
    value = reply.get("cluster-node-timeout")
    return int(value) / 1000 + 2 if value else None


class SlotLocator:
    """Finds the master serving one key's slot, asking the cluster's nodes it knows."""

    def __init__(self, url: str, key: str) -> None:
        seed = redis.ConnectionPool.from_url(url)
        options = dict(seed.connection_kwargs)
        first = (options.pop("host", "localhost"), int(options.pop("port", 6379)))
        self.known: list[tuple[str, int]] = [first]
        self.slot = key_slot(key.encode())
        # The url's credentials and TLS for every node (a cluster has only db 0).
        options.pop("db", None)
        self.options = {**options, "socket_timeout": 2, "socket_connect_timeout": 2}
        self.connection_class = seed.connection_class

    def master(self) -> tuple[str, int]:
        """(host, port) of the slot's master now; the first known node's if none answers
        (the connect then fails and is retried)."""
        for host, port in list(self.known):
            pool = redis.ConnectionPool(connection_class=self.connection_class, host=host,
                                        port=port, **self.options)
            try:
                with redis.Redis.from_pool(pool) as client:
                    ranges = client.execute_command("CLUSTER SLOTS")
            except redis.RedisError:
                continue
            found = self._learn(ranges)
            if found is not None:
                return found
        return self.known[0]

    def _learn(self, ranges: list) -> tuple[str, int] | None:
        """Remember every node named in a CLUSTER SLOTS reply; the master of our slot."""
        found = None
        for start, end, master, *replicas in ranges:
            for node in (master, *replicas):
                address = (_text(node[0]) or self.known[0][0], int(node[1]))
                if address not in self.known:
                    self.known.append(address)
            if start <= self.slot <= end:
                found = (_text(master[0]) or self.known[0][0], int(master[1]))
        return found


class SlotMasterConnection(redis.Connection):
    """A connection to whichever master serves the locator's slot when it connects."""

    def __init__(self, *, locator: SlotLocator, **kwargs) -> None:
        super().__init__(**kwargs)
        self.locator = locator

    def _connect(self):
        self.host, self.port = self.locator.master()
        return super()._connect()


class AsyncSlotMasterConnection(redis.asyncio.Connection):
    """The same for asyncio (the lookup blocks the loop briefly, only when connecting)."""

    def __init__(self, *, locator: SlotLocator, **kwargs) -> None:
        super().__init__(**kwargs)
        self.locator = locator

    async def _connect(self):
        self.host, self.port = self.locator.master()
        return await super()._connect()


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value
