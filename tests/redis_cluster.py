"""A real Redis Cluster for the tests: six redis-server processes (three masters, three
replicas) on free loopback ports, joined by `redis-cli --cluster create`.

Each node also gets its own free cluster-bus port (`--cluster-port`): the default bus port
is port + 10000, and a free port from the kernel's ephemeral range (32768-60999) plus
10000 may not exist or may be taken.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import TracebackType

import pytest
import redis
import redis.cluster

from tests.redis_server import ensure_redis_server, free_port

HOST = "127.0.0.1"
NODES = 6
SLOTS = 16384


def ensure_redis_cli() -> str:
    """redis-cli comes with Debian's redis-server (it depends on redis-tools)."""
    ensure_redis_server()
    found = shutil.which("redis-cli")
    if not found:
        raise RuntimeError("redis-cli is not on PATH (apt-get install redis-tools)")
    return found


def free_ports(count: int) -> list[int]:
    """`count` distinct free ports: free_port() may hand back a port it gave just before."""
    ports: list[int] = []
    while len(ports) < count:
        port = free_port()
        if port not in ports:
            ports.append(port)
    return ports


def wait_until(check: Callable[[], str | None], timeout: float, what: str) -> None:
    """Poll `check` (None when satisfied, else what is still missing) until the deadline,
    then fail naming the last thing missing: a bare timeout says nothing about the cause."""
    deadline = time.monotonic() + timeout
    while True:
        missing = check()
        if missing is None:
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what}: still {missing} after {timeout} s")
        time.sleep(0.1)


