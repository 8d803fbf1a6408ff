"""FailureMiddleware: a dead server and a slow one, each a real socket on 127.0.0.1, and the
raw hostile web's answers no HTTP parser can read. Every failure is counted, logged once per
host and reason, never as a traceback; a slow server costs one timeout, not one per retry."""

from __future__ import annotations

import socket
import threading
import time
from pathlib import Path

import pytest
from scrapy import Request
from scrapy.exceptions import DownloadTimeoutError, IgnoreRequest

from tests import hostile_web
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
    # Every page fails here: nothing stored, so the crawl says it failed (docs/crawling.md,
    # exit status).
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


class RawServer:
    """A socket on 127.0.0.1 whose every connection is handed to `answer` in a thread."""

    def __init__(self) -> None:
        self.connections, self._held = 0, []
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
            self._held.append(conn)
            threading.Thread(target=self.answer, args=(conn,), daemon=True).start()

    def answer(self, conn: socket.socket) -> None:
        raise NotImplementedError

    def close(self) -> None:
        self.sock.close()
        for conn in self._held:
            conn.close()


class DripServer(RawServer):
    """Answers every request with headers, then one body byte every `every` seconds."""

    def __init__(self, every: float) -> None:
        self.every = every
        super().__init__()

    def answer(self, conn: socket.socket) -> None:
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


class TarpitServer(RawServer):
    """Takes every connection, reads the request and never answers; counts the requests."""

    def __init__(self) -> None:
        self.requests, self._count = 0, threading.Lock()
        super().__init__()

    def answer(self, conn: socket.socket) -> None:
        try:
            while chunk := conn.recv(65536):
                with self._count:  # the threads of several connections add to it
                    self.requests += chunk.count(b"HTTP/1.1\r\n")
        except OSError:
            return


@pytest.mark.parametrize("max_timeouts", [3, 0])
def test_a_host_that_never_answers_is_given_up_after_its_timeouts_in_a_row(
    tmp_path: Path, max_timeouts: int
) -> None:
    """Two hosts whose server takes the connection and never answers, 6 urls each: with
    TIANWANG_MAX_HOST_TIMEOUTS 3 each host is asked 3 times (4 when its next request had
    passed the middleware and waited in the downloader while the third timed out), its other
    urls fail at once, counted and logged once; with 0 (the ablation) every url waits out
    its timeout."""
    hosts = ["www.tarpit1.com", "www.tarpit2.com"]
    seeds = [f"http://{host}/p{k}.html" for host in hosts for k in range(6)]
    server = TarpitServer()
    try:
        stderr, stats, _ = crawl(tmp_path, seeds, server.address, ROBOTSTXT_OBEY="False",
                                 DOWNLOAD_TIMEOUT="1", CONCURRENT_REQUESTS_PER_DOMAIN="1",
                                 TIANWANG_MAX_HOST_TIMEOUTS=str(max_timeouts))
    finally:
        server.close()
    asked = server.requests
    if max_timeouts:
        assert 3 * len(hosts) <= asked <= 4 * len(hosts)
        assert stats["tianwang/hosts/timed_out"] == len(hosts)
    else:
        assert asked == len(seeds)
    assert stats["tianwang/error/timeout"] == asked
    assert stats.get("tianwang/error/timeout_host", 0) == len(seeds) - asked
    lines = [line for line in stderr.splitlines() if "timeout_host: " in line]
    assert len(lines) == (len(hosts) if max_timeouts else 0)
    assert "Traceback" not in stderr


def test_an_answer_between_timeouts_starts_a_hosts_count_again() -> None:
    from scrapy.http import Response

    mw = FailureMiddleware.from_crawler(project_crawler(TIANWANG_MAX_HOST_TIMEOUTS=2))
    request = Request("http://a.com/")
    for _ in range(3):  # timeout, answer, timeout, answer...: never two in a row
        with pytest.raises(IgnoreRequest):
            mw.process_exception(request, DownloadTimeoutError("slow"))
        mw.process_response(request, Response(request.url, status=500, request=request))
    assert mw.process_request(Request("http://a.com/next")) is None
    for _ in range(2):
        with pytest.raises(IgnoreRequest):
            mw.process_exception(request, DownloadTimeoutError("slow"))
    with pytest.raises(IgnoreRequest, match="timeout_host"):
        mw.process_request(Request("http://a.com/next"))
    assert mw.process_request(Request("http://b.com/")) is None  # another host goes on

# -- answers Twisted cannot read, from the raw hostile web (tests/hostile_web.py) -----------


def test_no_traceback_from_any_response_each_fault_under_its_kind(hostile_web_crawl) -> None:
    """Every host of the hostile web answered, none as its server meant: the crawl ends by
    itself, status 0, without one traceback or ERROR line, and each fault is counted under
    the kind the web's truth gives it, never as `connect`."""
    crawl = hostile_web_crawl
    assert crawl.returncode == 0, crawl.stderr[-3000:]
    assert "Traceback" not in crawl.stderr and " ERROR: " not in crawl.stderr
    assert "crawl done (finished)" in crawl.summary()
    expected: dict[str, int] = {}
    for host, (_answer, outcome) in hostile_web.FAULTS.items():
        if outcome == "stored":
            assert f"http://{host}/" in crawl.stored, host
        else:
            assert f"http://{host}/" not in crawl.stored, host
            expected[outcome] = expected.get(outcome, 0) + 1
    for outcome, count in expected.items():
        assert crawl.stats[f"tianwang/{outcome}"] == count, outcome
    assert "tianwang/error/connect" not in crawl.stats
    assert "tianwang/error/connection_lost" not in crawl.stats


