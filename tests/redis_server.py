"""A real redis-server for the distributed tests: Debian's package, on a free loopback port.

The package is installed by the test run itself when `redis-server` is not on PATH (we run
as root on a fresh machine); `apt-get update` only if the install fails without it.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

APT_ENV = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
APT_LOCK = "/tmp/tianwang-tests-apt.lock"


def ensure_redis_server() -> str:
    """The path of redis-server, installing Debian's package if it is missing."""
    return ensure_debian("redis-server", "redis-server")


def ensure_debian(command: str, package: str) -> str:
    """The path of `command`, installing Debian's `package` if it is missing (as root on a
    fresh machine). The test workers may all ask at once: one installs while the others
    wait on the lock (apt-get would fail on dpkg's own lock instead); `apt-get update` only
    if the install fails without it."""
    found = shutil.which(command)
    if found:
        return found
    with open(APT_LOCK, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not shutil.which(command):
            install = ["apt-get", "install", "-y", "--no-install-recommends", package]
            if subprocess.run(install, env=APT_ENV, capture_output=True).returncode != 0:
                subprocess.run(["apt-get", "update"], env=APT_ENV, capture_output=True,
                               check=True)
                subprocess.run(install, env=APT_ENV, capture_output=True, check=True)
    found = shutil.which(command)
    if not found:
        raise RuntimeError(f"{command} is still not on PATH after apt-get install {package}")
    return found


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class RedisServer:
    """redis-server with AOF on, in its own directory; start, stop (SIGTERM), restart."""

    def __init__(self, directory: Path, port: int | None = None, password: str = "") -> None:
        self.binary = ensure_redis_server()
        self.directory = directory
        self.port = port or free_port()
        self.password = password  # in a config file: never on a command line
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        auth = f":{self.password}@" if self.password else ""
        return f"redis://{auth}127.0.0.1:{self.port}/0"

    def start(self) -> RedisServer:
        self.directory.mkdir(parents=True, exist_ok=True)
        config = self.directory / "redis.conf"
        config.write_text(f"requirepass {self.password}\n" if self.password else "")
        config.chmod(0o600)
        command = [
            self.binary,
            str(config),
            "--bind", "127.0.0.1",
            "--port", str(self.port),
            "--dir", str(self.directory),
            "--appendonly", "yes",
            "--save", "",
            "--protected-mode", "yes",
            # DEBUG SLEEP, from this machine only: a Redis that stalls (tests of the faults).
            "--enable-debug-command", "local",
        ]
        log = open(self.directory / "redis.log", "ab")  # noqa: SIM115 - closed with the server
        self.proc = subprocess.Popen(command, stdout=log, stderr=log)
        log.close()
        self._wait_ready()
        return self

    def _wait_ready(self, timeout: float = 30) -> None:
        import redis

        client = redis.Redis(host="127.0.0.1", port=self.port, password=self.password or None)
        deadline = time.monotonic() + timeout
        while True:
            try:
                if client.ping():
                    break
            except (redis.ConnectionError, redis.BusyLoadingError):
                assert self.proc is not None and self.proc.poll() is None, self.log()
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        client.close()

    def stop(self) -> None:
        """SIGTERM: redis-server writes its AOF and exits."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=30)
        self.proc = None

    def restart(self) -> None:
        self.stop()
        self.start()

    def log(self) -> str:
        path = self.directory / "redis.log"
        return path.read_text(errors="replace")[-2000:] if path.exists() else ""


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    """One redis-server for the session; tests keep apart by job name (or flushall)."""
    server = RedisServer(tmp_path_factory.mktemp("redis")).start()
    try:
        yield server
    finally:
        server.stop()