class RedisCluster:
    """Six cluster-enabled redis-servers under `directory`; start, kill a node, wait for its
    failover, stop. A context manager (start on enter, stop on exit)."""

    def __init__(self, directory: Path) -> None:
        self.server = ensure_redis_server()
        self.cli = ensure_redis_cli()
        self.directory = directory
        both = free_ports(2 * NODES)
        self.ports = both[:NODES]
        self.bus_ports = dict(zip(self.ports, both[NODES:], strict=True))
        self.procs: dict[int, subprocess.Popen[bytes]] = {}

    # --- lifecycle ---------------------------------------------------------------------

    def start(self, timeout: float = 30) -> RedisCluster:
        try:
            for port in self.ports:
                self._start_node(port)
            for port in self.ports:
                self._wait_ping(port, timeout)
            self._create()
            wait_until(self._missing_ready, timeout, "redis cluster not ready")
        except BaseException:
            self.stop()
            raise
        return self

    def _start_node(self, port: int) -> None:
        directory = self.node_dir(port)
        directory.mkdir(parents=True, exist_ok=True)
        command = [
            self.server,
            "--cluster-enabled", "yes",
            "--cluster-config-file", "nodes.conf",
            # Short, so a failover takes seconds; not so short that a node starved of CPU
            # for a moment on a loaded 2-core machine is taken for dead (a failover the
            # test did not ask for).
            "--cluster-node-timeout", "2000",
            "--cluster-port", str(self.bus_ports[port]),
            "--appendonly", "no",
            "--save", "",
            "--bind", HOST,
            "--protected-mode", "no",
            # A replica's first sync otherwise waits 5 s for more replicas to share the
            # diskless transfer: most of the start-up time, for nothing, with one each.
            "--repl-diskless-sync-delay", "0",
            "--port", str(port),
            "--dir", str(directory),
            "--logfile", str(directory / "redis.log"),
        ]
        self.procs[port] = subprocess.Popen(
            command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )

    def _wait_ping(self, port: int, timeout: float) -> None:
        def missing() -> str | None:
            if self.procs[port].poll() is not None:
                raise RuntimeError(f"redis-server on {port} exited:\n{self.log(port)}")
            try:
                with self.node(port) as client:
                    client.ping()
            except (redis.ConnectionError, redis.BusyLoadingError):
                return f"no PONG from {port}"
            return None

        wait_until(missing, timeout, "redis-server not answering")

    def _create(self) -> None:
        """redis-cli makes the first three nodes masters and the last three replicas; it
        warns that replicas share their master's host, which is the point here."""
        addresses = [f"{HOST}:{port}" for port in self.ports]
        command = [self.cli, "--cluster", "create", *addresses]
        command += ["--cluster-replicas", "1", "--cluster-yes"]
        done = subprocess.run(command, capture_output=True, text=True, timeout=60)
        if done.returncode != 0:
            raise RuntimeError(f"redis-cli --cluster create failed:\n{done.stdout}{done.stderr}")

    def stop(self) -> None:
        """SIGTERM every node, SIGKILL the ones still up after a few seconds. Idempotent."""
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.terminate()
        deadline = time.monotonic() + 5
        for proc in self.procs.values():
            try:
                proc.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    def __enter__(self) -> RedisCluster:
        return self.start()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()

    # --- looking at it -----------------------------------------------------------------

    @property
    def url(self) -> str:
        """The first live node (a master at start); a cluster client discovers the rest. Not
        fixed: after kill() of that node the url moves on to a live one."""
        return f"redis://{HOST}:{self.live_ports()[0]}"

    def node(self, port: int) -> redis.Redis:
        """A plain client of one node; a short timeout so a stuck node fails the wait."""
        return redis.Redis(host=HOST, port=port, decode_responses=True, socket_timeout=5)

    def node_dir(self, port: int) -> Path:
        return self.directory / f"node-{port}"

    def live_ports(self) -> list[int]:
        return [port for port in self.ports if self.procs[port].poll() is None]

    def masters(self) -> list[int]:
        """Ports of the live nodes whose ROLE is master."""
        return [port for port in self.live_ports() if self._role(port)[0] == "master"]

    def _role(self, port: int) -> list:
        with self.node(port) as client:
            return client.execute_command("ROLE")

    def replica_of(self, master: int) -> int:
        """Port of a replica of that master (ROLE: master, offset, [[host, port, offset]]).
        A master lists a replica a moment after the replica says it is linked: wait for it."""
        wait_until(lambda: None if self._role(master)[2] else f"no replica listed by {master}",
                   10, "replica_of")
        return int(self._role(master)[2][0][1])

    def master_of(self, key: str) -> int:
        """Port of the master serving `key`'s slot, as the first live node sees it."""
        with self.node(self.live_ports()[0]) as client:
            slot = client.execute_command("CLUSTER KEYSLOT", key)
            for start, end, primary, *_replicas in self._slots(client):
                if start <= slot <= end:
                    return int(primary[1])
        raise LookupError(f"no master serves slot {slot} of {key!r}")

    @staticmethod
    def _slots(client: redis.Redis) -> list:
        """CLUSTER SLOTS raw ([start, end, [host, port, id], replicas...] per range):
        redis-py reshapes this reply into a dict whose form changes between versions."""
        return client.execute_command("CLUSTER SLOTS")

    def log(self, port: int) -> str:
        path = self.node_dir(port) / "redis.log"
        return path.read_text(errors="replace")[-2000:] if path.exists() else ""

    # --- readiness and failover --------------------------------------------------------

    def _missing_ready(self) -> str | None:
        """Ready: every node says cluster_state:ok, every replica's link to its master is
        up (a replica that never synced may refuse to fail over), and a cluster client
        can write and read a key."""
        return (
            self._missing_state_ok(self.ports)
            or self._missing_replica_links()
            or self._missing_round_trip()
        )

    def _missing_state_ok(self, ports: list[int]) -> str | None:
        for port in ports:
            with self.node(port) as client:
                if client.cluster("INFO")["cluster_state"] != "ok":
                    return f"cluster_state not ok on {port}"
        return None

    def _missing_replica_links(self) -> str | None:
        for port in self.ports:
            role = self._role(port)
            if role[0] == "slave" and role[3] != "connected":
                return f"replica {port} link to master {role[2]} {role[3]}"
        return None

    def _missing_round_trip(self) -> str | None:
        client = redis.cluster.RedisCluster(host=HOST, port=self.ports[0])
        try:
            client.set("redis-cluster-ready", "yes")
            if client.get("redis-cluster-ready") != b"yes":
                return "a cluster client reading back its own key"
        except redis.RedisError as error:
            return f"a cluster client failing SET/GET ({error!r})"
        finally:
            client.close()
        return None

    def kill(self, port: int) -> None:
        """SIGKILL one node: no shutdown, no goodbye to the cluster, as in a crash."""
        proc = self.procs[port]
        proc.kill()
        proc.wait()

    def wait_failover(self, dead_port: int, timeout: float = 30) -> None:
        """Until every live node says cluster_state:ok and names only live masters in
        CLUSTER SLOTS: then the dead master's replica has taken its slots everywhere
        (a node that has not yet noticed the death still says ok, naming the dead one)."""
        assert dead_port not in self.live_ports(), f"{dead_port} is still running"

        def missing() -> str | None:
            live = self.live_ports()
            return self._missing_state_ok(live) or self._missing_live_masters(live)

        wait_until(missing, timeout, f"no failover of {dead_port}")

    def _missing_live_masters(self, live: list[int]) -> str | None:
        for port in live:
            with self.node(port) as client:
                ranges = self._slots(client)
            served = sum(end - start + 1 for start, end, primary, *_ in ranges
                         if int(primary[1]) in live)
            if served != SLOTS:
                return f"{SLOTS - served} slots on a dead master, as {port} sees it"
        return None


@pytest.fixture
def redis_cluster(tmp_path: Path) -> Iterator[RedisCluster]:
    """A fresh six-node cluster per test: tests kill nodes, so none can be shared."""
    with RedisCluster(tmp_path / "redis-cluster") as cluster:
        yield cluster