def test_an_unreadable_answer_is_logged_once_per_host_as_bad_response(hostile_web_crawl) -> None:
    lines = [line for line in hostile_web_crawl.stderr.splitlines()
             if "[tianwang.middlewares.failures]" in line]
    unreadable = [h for h, (_a, outcome) in hostile_web.FAULTS.items()
                  if outcome == "error/bad_response"]
    assert len(lines) == len(unreadable)
    for host in unreadable:  # asked, retried as Scrapy retries a failed download, given up
        assert hostile_web_crawl.sent.count(f"http://{host}/") == 3
        assert sum(f"bad_response: <GET http://{host}/>" in line for line in lines) == 1


def test_an_unreadable_head_is_bad_response_a_cut_one_connection_lost() -> None:
    """What Scrapy's DownloadFailedError wraps (the exceptions Twisted's parser raises, as
    the crawl above meets them) decides the reason."""
    from scrapy.exceptions import DownloadFailedError
    from twisted.internet.error import ConnectionDone, ConnectionLost
    from twisted.python.failure import Failure
    from twisted.web.client import ResponseFailed, ResponseNeverReceived

    def wrapped(cause: Exception) -> DownloadFailedError:
        error = DownloadFailedError(str(cause))
        error.__cause__ = cause
        return error

    two_lengths = ValueError("Invalid response: conflicting Content-Length headers")
    assert failure_reason(wrapped(ResponseFailed([Failure(two_lengths)]))) == "bad_response"
    assert failure_reason(wrapped(ResponseFailed([Failure(ConnectionDone())]))) == "bad_response"
    assert failure_reason(wrapped(ResponseFailed([Failure(ConnectionLost())]))) == \
        "connection_lost"
    assert failure_reason(wrapped(ResponseNeverReceived([Failure(ConnectionDone())]))) == \
        "connect"
    assert failure_reason(DownloadFailedError("no cause")) == "connect"


def test_a_head_without_end_is_read_no_further_than_its_bound(hostile_web_crawl) -> None:
    """A server that streams header lines, or 100 Continue answers, without end: the crawl
    stops reading at TIANWANG_MAX_HEAD_BYTES (256 KiB) and fails the page as bad_response.
    What the server got to send before the connection closed is that and the sockets'
    buffers, not the gigabytes a download of DOWNLOAD_TIMEOUT (180 s) would take in. A head
    of 160 KB that ends is read, and its page stored whole."""
    for host in (hostile_web.ENDLESS_HEAD_HOST, hostile_web.ENDLESS_INTERIM_HOST):
        answers = [line for line in hostile_web_crawl.log if line["url"] == f"http://{host}/"]
        assert len(answers) == 3, host  # retried as any bad_response
        assert all(not line["complete"] for line in answers), host
        assert max(line["sent"] for line in answers) < 4 * hostile_web.MIB, (host, answers)
    stored = hostile_web_crawl.stored["http://www.big-head.com/"]
    head, body = stored.split(b"\r\n\r\n", 1)
    assert head.count(b"\r\nX-Pad: ") == hostile_web.BIG_HEAD_LINES
    assert body == hostile_web.fault_body("www.big-head.com")


def test_a_body_in_tiny_chunks_is_cut_off_and_one_in_small_chunks_stored(
    hostile_web_crawl,
) -> None:
    """Each chunk of a chunked body costs the crawl a Scrapy signal (some 30 us): a body of
    300 KB sent in 1-byte chunks is cut off at 65,536 pieces, having cost the server under
    a megabyte; a 1 MB page in 50-byte chunks, as a streaming server may send it, is stored
    whole."""
    served = [line for line in hostile_web_crawl.log
              if line["url"] == f"http://{hostile_web.TINY_CHUNKS_HOST}/"]
    assert len(served) == 1 and not served[0]["complete"]
    assert served[0]["sent"] < 6 * hostile_web.TINY_CHUNKS  # 6 bytes a chunk: not all sent
    stored = hostile_web_crawl.stored[f"http://{hostile_web.SMALL_CHUNKS_HOST}/"]
    assert stored.split(b"\r\n\r\n", 1)[1] == b"c" * 50 * hostile_web.SMALL_CHUNKS


def test_what_is_remembered_per_failing_host_is_bounded() -> None:
    """A crawl meets millions of dead hosts in a month: the middleware keeps the newest
    HOSTS_NOTED of them (and of its logged-once lines), a forgotten one merely tried again."""
    from scrapy.exceptions import DownloadConnectionRefusedError

    from tianwang.recent import HOSTS_NOTED

    mw = FailureMiddleware.from_crawler(project_crawler())
    for k in range(HOSTS_NOTED + 5_000):
        with pytest.raises(IgnoreRequest):
            mw.process_exception(Request(f"http://www.h{k}.com/"),
                                 DownloadConnectionRefusedError("refused"))
    assert len(mw.dead_hosts) == len(mw.once.seen) == HOSTS_NOTED
    first, last = Request("http://www.h0.com/a"), Request(f"http://www.h{HOSTS_NOTED}.com/a")
    mw.process_request(first)
    mw.process_request(last)
    assert "dont_retry" not in first.meta and last.meta["dont_retry"]
