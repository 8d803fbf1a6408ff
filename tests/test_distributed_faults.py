"""A shared crawl meets faults of its Redis midway (issue: supervised loops): Redis at
maxmemory, Redis stalled by DEBUG SLEEP, a script failing on a key of the wrong type. Each
node pauses, says so in one line, goes on once the fault is gone, and the crawl's page set
is complete, each page stored once and fetched once; a fault that stays stops each node with
one line and status 1. Three real `scrapy crawl site` nodes on a real redis-server (and the
full-memory case on a real Redis Cluster too), against the test web's ground truth."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from tests import test_distributed_crawl as crawl
from tests.accesslog import line_count, served_since
from tests.redis_cluster import RedisCluster
from tests.redis_server import RedisServer
from tests.test_distributed_crawl import (
    JOB,
    ON_CLUSTER,
    WITH_REDIS_DEDUP,
    Web,
    assert_every_page_once,
    node_log,
    start_nodes,
    wait_all,
    wait_for_a_third,
    wait_in_every_log,
)
from tests.truth import load_truth, reach
from tianwang.distributed.redisfrontier import job_prefix
from tianwang.testweb.launcher import TestWebProcess

web, fresh_redis = crawl.web, crawl.fresh_redis  # the same fixtures: the 300-host web, a server


@pytest.fixture(scope="module")
def slow_web(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Web]:
    """The same web answering each request a second after it came, as a real server does:
    downloads are in flight whenever Redis stalls."""
    log = tmp_path_factory.mktemp("slowweb") / "access.jsonl"
    truth = load_truth(*crawl.WEB)
    homes = [url for url, page in truth.items() if page["kind"] == "home"]
    with TestWebProcess(*crawl.WEB, access_log=log, extra_args=("--latency", "1.0")) as server:
        yield Web(server.address, log, truth, homes, reach(truth, homes).stored(truth))

# Leases longer than any fault here: no node is taken for dead while it waits.
PATIENT = {"DOWNLOAD_DELAY": "0.1", "TIANWANG_LEASE_SECONDS": "90",
           "ITEM_PIPELINES": WITH_REDIS_DEDUP}


def masters(backend: RedisServer | RedisCluster) -> list[redis.Redis]:
    if isinstance(backend, RedisCluster):
        return [redis.Redis(host="127.0.0.1", port=port) for port in backend.masters()]
    return [redis.Redis.from_url(backend.url)]


def fill(backend: RedisServer | RedisCluster, share: float = 0.5) -> None:
    """maxmemory at `share` of what each master uses now, noeviction: a write that needs
    memory is refused (OOM). At 0.5 it is refused whatever the nodes delete, until `free`:
    at 1, the writes the nodes' acks made room for went through, and a node whose writes all
    found room never met the fault (the crawl ran to its end unseen by it)."""
    for client in masters(backend):
        used = int(client.info("memory")["used_memory"])
        client.config_set("maxmemory-policy", "noeviction")
        client.config_set("maxmemory", int(used * share))


def free(backend: RedisServer | RedisCluster) -> None:
    for client in masters(backend):
        client.config_set("maxmemory", 0)


def assert_said_once_a_node(workdir: Path, line: str) -> None:
    for i in range(3):
        assert node_log(workdir, i).count(line) == 1, node_log(workdir, i)[-3000:]


@pytest.mark.parametrize("backend", ["server", "cluster"])
def test_redis_at_maxmemory_midway_pauses_the_nodes_and_the_crawl_ends_whole(
    web: Web, tmp_path: Path, request: pytest.FixtureRequest, backend: str
) -> None:
    """Before: OutOfMemoryError tracebacks from enqueue_request, the links it could not push
    dropped, and 'finished ... failed 0', status 0. Now the nodes keep what they could not
    send and wait; once memory is there again, nothing is missing."""
    server = request.getfixturevalue("fresh_redis" if backend == "server" else "redis_cluster")
    extra = {**PATIENT, **(ON_CLUSTER if backend == "cluster" else {})}
    start = line_count(web.access_log)
    procs = start_nodes(web, server.url, tmp_path, **extra)
    wait_for_a_third(web, start, procs[0], tmp_path)
    fill(server)
    wait_in_every_log(procs, tmp_path, "Redis is full (")
    free(server)
    wait_all(procs, tmp_path, timeout=240)
    for i, proc in enumerate(procs):
        log = node_log(tmp_path, i)
        assert proc.returncode == 0, log[-3000:]
        assert "Redis answers again after" in log and "Traceback" not in log, log[-3000:]
    assert_said_once_a_node(tmp_path, "Redis is full (")
    assert_every_page_once(web, tmp_path, start)


def test_redis_full_for_good_stops_each_node_with_one_line_and_status_1(
    web: Web, fresh_redis: RedisServer, tmp_path: Path
) -> None:
    start = line_count(web.access_log)
    procs = start_nodes(web, fresh_redis.url, tmp_path,
                        **{**PATIENT, "TIANWANG_REDIS_OUTAGE_SECONDS": "3"})
    wait_for_a_third(web, start, procs[0], tmp_path)
    fill(fresh_redis)
    wait_all(procs, tmp_path, timeout=240)
    for i, proc in enumerate(procs):
        log = node_log(tmp_path, i)
        assert proc.returncode == 1, log[-3000:]
        assert "Redis full for 3 s (TIANWANG_REDIS_OUTAGE_SECONDS = 3)" in log, log[-3000:]
        assert "crawl FAILED (stopped: redis_full)" in log and "Traceback" not in log
    free(fresh_redis)


def test_a_redis_stalled_10_s_pauses_the_frontiers_not_the_downloads(
    slow_web: Web, fresh_redis: RedisServer, tmp_path: Path
) -> None:
    """DEBUG SLEEP 10: every call to Redis waits (the frontier's round trips, the heartbeats,
    the MD5 claims), while the downloads in flight go on: the web serves requests during the
    stall (a blocking client froze the node's reactor, and every download with it). Each node
    says, during the stall, that it waits, and that Redis is back."""
    web = slow_web
    start = line_count(web.access_log)
    procs = start_nodes(web, fresh_redis.url, tmp_path,
                        **{**PATIENT, "ITEM_PIPELINES": '{"tianwang.pipelines.storage.'
                                                         'TianwangStoragePipeline": 800}'})
    wait_for_a_third(web, start, procs[0], tmp_path)
    asleep: list[float] = []

    def sleep() -> None:
        client = redis.Redis.from_url(fresh_redis.url, socket_timeout=60)
        asleep.append(time.time())
        client.execute_command("DEBUG", "SLEEP", 10)
        asleep.append(time.time())

    sleeper = threading.Thread(target=sleep)
    sleeper.start()
    wait_in_every_log(procs, tmp_path, "Redis has not answered for 5 s")
    sleeper.join()
    served = [line["time"] for line in served_since(web.access_log, start)]
    during = sum(asleep[0] < when < asleep[1] for when in served)
    wait_all(procs, tmp_path, timeout=240)
    for i, proc in enumerate(procs):
        log = node_log(tmp_path, i)
        assert proc.returncode == 0, log[-3000:]
        assert "Redis answers again: node" in log and "Traceback" not in log, log[-3000:]
    assert during > 0  # downloads went on while Redis slept
    assert_said_once_a_node(tmp_path, "Redis has not answered for 5 s")
    assert_every_page_once(web, tmp_path, start)


def test_a_script_failing_midway_is_retried_said_once_and_the_crawl_ends_whole(
    web: Web, fresh_redis: RedisServer, tmp_path: Path
) -> None:
    """The bucket table replaced by a string for two seconds: every script that reads it fails
    (WRONGTYPE, inside the script). The poll catches it, says it once, backs off, and goes on
    once the table is back; nothing is lost or fetched twice."""
    start = line_count(web.access_log)
    procs = start_nodes(web, fresh_redis.url, tmp_path, **PATIENT)
    wait_for_a_third(web, start, procs[0], tmp_path)
    client = redis.Redis.from_url(fresh_redis.url)
    table = job_prefix(JOB) + "table"
    client.rename(table, table + ".kept")
    client.set(table, "not a hash")
    time.sleep(2)  # the fault's length, not a wait for an event: any length would do
    client.delete(table)
    client.rename(table + ".kept", table)
    wait_all(procs, tmp_path, timeout=240)
    failed = 0
    for i, proc in enumerate(procs):
        log = node_log(tmp_path, i)
        assert proc.returncode == 0, log[-3000:]
        assert "Traceback" not in log, log[-3000:]
        failed += "poll failed (ResponseError" in log
    assert failed >= 1  # the nodes that polled meanwhile said so (once each)
    assert_every_page_once(web, tmp_path, start)
