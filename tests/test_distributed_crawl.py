"""Three `scrapy crawl site` nodes sharing one crawl through a real redis-server, or a real
Redis Cluster (3 masters, 3 replicas).

The test web has 300 hosts of few pages. Each node stores into its own data dir and, through
the FetchLog extension (tests/fetchlog.py), writes every url it sends to the web, so the test
web's access log says what was fetched and the nodes' logs say who fetched it.
"""

from __future__ import annotations

import json
import signal
import subprocess
import time
import zlib
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.accesslog import line_count, urls_since
from tests.conftest import crawl_command
from tests.fetchlog import fetch_log_settings, read_fetch_log, served_beyond_sent
from tests.redis_cluster import RedisCluster
from tests.redis_server import RedisServer
from tests.spec_reader import SpecError, read_records
from tests.test_frontier_scheduler import read_tree
from tests.truth import host_of, load_truth, reach
from tianwang.distributed.connection import connect
from tianwang.distributed.redisfrontier import job_prefix
from tianwang.testweb.launcher import TestWebProcess, write_seeds

WEB = (11, 300, 6)  # seed, hosts, max pages per host
JOB = "web300"
ON_CLUSTER = {"TIANWANG_REDIS_CLUSTER": "True"}
NODES = 3
STORAGE_ONLY = json.dumps(
    {
        "tianwang.pipelines.storage.TianwangStoragePipeline": 800,
    }
)


@dataclass
class Web:
    address: str
    access_log: Path
    truth: dict[str, dict]
    homes: list[str]
    expected: set[str]  # the pages a correct crawl stores (default 3 levels)


@pytest.fixture(scope="module")
def web(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Web]:
    log = tmp_path_factory.mktemp("web300") / "access.jsonl"
    truth = load_truth(*WEB)
    homes = [url for url, page in truth.items() if page["kind"] == "home"]
    expected = reach(truth, homes).stored(truth)
    with TestWebProcess(*WEB, access_log=log) as server:
        yield Web(server.address, log, truth, homes, expected)


_SPAWNED: list[subprocess.Popen] = []


def spawn(command: list[str], cwd: Path, env: dict[str, str], log_path: Path) -> subprocess.Popen:
    """A crawl node, its output in log_path; killed after the test if it still runs."""
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(command, cwd=cwd, env=env, stdout=log, stderr=log)
    _SPAWNED.append(proc)
    return proc


@pytest.fixture(autouse=True)
def _no_node_left() -> Iterator[None]:
    """A test that fails before its nodes end must not leave them retrying a Redis the
    fixture stopped (seen: nodes still retrying two hours later)."""
    yield
    while _SPAWNED:
        proc = _SPAWNED.pop()
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.fixture
def fresh_redis(tmp_path: Path) -> Iterator[RedisServer]:
    """A redis-server of the test's own, which the test may restart."""
    server = RedisServer(tmp_path / "redis").start()
    try:
        yield server
    finally:
        server.stop()


def job_client(url: str, extra: dict[str, str]):
    """A client of the job's keys, on a redis-server or on the cluster (as the nodes are)."""
    return connect(url, job_prefix(JOB) if extra.get("TIANWANG_REDIS_CLUSTER") else None)


def start_nodes(web: Web, url: str, workdir: Path, **extra: str) -> list:
    """Two joining nodes, then (once they are members) the node that seeds the crawl."""
    seeds = write_seeds(workdir / "seeds.txt", web.homes)
    client = job_client(url, extra)
    procs = []
    for i in range(NODES):
        settings = {
            "TIANWANG_PROXY": web.address,
            "TIANWANG_REDIS_URL": url,
            "TIANWANG_REDIS_JOB": JOB,
            "TIANWANG_NODE_NAME": f"node{i}",
            # Long enough for a node starved of CPU on a loaded machine (a load of 4 on 2
            # cores) to beat in time, short enough for a killed node's work to come back.
            "TIANWANG_LEASE_SECONDS": "10",
            "TIANWANG_DATA_DIR": str(workdir / f"data{i}"),
            "ITEM_PIPELINES": STORAGE_ONLY,
            **fetch_log_settings(workdir / f"fetched{i}.txt"),
            **extra,
        }
        seeding = i == NODES - 1
        if seeding:  # seed once every node is in: no bucket moves while pages are fetched
            deadline = time.monotonic() + 60
            while client.scard(job_prefix(JOB) + "nodes") < NODES - 1:
                assert time.monotonic() < deadline, [p.poll() for p in procs]
                time.sleep(0.05)
        command, env = crawl_command("site", {"seeds": str(seeds)} if seeding else {}, settings)
        procs.append(spawn(command, workdir, env, workdir / f"node{i}.log"))
    client.close()
    return procs


