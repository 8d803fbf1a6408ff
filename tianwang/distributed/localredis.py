"""A redis-server of this machine's own, for a crawl run as several processes (processes.py).

It listens on a unix socket in a private directory, no TCP port: nothing outside this machine
(or this user) can reach it, and no port can be taken by something else. Without a JOBDIR the
frontier lives only as long as the crawl, so nothing is written to disk; with one, the server
keeps an append-only file in JOBDIR/redis, and the same command run again resumes the job.
"""

from __future__ import annotations

import ctypes
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import TracebackType

import redis

from tianwang.errors import StartupError

START_TIMEOUT = 30.0  # seconds; a large append-only file takes a while to load


class LocalRedis:
    """Start with `with LocalRedis(jobdir) as server:`; server.url for the crawl's nodes."""

    def __init__(self, jobdir: str | None = None) -> None:
        self.jobdir = Path(jobdir) / "redis" if jobdir else None
        self.directory: Path | None = None
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def socket(self) -> Path:
        assert self.directory is not None
        return self.directory / "redis.sock"

    @property
    def url(self) -> str:
        return f"unix://{self.socket}"

    def __enter__(self) -> LocalRedis:
        binary = shutil.which("redis-server")
        if binary is None:
            raise StartupError("TIANWANG_PROCESSES above 1 needs redis-server on PATH "
                               "(Debian: apt-get install redis-server)")
        # The socket in a fresh private directory (a unix socket path has ~100 bytes at most,
        # so not under a deep JOBDIR); the data, when kept, in JOBDIR/redis.
        self.directory = Path(tempfile.mkdtemp(prefix="tianwang-redis-"))
        data = self.jobdir or self.directory
        data.mkdir(parents=True, exist_ok=True)
        persist = ["--appendonly", "yes"] if self.jobdir else ["--appendonly", "no"]
        command = [binary, "--port", "0", "--unixsocket", str(self.socket),
                   "--unixsocketperm", "700", "--dir", str(data), "--save", "", *persist,
                   "--logfile", str(data / "redis.log")]
        self.proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL, start_new_session=True,
                                     preexec_fn=die_with_parent)
        self._wait_ready(data / "redis.log")
        return self

    def _wait_ready(self, log: Path) -> None:
        assert self.proc is not None
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                said = _last_line(log)
                self._cleanup()
                raise StartupError(f"redis-server did not start: {said}")
            try:
                with redis.Redis(unix_socket_path=str(self.socket)) as client:
                    client.ping()
                return
            except (redis.ConnectionError, redis.BusyLoadingError):
                time.sleep(0.05)
        said = _last_line(log)
        self.__exit__(None, None, None)
        raise StartupError(f"redis-server did not answer in {START_TIMEOUT:.0f} s: {said}")

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()  # SIGTERM: redis-server flushes its append-only file
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._cleanup()

    def _cleanup(self) -> None:
        if self.directory is not None:
            shutil.rmtree(self.directory, ignore_errors=True)


def die_with_parent() -> None:
    """In a child before it runs: SIGTERM it when its parent dies, even by kill -9, so a
    killed supervisor leaves no process and no redis-server behind (Linux's PR_SET_PDEATHSIG;
    elsewhere nothing)."""
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None).prctl(1, signal.SIGTERM)  # 1 = PR_SET_PDEATHSIG


def _last_line(log: Path) -> str:
    try:
        lines = log.read_text(encoding="utf-8", errors="replace").strip().splitlines()
    except OSError:
        return "no log"
    return lines[-1] if lines else "no log"
