"""FailureMiddleware: a dead server and a slow one, each a real socket on 127.0.0.1. Every
failure is counted, logged once per host and reason, never as a traceback; a slow server
costs one timeout, not one per retry."""

from __future__ import annotations

import socket
import threading
import time
from pathlib import Path

import pytest
from scrapy import Request
from scrapy.exceptions import DownloadTimeoutError, IgnoreRequest

from tests.conftest import project_crawler, scrapy_crawl
from tests.filters_crawl import final_stats
from tianwang.middlewares.failures import FailureMiddleware, failure_reason
from tianwang.testweb.launcher import write_seeds


def test_failure_reasons_and_a_bug_left_alone() -> None:
    mw = FailureMiddleware.from_crawler(project_crawler())
    with pytest.raises(IgnoreRequest):
        mw.process_exception(Request("http://a.com/"), DownloadTimeoutError("slow"))
    assert mw.process_exception(Request("http://a.com/"), KeyError("bug")) is None
    assert failure_reason(ConnectionRefusedError()) == "connect"
    assert mw.stats.get_value("tianwang/error/timeout") == 1


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def crawl(tmp_path: Path, seeds: list[str], proxy: str, **settings: str):
    seeds_file = write_seeds(tmp_path / "seeds.txt", seeds)
    settings = {"TIANWANG_PROXY": proxy, "TIANWANG_DATA_DIR": str(tmp_path / "data"),
                **settings}
    started = time.monotonic()
    result = scrapy_crawl("site", {"seeds": str(seeds_file)}, settings, cwd=tmp_path)
    # Every page fails here: nothing stored, so the crawl says it failed (README, exit status).
    assert result.returncode == 1, result.stderr[-3000:]
    *log, outcome = result.stderr.rstrip().splitlines()
    assert "ERROR: crawl FAILED (no page stored)" in outcome
    return "\n".join(log), final_stats(result.stderr), time.monotonic() - started


def test_a_dead_server_is_one_line_per_host_not_a_traceback_per_url(tmp_path: Path) -> None:
    hosts = ["www.dead1.com", "www.dead2.com"]
    seeds = [f"http://{host}/{page}" for host in hosts for page in ("", "a.html", "b.html")]
    # robots.txt off: an unreachable robots.txt holds its host's pages back (RFC 9309, as
    # tests/test_middlewares_robots.py shows), and here every page is to meet the dead server.
    stderr, stats, _ = crawl(tmp_path, seeds, f"http://127.0.0.1:{closed_port()}",
                             ROBOTSTXT_OBEY="False")
    # Each seed refused, counted once.
    assert stats["tianwang/error/refused"] == len(seeds)
    lines = [line for line in stderr.splitlines()
             if "[tianwang.middlewares.failures]" in line]
    assert len(lines) == len(hosts) and all("refused" in line for line in lines)
    assert "Traceback" not in stderr and "ERROR" not in stderr


class DripServer:
    """Answers every request with headers, then one body byte every `every` seconds."""

    def __init__(self, every: float) -> None:
        self.every, self.connections = every, 0
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.address = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._drip, args=(conn,), daemon=True).start()

    def _drip(self, conn: socket.socket) -> None:
        with conn:
            conn.recv(65536)
            try:
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n"
                             b"Content-Length: 1000\r\n\r\n")
                for _ in range(1000):
                    conn.sendall(b"x")
                    time.sleep(self.every)
            except OSError:
                return

    def close(self) -> None:
        self.sock.close()


def test_a_slow_server_costs_one_timeout(tmp_path: Path) -> None:
    server = DripServer(every=0.5)
    try:
        stderr, stats, took = crawl(tmp_path, ["http://www.slow1.com/"], server.address,
                                    DOWNLOAD_TIMEOUT="2", ROBOTSTXT_OBEY="False")
    finally:
        server.close()
    assert server.connections == 1  # no retry (Scrapy's default made it 3: 3 timeouts)
    assert stats["tianwang/error/timeout"] == 1 and took < 2 * 2 + 10
    assert "Traceback" not in stderr and "ERROR" not in stderr
