"""`tianwang feed`: a url pushed into a running two-node shared crawl is fetched once, by the
node owning its host; a node of an unseeded job says it waits; a finished job rerun says so."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
import redis

from tests.conftest import crawl_command, tianwang_cli
from tests.fetchlog import fetch_log_settings, read_fetch_log, served_beyond_sent
from tests.redis_cluster import RedisCluster
from tests.redis_server import RedisServer
from tests.truth import host_of, load_truth
from tianwang.distributed.connection import master_ranges
from tianwang.distributed.mapping import bucket_of
from tianwang.distributed.redisfrontier import job_prefix
from tianwang.distributed.shards import tags_for
from tianwang.testweb.launcher import TestWebProcess, write_seeds

WEB = (13, 24, 5)  # seed, hosts, max pages per host
JOB = "fed"


@pytest.fixture
def server(tmp_path: Path):
    server = RedisServer(tmp_path / "redis").start()
    try:
        yield server
    finally:
        server.stop()


def node(web: TestWebProcess, server: RedisServer, workdir: Path, i: int,
         seeds: Path | None) -> subprocess.Popen:
    settings = {
        "TIANWANG_PROXY": web.address, "TIANWANG_REDIS_URL": server.url,
        "TIANWANG_REDIS_JOB": JOB, "TIANWANG_NODE_NAME": f"node{i}",
        "TIANWANG_DATA_DIR": str(workdir / f"data{i}"),
        # Slow enough that the crawl is still running when the url is pushed.
        "DOWNLOAD_DELAY": "0.4", "CONCURRENT_REQUESTS_PER_DOMAIN": "1",
        **fetch_log_settings(workdir / f"fetched{i}.txt"),
    }
    command, env = crawl_command("site", {"seeds": str(seeds)} if seeds else {}, settings)
    log = open(workdir / f"node{i}.log", "wb")  # noqa: SIM115 - the child holds it
    proc = subprocess.Popen(command, cwd=workdir, env=env, stdout=log, stderr=log)
    log.close()
    return proc


def test_a_url_pushed_into_a_running_crawl_is_fetched_once_by_its_hosts_node(
        server: RedisServer, tmp_path: Path) -> None:
    truth = load_truth(*WEB)
    homes = sorted(url for url, page in truth.items() if page["kind"] == "home")
    seeds, target = homes[:8], homes[-1]  # no seed's site links to the target's? checked below
    client = redis.Redis.from_url(server.url)
    with TestWebProcess(*WEB, access_log=tmp_path / "access.jsonl") as web:
        joining = node(web, server, tmp_path, 0, None)
        deadline = time.monotonic() + 60
        while client.scard(f"tianwang:{{{JOB}}}:nodes") < 1:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        seeding = node(web, server, tmp_path, 1, write_seeds(tmp_path / "seeds.txt", seeds))
        while not (tmp_path / "access.jsonl").exists() or len(
                (tmp_path / "access.jsonl").read_text().splitlines()) < 4:
            assert time.monotonic() < deadline, (tmp_path / "node1.log").read_text()[-2000:]
            time.sleep(0.05)
        table = {int(b): n.decode() for b, n in client.hgetall(f"tianwang:{{{JOB}}}:table").items()}
        # The web stands still until the url is taken: the crawl cannot end before the feed
        # comes, however slow the machine.
        os.kill(web.proc.pid, signal.SIGSTOP)
        try:
            fed = tianwang_cli("feed", "--redis", server.url, "--job", JOB, target)
            assert fed.returncode == 0, fed.stderr
            assert fed.stdout == f"pushed 1 urls into tianwang:{{{JOB}}}:feed\n"
            deadline = time.monotonic() + 120
            while "feed: took 1 urls" not in logs(tmp_path):
                assert time.monotonic() < deadline, logs(tmp_path)[-3000:]
                time.sleep(0.05)
        finally:
            os.kill(web.proc.pid, signal.SIGCONT)
        for proc in (joining, seeding):
            proc.wait(timeout=120)
        access = [json.loads(line)["url"]
                  for line in (tmp_path / "access.jsonl").read_text().splitlines()]
    client.close()
    sent = {i: read_fetch_log(tmp_path / f"fetched{i}.txt").count(target) for i in (0, 1)}
    assert sorted(sent.values()) == [0, 1]  # sent once, by one node
    # served as sent (a pooled connection's resend aside: tests/fetchlog.py)
    assert served_beyond_sent([url for url in access if url == target], [target]) == {}
    owner = table[bucket_of(host_of(target), len(table))]
    assert [f"node{i}" for i, n in sent.items() if n] == [owner]


def logs(workdir: Path) -> str:
    return "".join((workdir / f"node{i}.log").read_text() for i in (0, 1))


def test_an_unseeded_node_says_it_waits_and_a_finished_job_rerun_says_so(
        server: RedisServer, tmp_path: Path) -> None:
    truth = load_truth(*WEB)
    home = sorted(url for url, page in truth.items() if page["kind"] == "home")[0]
    with TestWebProcess(*WEB) as web:
        waiting = node(web, server, tmp_path, 0, None)
        deadline = time.monotonic() + 60
        log = tmp_path / "node0.log"
        while "waits for seeds" not in log.read_text():
            assert time.monotonic() < deadline and waiting.poll() is None, log.read_text()[-2000:]
            time.sleep(0.1)
        assert (f"node node0 waits for seeds: job {JOB} has none yet. Give one node -a "
                f"seeds=..., or push urls: python3 -m tianwang feed --redis URL --job {JOB} "
                "URL...") in log.read_text()
        # Fed, it crawls; then the job is finished.
        assert tianwang_cli("feed", "--redis", server.url, "--job", JOB, home).returncode == 0
        assert waiting.wait(timeout=120) == 0, log.read_text()[-2000:]
        (tmp_path / "rerun").mkdir()
        again = node(web, server, tmp_path / "rerun", 1, write_seeds(tmp_path / "s.txt", [home]))
        assert again.wait(timeout=120) == 0
    rerun = (tmp_path / "rerun" / "node1.log").read_text()
    assert f"job {JOB} has finished already" in rerun
    assert rerun.rstrip().splitlines()[-1].endswith(
        "nothing to do: this Redis job had finished; give a new TIANWANG_REDIS_JOB or reset it "
        "(tianwang feed --reset) to crawl afresh")
    reset = tianwang_cli("feed", "--redis", server.url, "--job", JOB, "--reset")
    assert reset.returncode == 0 and reset.stdout.startswith("deleted ")
    assert not redis.Redis.from_url(server.url).keys(f"tianwang:{{{JOB}}}:*")


def test_feed_and_reset_find_a_jobs_keys_on_a_cluster_from_any_node(
        redis_cluster: RedisCluster) -> None:
    prefix = job_prefix(JOB)
    master = redis_cluster.master_of(prefix)
    other = next(port for port in redis_cluster.live_ports() if port != master)
    url = f"redis://127.0.0.1:{other}"  # not the job's master: the tool must find it
    fed = tianwang_cli("feed", "--redis", url, "--job", JOB, "http://www.example.com/")
    assert fed.returncode == 0, fed.stderr
    with redis_cluster.node(master) as client:
        assert client.lrange(prefix + "feed", 0, -1) == ["http://www.example.com/"]
    reset = tianwang_cli("feed", "--redis", url, "--job", JOB, "--reset")
    assert reset.returncode == 0 and reset.stdout == f"deleted 1 keys of job {JOB}\n"
    with redis_cluster.node(master) as client:
        assert client.keys(prefix + "*") == []


def test_reset_deletes_every_shard_of_a_split_job_on_every_master(
        redis_cluster: RedisCluster) -> None:
    """A job split over the cluster's three masters (its home lists the shards): --reset
    finds each shard's keys on its own master."""
    job = "split"
    tags = tags_for(job, master_ranges(redis_cluster.url))
    with redis_cluster.node(redis_cluster.master_of(job_prefix(job))) as home:
        home.set(job_prefix(job) + "shards", ",".join(tags))
    for tag in tags:
        with redis_cluster.node(redis_cluster.master_of(job_prefix(tag))) as client:
            client.set(job_prefix(tag) + "seq", 5)
    assert len({redis_cluster.master_of(job_prefix(tag)) for tag in tags}) == 3
    reset = tianwang_cli("feed", "--redis", redis_cluster.url, "--job", job, "--reset")
    assert reset.returncode == 0 and reset.stdout == f"deleted 4 keys of job {job}\n"
    for port in redis_cluster.live_ports():
        with redis_cluster.node(port) as client:
            assert client.keys("tianwang:{split*") == []
