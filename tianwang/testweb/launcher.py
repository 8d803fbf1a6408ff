"""Run the test web in a subprocess and learn its address (for the demo, tests, benchmarks).

The server runs in its own process, as a real web would, so it takes its own core and a
crawl measured against it is not slowed by serving.
"""

from __future__ import annotations

import os
import selectors
import subprocess
import sys
import threading
from pathlib import Path
from types import TracebackType
from typing import IO


class TestWebError(RuntimeError):
    """The test web did not start; the message carries what it printed."""

    __test__ = False  # not a pytest test class, despite the name


class TestWebProcess:
    __test__ = False  # not a pytest test class, despite the name

    def __init__(
        self,
        seed: int,
        hosts: int,
        max_pages: int | None = None,
        access_log: str | os.PathLike[str] | None = None,
        extra_args: tuple[str, ...] = (),
        start_timeout: float = 60.0,
    ) -> None:
        self.args = ["--seed", str(seed), "--hosts", str(hosts), *extra_args]
        if max_pages is not None:
            self.args += ["--max-pages", str(max_pages)]
        if access_log is not None:
            self.args += ["--access-log", str(access_log)]
        self.start_timeout = start_timeout
        self.proc: subprocess.Popen[bytes] | None = None
        self.address = ""
        self._drains: list[threading.Thread] = []

    def start(self) -> str:
        command = [sys.executable, "-m", "tianwang.cli", "testweb", "serve", *self.args]
        self.proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        first = self._first_line()
        if not first.startswith("http://"):
            self.proc.kill()  # then its stderr ends, and can be read whole
            self.proc.wait()
            message = f"test web did not start: {first!r} {self._stderr()}"
            self.stop()
            raise TestWebError(message)
        self.address = first
        self._drain(self.proc.stdout)
        self._drain(self.proc.stderr)
        return self.address

    @classmethod
    def for_graph(
        cls,
        directory: str | os.PathLike[str],
        access_log: str | os.PathLike[str] | None = None,
        start_timeout: float = 60.0,
    ) -> TestWebProcess:
        """A test web serving a recorded link graph (`testweb serve --graph DIR`)."""
        process = cls(0, 1, start_timeout=start_timeout)
        process.args = ["--graph", str(directory)]
        if access_log is not None:
            process.args += ["--access-log", str(access_log)]
        return process

    @property
    def port(self) -> int:
        return int(self.address.rsplit(":", 1)[1])

    def stop(self) -> int | None:
        """Stop the server (SIGTERM, then SIGKILL after 10 s); its exit code."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for thread in self._drains:  # they end at EOF, now that the server is gone
            thread.join(timeout=5)
        for pipe in (self.proc.stdout, self.proc.stderr):
            if pipe is not None:
                pipe.close()
        return self.proc.returncode

    def __enter__(self) -> TestWebProcess:
        self.start()
        return self

    def __exit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def _first_line(self) -> str:
        assert self.proc is not None and self.proc.stdout is not None
        with selectors.DefaultSelector() as selector:
            selector.register(self.proc.stdout, selectors.EVENT_READ)
            if not selector.select(self.start_timeout):
                return f"no address after {self.start_timeout:.0f} s"
        return self.proc.stdout.readline().decode("utf-8", "replace").strip()

    def _stderr(self) -> str:
        assert self.proc is not None and self.proc.stderr is not None
        return self.proc.stderr.read().decode("utf-8", "replace")[-2000:]

    def _drain(self, pipe: IO[bytes] | None) -> None:
        """Keep reading a pipe so a chatty server never blocks on a full one."""

        def run() -> None:
            for line in pipe or ():
                sys.stderr.write(f"[testweb] {line.decode('utf-8', 'replace')}")

        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        self._drains.append(thread)


def write_seeds(path: Path, urls: list[str]) -> Path:
    path.write_text("".join(f"{url}\n" for url in urls), encoding="utf-8")
    return path
