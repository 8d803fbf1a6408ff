"""One crawl of the test web's hostile hosts (bombs, fake text, bad redirects, traps), with
the project's settings but a small page budget per host, and what a user sees of it."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from tests.conftest import crawl_command
from tests.fetchlog import fetch_log_settings, read_fetch_log
from tests.filters_crawl import final_stats
from tests.spec_reader import read_records
from tests.truth import load_truth
from tianwang.testweb.junk import HOSTILE_HOSTS
from tianwang.testweb.launcher import TestWebProcess, write_seeds

SEED, HOSTS, PAGES = 5, 2, 10
HOST_PAGES = 40  # TIANWANG_MAX_HOST_PAGES of this crawl: the calendar trap's bound


@dataclass
class HostileCrawl:
    truth: dict[str, dict]
    log: list[dict]  # the server's access log lines
    sent: list[str]  # the urls the crawl sent, in order (its FetchLog)
    stored: dict[str, bytes]  # url -> stored DATA (HTTP response)
    stats: dict
    stderr: str
    max_rss_kb: int  # peak RSS of the crawl process


def run_crawl(workdir: Path, seeds: list[str], settings: dict[str, str],
              web_args: tuple[str, ...] = ("--junk",)) -> HostileCrawl:
    workdir.mkdir(parents=True, exist_ok=True)
    log_path, data = workdir / "access.jsonl", workdir / "data"
    seeds_file = write_seeds(workdir / "seeds.txt", seeds)
    with TestWebProcess(SEED, HOSTS, PAGES, access_log=log_path, extra_args=web_args) as web:
        settings = {"TIANWANG_PROXY": web.address, "TIANWANG_DATA_DIR": str(data),
                    **fetch_log_settings(workdir / "sent.txt"), **settings}
        stderr, rss = crawl_with_rss(workdir, {"seeds": str(seeds_file)}, settings)
    log = [json.loads(line) for line in log_path.read_text(encoding="utf-8").splitlines()]
    stored = {}
    for path in sorted(data.glob("data_*/*/page.dat")):
        for record in read_records(path.read_bytes()):
            stored[record["header"]["url"]] = record["data"]
    truth = load_truth(SEED, HOSTS, PAGES, "--junk")
    sent = read_fetch_log(workdir / "sent.txt")
    return HostileCrawl(truth, log, sent, stored, final_stats(stderr), stderr, rss)


# Linux's ru_maxrss of a process counts the memory it had before its exec: a crawl started
# straight from a pytest worker (vfork, then exec) reports the worker's own peak when that is
# higher (546 MB of a worker, against the crawl's 185). So a small launcher forks the crawl,
# whose peak then starts from the launcher's, and writes the crawl's ru_maxrss (KB).
_LAUNCHER = """import os, sys
pid = os.fork()
if pid == 0:
    os.execv(sys.argv[2], sys.argv[2:])
_pid, status, usage = os.wait4(pid, 0)
with open(sys.argv[1], "w") as out:
    out.write(str(usage.ru_maxrss))
sys.exit(os.waitstatus_to_exitcode(status))
"""


def crawl_with_rss(workdir: Path, args: dict[str, str], settings: dict[str, str],
                   timeout: float = 300) -> tuple[str, int]:
    """Run `scrapy crawl site`; its stderr and its own peak RSS (KB, from wait4)."""
    command, env = crawl_command("site", args, settings)
    err_path, rss_path = workdir / "crawl.err", workdir / "crawl.rss"
    with open(err_path, "wb") as err:
        proc = subprocess.Popen([sys.executable, "-c", _LAUNCHER, str(rss_path), *command],
                                cwd=workdir, env=env, stdout=err, stderr=err)
        proc.wait(timeout)
    stderr = err_path.read_text(encoding="utf-8", errors="replace")
    assert proc.returncode == 0, stderr[-3000:]
    return stderr, int(rss_path.read_text())


def run_hostile_crawl(workdir: Path) -> HostileCrawl:
    seeds = [f"http://{host}/" for host in HOSTILE_HOSTS]
    settings = {"TIANWANG_MAX_LEVELS": "0", "TIANWANG_MAX_HOST_PAGES": str(HOST_PAGES)}
    return run_crawl(workdir, seeds, settings)
