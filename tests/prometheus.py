"""A real Prometheus server for the live view's tests: Debian's package, on a free loopback
port, scraping only the loopback targets it is given.

The package is installed by the test run itself when `prometheus` is not on PATH, as
redis-server is (tests/redis_server.py: one install at a time, under the same lock). The
server it runs has no other job, no remote write, no alerting, no service discovery: it
reaches nothing but 127.0.0.1.
"""

from __future__ import annotations

import json
import subprocess
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

from tests.redis_server import ensure_debian, free_port


def ensure_prometheus() -> str:
    """The path of prometheus (and promtool beside it), installing Debian's package."""
    return ensure_debian("prometheus", "prometheus")


class Prometheus:
    """prometheus scraping `targets` (host:port on 127.0.0.1) every `interval` seconds."""

    def __init__(self, directory: Path, targets: list[str], interval: float = 2.0) -> None:
        if not all(target.startswith("127.0.0.1:") for target in targets):
            raise ValueError(f"loopback targets only, not {targets}")
        self.binary = ensure_prometheus()
        self.directory = directory
        self.targets = targets
        self.interval = interval
        self.port = free_port()
        while f"127.0.0.1:{self.port}" in targets:  # a target's port, free until it starts
            self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> Prometheus:
        self.directory.mkdir(parents=True, exist_ok=True)
        interval = f"{int(self.interval * 1000)}ms"
        config = self.directory / "prometheus.yml"
        # The scrape takes as long as the interval at most: an answer delayed by a loaded
        # machine still counts (the crawl ends only once its final counters are taken).
        config.write_text(json.dumps({
            "global": {"scrape_interval": interval, "scrape_timeout": interval},
            "scrape_configs": [{"job_name": "tianwang",
                                "static_configs": [{"targets": self.targets}]}],
        }))
        log = open(self.directory / "prometheus.log", "ab")  # noqa: SIM115 - closed below
        self.proc = subprocess.Popen(
            [self.binary, f"--config.file={config}",
             f"--storage.tsdb.path={self.directory / 'tsdb'}",
             f"--web.listen-address=127.0.0.1:{self.port}",
             "--storage.tsdb.retention.time=1h"],
            stdout=log, stderr=log)
        log.close()
        self._wait_ready()
        return self

    def _wait_ready(self, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while True:
            try:
                with urllib.request.urlopen(f"{self.url}/-/ready", timeout=5) as answer:
                    if answer.status == 200:
                        return
            except OSError:
                pass
            assert self.proc is not None and self.proc.poll() is None, self.log()
            assert time.monotonic() < deadline, f"prometheus not ready: {self.log()}"
            time.sleep(0.1)

    def query(self, query: str, at: float | None = None) -> list[dict[str, Any]]:
        """An instant query's result (at `at`, a Unix time, or now)."""
        params = {"query": query, **({"time": repr(at)} if at is not None else {})}
        url = f"{self.url}/api/v1/query?{urllib.parse.urlencode(params)}"
        with urllib.request.urlopen(url, timeout=30) as answer:
            reply = json.load(answer)
        assert reply["status"] == "success", reply
        return reply["data"]["result"]

    def samples(self, series: str, seconds: int = 600) -> list[tuple[float, float]]:
        """(time, value) of every sample of one series in the last `seconds`, oldest first."""
        result = self.query(f"{series}[{seconds}s]")
        return [(float(t), float(v)) for one in result for t, v in one["values"]]

    def wait_for(self, series: str, matches, timeout: float = 300) -> float:
        """The time of the first sample of `series` whose value `matches`, once there is one."""
        deadline = time.monotonic() + timeout
        while True:
            found = [t for t, value in self.samples(series) if matches(value)]
            if found:
                return found[0]
            assert self.proc is not None and self.proc.poll() is None, self.log()
            assert time.monotonic() < deadline, f"no sample of {series} as awaited"
            time.sleep(0.1)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=60)
        self.proc = None

    def log(self) -> str:
        path = self.directory / "prometheus.log"
        return path.read_text(errors="replace")[-3000:] if path.exists() else ""
