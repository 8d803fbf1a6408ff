"""A crawl of the hostile web (tests/hostile_web.py) as a user runs it, and what it left.

The server runs in its own process (`python -m tests.hostile_web`); the crawl is the
project's `scrapy crawl site` in another, through it as a proxy or not.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from tests.conftest import ROOT, crawl_command
from tests.fetchlog import fetch_log_settings, read_fetch_log
from tests.filters_crawl import final_stats
from tests.spec_reader import read_records
from tianwang.testweb.launcher import write_seeds


@dataclass
class HostileWebCrawl:
    returncode: int
    log: list[dict]  # the server's access log lines (empty without the server)
    sent: list[str]  # the urls the crawl sent, in order (its FetchLog)
    stored: dict[str, bytes]  # url -> the stored record's DATA (the HTTP response)
    stats: dict
    stderr: str

    def asked(self, host: str) -> list[str]:
        """The paths of `host` the server was asked for, in order."""
        prefix = f"http://{host}"
        return [line["url"][len(prefix):] or "/" for line in self.log
                if line["url"].startswith(prefix + "/")]

    def summary(self) -> str:
        """The crawl's last line: its summary."""
        return self.stderr.rstrip().splitlines()[-1]


class HostileWebProcess:
    """The hostile web in its own process; `address` once started."""

    def __init__(self, access_log: Path) -> None:
        self.access_log = access_log
        self.proc: subprocess.Popen[bytes] | None = None
        self.address = ""

    def __enter__(self) -> HostileWebProcess:
        command = [sys.executable, "-m", "tests.hostile_web", "--access-log",
                   str(self.access_log)]
        self.proc = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE)
        assert self.proc.stdout is not None
        self.address = self.proc.stdout.readline().decode().strip()
        assert self.address.startswith("http://127.0.0.1:"), self.address
        return self

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None,
                 tb: TracebackType | None) -> None:
        assert self.proc is not None
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()


def run_crawl(workdir: Path, seeds: list[str], settings: dict[str, str],
              proxy: bool = True, timeout: float = 300) -> HostileWebCrawl:
    """Crawl `seeds` through the hostile web (proxy=True) or directly (no server at all)."""
    workdir.mkdir(parents=True, exist_ok=True)
    log_path, data = workdir / "access.jsonl", workdir / "data"
    seeds_file = write_seeds(workdir / "seeds.txt", seeds)
    settings = {"TIANWANG_DATA_DIR": str(data), "TIANWANG_PROXY": "",
                **fetch_log_settings(workdir / "sent.txt"), **settings}
    if not proxy:
        result = _crawl(workdir, seeds_file, settings, timeout)
    else:
        with HostileWebProcess(log_path) as web:
            settings["TIANWANG_PROXY"] = web.address
            result = _crawl(workdir, seeds_file, settings, timeout)
    log = [json.loads(line) for line in log_path.read_text(encoding="utf-8").splitlines()] \
        if log_path.exists() else []
    stored = {}
    for path in sorted(data.glob("data_*/*/page.dat")):
        for record in read_records(path.read_bytes()):
            stored[record["header"]["url"]] = record["data"]
    sent = read_fetch_log(workdir / "sent.txt") if (workdir / "sent.txt").exists() else []
    return HostileWebCrawl(result.returncode, log, sent, stored, final_stats(result.stderr),
                           result.stderr)


def _crawl(workdir: Path, seeds: Path, settings: dict[str, str],
           timeout: float) -> subprocess.CompletedProcess[str]:
    command, env = crawl_command("site", {"seeds": str(seeds)}, settings)
    return subprocess.run(command, cwd=workdir, env=env, capture_output=True, text=True,
                          timeout=timeout)
