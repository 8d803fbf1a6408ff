"""The Redis Cluster fixture itself: it starts, serves a cluster client, and survives the
loss of a master, as the tests built on it assume."""

from __future__ import annotations

import redis
import redis.cluster

from tests.redis_cluster import RedisCluster


def test_a_killed_master_fails_over_to_its_replica(redis_cluster: RedisCluster) -> None:
    cluster = redis_cluster
    assert len(cluster.masters()) == 3
    client = redis.cluster.RedisCluster.from_url(cluster.url, decode_responses=True)
    for n in range(100):
        client.set(f"k{n}", f"v{n}")
    client.close()
    dead = cluster.master_of("k1")
    # Replication is asynchronous: write k1 again on the master itself and WAIT for the
    # replica's ack, so the key survives the crash (WAIT counts this connection's writes).
    with cluster.node(dead) as master:
        master.set("k1", "v1")
        assert master.execute_command("WAIT", 1, 1000) == 1

    cluster.kill(dead)
    cluster.wait_failover(dead)

    assert dead not in cluster.masters() and len(cluster.masters()) == 3
    assert cluster.master_of("k1") != dead
    client = redis.cluster.RedisCluster.from_url(cluster.url, decode_responses=True)
    try:
        assert client.get("k1") == "v1"
        client.set("k1", "after")  # the promoted replica takes writes, too
        assert client.get("k1") == "after"
    finally:
        client.close()