def wait_all(procs: list, workdir: Path, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    for i, proc in enumerate(procs):
        try:
            proc.wait(timeout=max(1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            for other in procs:
                other.kill()
            raise AssertionError((workdir / f"node{i}.log").read_text()[-3000:]) from None


def wait_for_a_third(web: Web, start: int, node0: subprocess.Popen, workdir: Path) -> None:
    """Until a third of the expected pages were served: "midway" for a kill or a restart."""
    deadline = time.monotonic() + 60
    while len(urls_since(web.access_log, start)) < len(web.expected) // 3:
        assert time.monotonic() < deadline and node0.poll() is None, node_log(workdir, 0)
        time.sleep(0.05)


def wait_for_a_record(node0: subprocess.Popen, workdir: Path) -> None:
    """Until node0 has written a page: on a loaded machine a third of the pages may be served
    (by the others) before node0 stores its first, and a kill then would not be midway."""
    deadline = time.monotonic() + 120
    while not last_record(workdir / "data0"):
        assert time.monotonic() < deadline and node0.poll() is None, node_log(workdir, 0)
        time.sleep(0.05)


def stored_union(workdir: Path) -> Counter[str]:
    stored: Counter[str] = Counter()
    for i in range(NODES):
        stored.update(read_tree(workdir / f"data{i}"))
    return stored


def node_log(workdir: Path, i: int) -> str:
    return (workdir / f"node{i}.log").read_text(encoding="utf-8", errors="replace")


def retried(web: Web, url: str) -> bool:
    """A 5xx page: Scrapy retries it by design (RETRY_TIMES), a fetch more each time."""
    page = web.truth.get(url)
    return bool(page) and page["status"] >= 500


def sent_by(workdir: Path, i: int) -> list[str]:
    """The urls node i sent to the web (its FetchLog)."""
    return read_fetch_log(workdir / f"fetched{i}.txt")


def owners_of_hosts(workdir: Path) -> dict[str, set[int]]:
    """host -> the nodes that sent a request for it (their FetchLogs)."""
    owners: dict[str, set[int]] = {}
    for i in range(NODES):
        for url in sent_by(workdir, i):
            owners.setdefault(host_of(url), set()).add(i)
    return owners


def assert_fetched_once(
    web: Web, workdir: Path, start: int, allowed: set[str] = frozenset()
) -> None:
    """No url sent twice by the crawl (5xx retries aside, `allowed` aside), and the web
    served just what the nodes sent (a url perhaps once more: a pooled connection's resend,
    tests/fetchlog.py)."""
    sent: Counter[str] = Counter()
    for i in range(NODES):
        sent.update(sent_by(workdir, i))
    served = Counter(urls_since(web.access_log, start))
    again = {url for url, n in sent.items() if n > 1 and not retried(web, url)}
    assert again <= allowed, sorted(again - allowed)[:10]
    assert set(served) == set(sent)
    beyond = served_beyond_sent(served.elements(), sent.elements())
    assert {url for url in beyond if not retried(web, url)} == set(), beyond


def assert_every_page_once(web: Web, workdir: Path, start: int,
                           allowed: set[str] = frozenset(),
                           may_repeat: set[str] = frozenset()) -> None:
    """The nodes together stored the local crawl's pages, none twice (`may_repeat` aside, at
    most twice), and fetched each once (`allowed` aside: assert_fetched_once)."""
    stored = stored_union(workdir)
    assert set(stored) == web.expected
    twice = {url for url, n in stored.items() if n > 1}
    assert twice <= may_repeat and max(stored.values()) <= 2, sorted(twice)[:10]
    assert_fetched_once(web, workdir, start, allowed)


def last_record(data_dir: Path) -> set[str]:
    """The url of the last whole record written under a data dir (the last of its newest
    page file), as a set: empty if none."""
    files = sorted(data_dir.glob("data_*/*/page.dat"), key=lambda p: p.stat().st_mtime_ns)
    urls: list[str] = []
    if files:
        try:
            for record in read_records(files[-1].read_bytes()):
                urls.append(record["header"]["url"])
        except (SpecError, ValueError, zlib.error):
            pass  # the record the kill cut: the one before it was the last written whole
    return set(urls[-1:])


def shard_prefixes(url: str, extra: dict[str, str]) -> list[str]:
    """The prefixes of the job's shards, as its home lists their tags (one: the home)."""
    tags = job_client(url, extra).get(job_prefix(JOB) + "shards")
    return [job_prefix(tag) for tag in tags.decode().split(",")]


def assert_nothing_left(url: str, extra: dict[str, str]) -> None:
    """No request queued, packed or leased in any of the job's shards, for any node."""
    for prefix in shard_prefixes(url, extra):
        client = connect(url, prefix if extra.get("TIANWANG_REDIS_CLUSTER") else None)
        queues = client.keys(prefix + "q:*")
        leases = client.keys(prefix + "lease:*")
        assert [k for k in queues if client.zcard(k)] == [], queues
        assert [k for k in leases if client.hlen(k)] == [], leases
        assert client.hlen(prefix + "chunks") == 0
        assert int(client.get(prefix + "seq") or 0) > 0  # every shard had requests


def test_three_nodes_store_what_one_crawl_stores_each_host_on_one_node(
    web: Web, fresh_redis: RedisServer, tmp_path: Path
) -> None:
    crawl_and_check_three_nodes(web, fresh_redis.url, tmp_path, {})


def test_three_nodes_on_a_redis_cluster_store_what_one_crawl_stores(
    web: Web, redis_cluster: RedisCluster, tmp_path: Path
) -> None:
    """The job is split into one shard per master (TIANWANG_REDIS_SHARDS at 0): each of the
    three masters holds a shard that had requests, besides the page set of one crawl."""
    # The lease outlasts a failover (the cluster's 1 s node timeout and 2 s), as the crawl
    # requires at start.
    crawl_and_check_three_nodes(web, redis_cluster.url, tmp_path,
                                {**ON_CLUSTER, "TIANWANG_LEASE_SECONDS": "5"})
    prefixes = shard_prefixes(redis_cluster.url, ON_CLUSTER)
    assert len(prefixes) == 3
    assert len({redis_cluster.master_of(prefix) for prefix in prefixes}) == 3


def test_three_nodes_on_three_shards_of_one_redis_server_store_what_one_crawl_stores(
    web: Web, fresh_redis: RedisServer, tmp_path: Path
) -> None:
    """The same split on one redis-server (TIANWANG_REDIS_SHARDS=3): every shard had
    requests, and the page set is one crawl's."""
    crawl_and_check_three_nodes(web, fresh_redis.url, tmp_path, {"TIANWANG_REDIS_SHARDS": "3"})
    assert len(shard_prefixes(fresh_redis.url, {})) == 3


def test_a_shared_bloom_filter_sized_far_too_small_grows_and_the_page_set_is_whole(
    web: Web, fresh_redis: RedisServer, tmp_path: Path
) -> None:
    """Sized for 50 urls, the filter meets some thousand: a filter of one size would take
    most new urls for seen and the crawl would end early; its stages keep every page, and
    each node says at its end that the filter outgrew the setting."""
    start = line_count(web.access_log)
    procs = start_nodes(web, fresh_redis.url, tmp_path, TIANWANG_EXPECTED_URLS="50")
    wait_all(procs, tmp_path)
    for i, proc in enumerate(procs):
        assert proc.returncode == 0, node_log(tmp_path, i)[-3000:]
        assert "The shared request Bloom filter outgrew" in node_log(tmp_path, i)
    assert_every_page_once(web, tmp_path, start)


def crawl_and_check_three_nodes(web: Web, url: str, tmp_path: Path,
                                extra: dict[str, str]) -> None:
    start = line_count(web.access_log)
    procs = start_nodes(web, url, tmp_path, **extra)
    wait_all(procs, tmp_path)
    for i, proc in enumerate(procs):
        assert proc.returncode == 0, node_log(tmp_path, i)[-3000:]
        log = node_log(tmp_path, i)
        assert " WARNING: " not in log and " ERROR: " not in log, log[-3000:]
    assert_nothing_left(url, extra)
    assert len(web.expected) > 800
    assert_every_page_once(web, tmp_path, start)
    # Every host fetched by exactly one node (robots.txt included), and all three worked.
    owners = owners_of_hosts(tmp_path)
    assert {host for host, nodes in owners.items() if len(nodes) > 1} == set()
    assert set(owners) == {host_of(url) for url in urls_since(web.access_log, start)}
    assert Counter(min(nodes) for nodes in owners.values()).keys() == set(range(NODES))


def crawl_with_node0_killed_midway(web: Web, url: str, tmp_path: Path, **extra: str) -> None:
    """Three nodes, node0 SIGKILLed once a third of the pages are served; the other two end
    well, and between them every page is stored once (but the one node0 was storing at the
    kill). Fetched twice: only what node0 had sent when it died (its unfinished leases)."""
    start = line_count(web.access_log)
    procs = start_nodes(web, url, tmp_path, DOWNLOAD_DELAY="0.1", **extra)
    wait_for_a_third(web, start, procs[0], tmp_path)
    wait_for_a_record(procs[0], tmp_path)
    procs[0].send_signal(signal.SIGKILL)
    procs[0].wait()
    wait_all(procs[1:], tmp_path)
    for i in (1, 2):
        assert procs[i].returncode == 0, node_log(tmp_path, i)[-3000:]
    # One page may be stored again: the one whose record node0 had just written when the
    # kill came, before its stored mark was sent (no order closes that window: the record
    # and the mark live in two systems; a mark sent first would lose the page instead).
    assert_every_page_once(web, tmp_path, start, allowed=set(sent_by(tmp_path, 0)),
                           may_repeat=last_record(tmp_path / "data0"))


def test_kill_9_of_one_node_midway_still_stores_every_page_once(
    web: Web, fresh_redis: RedisServer, tmp_path: Path
) -> None:
    crawl_with_node0_killed_midway(web, fresh_redis.url, tmp_path)
    assert "Requeued" in node_log(tmp_path, 1) + node_log(tmp_path, 2)  # node0's work moved
    assert len(read_tree(tmp_path / "data0")) > 0  # the kill landed midway


def test_queues_packed_past_a_small_window_and_a_node_killed_store_every_page_once(
    web: Web, fresh_redis: RedisServer, tmp_path: Path
) -> None:
    """TIANWANG_REDIS_WINDOW=20: each node's queue in Redis is packed into chunks past 20
    requests and unpacked as it drains (batches of 4, so the queues stay in Redis rather than
    in the nodes' own); node0 killed midway. The same pages, each stored once, nothing left
    packed. (That a dead node's chunks go to the node that reaps it is tested on the frontier
    itself: here a chunk lives a fraction of a second, too short to aim a kill at.)"""
    crawl_with_node0_killed_midway(web, fresh_redis.url, tmp_path,
                                   TIANWANG_REDIS_WINDOW="20", TIANWANG_REDIS_BATCH="4")
    client = job_client(fresh_redis.url, {})
    assert int(client.get(job_prefix(JOB) + "packseq") or 0) > 0  # chunks were made
    assert_nothing_left(fresh_redis.url, {})


def test_a_redis_restart_midway_loses_nothing(
    web: Web, fresh_redis: RedisServer, tmp_path: Path
) -> None:
    start = line_count(web.access_log)
    procs = start_nodes(web, fresh_redis.url, tmp_path, DOWNLOAD_DELAY="0.1")
    wait_for_a_third(web, start, procs[0], tmp_path)
    fresh_redis.restart()
    wait_all(procs, tmp_path)
    for i, proc in enumerate(procs):
        assert proc.returncode == 0, node_log(tmp_path, i)[-3000:]
    assert_every_page_once(web, tmp_path, start)


# The project's dedup and storage (the add-on puts the Redis MD5 claims in for the local index).
WITH_REDIS_DEDUP = json.dumps({"tianwang.pipelines.dedup.MD5DedupPipeline": 700,
                               "tianwang.pipelines.storage.TianwangStoragePipeline": 800})


def wait_in_every_log(procs: list, workdir: Path, line: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    for i, proc in enumerate(procs):
        while line not in node_log(workdir, i):
            assert time.monotonic() < deadline and proc.poll() is None, node_log(workdir, i)
            time.sleep(0.2)


def test_a_redis_away_past_the_clients_retries_then_back_loses_nothing(
    web: Web, fresh_redis: RedisServer, tmp_path: Path
) -> None:
    """Redis stopped until every node has said so (its call's own 30 s of retries spent),
    then started again: the nodes went on with what they held (fetched pages wait for their
    MD5 claims) and go on once it answers. The lease outlasts the outage, so no node is taken
    for dead: the same pages, each stored once and fetched once."""
    start = line_count(web.access_log)
    procs = start_nodes(web, fresh_redis.url, tmp_path, DOWNLOAD_DELAY="0.1",
                        TIANWANG_LEASE_SECONDS="90", ITEM_PIPELINES=WITH_REDIS_DEDUP)
    wait_for_a_third(web, start, procs[0], tmp_path)
    fresh_redis.stop()
    wait_in_every_log(procs, tmp_path, "Redis unreachable (")
    fresh_redis.start()
    wait_all(procs, tmp_path, timeout=180)
    for i, proc in enumerate(procs):
        log = node_log(tmp_path, i)
        assert proc.returncode == 0, log[-3000:]
        assert "Redis answers again after" in log and "Traceback" not in log, log[-3000:]
    assert_every_page_once(web, tmp_path, start)


def test_nodes_whose_redis_is_gone_for_good_stop_after_the_bound_saying_so(
    web: Web, fresh_redis: RedisServer, tmp_path: Path
) -> None:
    """Redis stopped and not started again: each node stops once its outage passes
    TIANWANG_REDIS_OUTAGE_SECONDS, with status 1 and a line saying why, no traceback, and
    says what it leaves for the lease to give back. It stops at the bound, not once a poll
    or an MD5 claim has waited out the client's retries again (about 30 s)."""
    start = line_count(web.access_log)
    procs = start_nodes(web, fresh_redis.url, tmp_path, DOWNLOAD_DELAY="0.1",
                        TIANWANG_REDIS_OUTAGE_SECONDS="3", ITEM_PIPELINES=WITH_REDIS_DEDUP)
    wait_for_a_third(web, start, procs[0], tmp_path)
    fresh_redis.stop()
    wait_all(procs, tmp_path, timeout=150)
    for i, proc in enumerate(procs):
        log = node_log(tmp_path, i)
        assert proc.returncode == 1, log[-3000:]
        assert "Redis unreachable for 3 s (TIANWANG_REDIS_OUTAGE_SECONDS = 3)" in log, log[-3000:]
        assert "crawl FAILED (stopped: redis_unreachable)" in log
        assert "Redis unreachable as node" in log and "Traceback" not in log, log[-3000:]
        assert "Redis answers again" not in log, log[-3000:]
        stopped_after = seconds_between(log, "Redis unreachable (", "OUTAGE_SECONDS = 3): node")
        assert stopped_after <= 3 + 10, log[-3000:]


def seconds_between(log: str, first: str, then: str) -> float:
    """Seconds from the log's line holding `first` to the next one holding `then`."""
    def when(line: str) -> float:
        return time.mktime(time.strptime(line[:19], "%Y-%m-%d %H:%M:%S"))
    lines = log.splitlines()
    start = next(i for i, line in enumerate(lines) if first in line)
    end = next(i for i in range(start, len(lines)) if then in lines[i])
    return when(lines[end]) - when(lines[start])


def test_a_cluster_master_killed_midway_is_replaced_and_nothing_is_lost_or_stored_twice(
    web: Web, redis_cluster: RedisCluster, tmp_path: Path
) -> None:
    """SIGKILL to the master holding the job's home and one of its shards; its replica is
    promoted and the nodes go on there. Each sync's writes were on the replica before its
    reply was used (WAIT), so the promoted replica lacks at most a sync whose reply never
    came, which the node retries. The leases outlast the failover (about 3 s here), so no
    node is taken for dead."""
    start = line_count(web.access_log)
    procs = start_nodes(web, redis_cluster.url, tmp_path, DOWNLOAD_DELAY="0.1",
                        TIANWANG_LEASE_SECONDS="10", **ON_CLUSTER)
    wait_for_a_third(web, start, procs[0], tmp_path)
    master = redis_cluster.master_of(job_prefix(JOB))
    # The master of the job's home also serves one of its shards (one a master).
    shards = shard_prefixes(redis_cluster.url, ON_CLUSTER)
    assert master in {redis_cluster.master_of(prefix) for prefix in shards}
    redis_cluster.kill(master)
    redis_cluster.wait_failover(master)
    assert redis_cluster.master_of(job_prefix(JOB)) != master
    wait_all(procs, tmp_path)
    for i, proc in enumerate(procs):
        assert proc.returncode == 0, node_log(tmp_path, i)[-3000:]
        assert " ERROR: " not in node_log(tmp_path, i), node_log(tmp_path, i)[-3000:]
    assert_nothing_left(redis_cluster.url, ON_CLUSTER)
    assert len(read_tree(tmp_path / "data0")) > 0
    assert_every_page_once(web, tmp_path, start)


def test_with_a_quorum_the_seeding_node_waits_for_the_others_and_no_host_moves(
    web: Web, fresh_redis: RedisServer, tmp_path: Path
) -> None:
    """The seeding node first, alone: with TIANWANG_REDIS_QUORUM=3 it fetches nothing until
    the other two have joined, so no bucket moves mid-crawl and no robots.txt is fetched by
    two nodes (without the quorum, each host the first node began keeps its robots.txt)."""
    start = line_count(web.access_log)
    seeds = write_seeds(tmp_path / "seeds.txt", web.homes)
    procs = []
    for i in (2, 0, 1):  # the seeding node first
        settings = {
            "TIANWANG_PROXY": web.address, "TIANWANG_REDIS_URL": fresh_redis.url,
            "TIANWANG_REDIS_JOB": "quorum", "TIANWANG_NODE_NAME": f"node{i}",
            "TIANWANG_REDIS_QUORUM": "3", "TIANWANG_DATA_DIR": str(tmp_path / f"data{i}"),
            "ITEM_PIPELINES": STORAGE_ONLY,
            **fetch_log_settings(tmp_path / f"fetched{i}.txt"),
        }
        command, env = crawl_command("site", {"seeds": str(seeds)} if i == 2 else {}, settings)
        procs.append(spawn(command, tmp_path, env, tmp_path / f"node{i}.log"))
        if i == 2:
            time.sleep(4)  # started, seeded, and waiting
            assert procs[0].poll() is None, node_log(tmp_path, 2)[-3000:]
            assert urls_since(web.access_log, start) == []
    wait_all(procs, tmp_path)
    for i in range(NODES):
        assert procs[[2, 0, 1].index(i)].returncode == 0, node_log(tmp_path, i)[-3000:]
    assert_every_page_once(web, tmp_path, start)
    owners = owners_of_hosts(tmp_path)
    assert {host for host, nodes in owners.items() if len(nodes) > 1} == set()
