"""A close that happens: CLOSESPIDER_TIMEOUT, Ctrl-C and SIGTERM end a crawl on time whatever
the servers do, with the summary line, the stats file and a JOBDIR that resumes what was
given up (tianwang/extensions/closing.py), against real servers that never answer."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.conftest import crawl_command
from tianwang.testweb.floods import SILENT_PAGE, SILENT_ROBOTS
from tianwang.testweb.launcher import TestWebProcess
from tianwang.testweb.model import SyntheticWeb

SEED, HOSTS, PAGES = 3, 4, 20
SILENT = [f"http://{SILENT_ROBOTS}/", f"http://{SILENT_PAGE}/"]


@pytest.fixture
def floods(tmp_path: Path):
    log = tmp_path / "access.jsonl"
    with TestWebProcess(SEED, HOSTS, PAGES, access_log=log, extra_args=("--floods",)) as web:
        yield web, log


def start(tmp_path: Path, proxy: str, **settings: str) -> subprocess.Popen[str]:
    seeds = SILENT + SyntheticWeb(SEED, HOSTS, PAGES).homepages()
    settings = {"TIANWANG_PROXY": proxy, "TIANWANG_DATA_DIR": str(tmp_path / "data"),
                "JOBDIR": str(tmp_path / "job"), **settings}
    command, env = crawl_command("site", {"seeds": ",".join(seeds)}, settings)
    with open(tmp_path / "crawl.log", "w") as log:  # the child keeps its own copy
        return subprocess.Popen(command, cwd=tmp_path, env=env, stdout=subprocess.DEVNULL,
                                stderr=log, text=True)


def wait_for_silence(log: Path, proc: subprocess.Popen[str]) -> None:
    """Until the server has been asked both things it never answers."""
    while True:
        asked = [json.loads(line)["url"] for line in log.read_text().splitlines()
                 if json.loads(line).get("silent")] if log.exists() else []
        if {f"http://{SILENT_ROBOTS}/robots.txt", f"http://{SILENT_PAGE}/"} <= set(asked):
            return
        assert proc.poll() is None, "the crawl ended before it met the silent servers"
        time.sleep(0.05)


def resumed_pending(tmp_path: Path, proxy: str) -> str:
    """The log of the same command run again (it resumes the JOBDIR), stopped at once."""
    proc = start(tmp_path, proxy, CLOSESPIDER_TIMEOUT="1", TIANWANG_CLOSE_GRACE="0")
    proc.wait(timeout=120)
    return (tmp_path / "crawl.log").read_text()


def test_a_close_asked_at_20_s_with_a_never_answering_robots_txt_ends_by_80_s(
        tmp_path: Path, floods) -> None:
    web, log = floods
    started = time.monotonic()
    proc = start(tmp_path, web.address, CLOSESPIDER_TIMEOUT="20")
    status = proc.wait(timeout=300)
    took = time.monotonic() - started
    stderr = (tmp_path / "crawl.log").read_text()
    assert took < 80, f"closed after {took:.0f} s"
    assert status == 0, stderr[-3000:]
    assert "Traceback" not in stderr
    last = stderr.rstrip().splitlines()[-1]
    assert "crawl done (closespider_timeout)" in last and "given up in flight" in last
    assert list((tmp_path / "data" / "stats").glob("*.json"))
    # The requests given up are pending in the JOBDIR: the next run takes them up again.
    again = resumed_pending(tmp_path, web.address)
    resumed = [line for line in again.splitlines() if "Resuming crawl from" in line]
    assert resumed and int(resumed[0].split(": ")[-1].split()[0]) >= 2, again[-3000:]


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["ctrl_c", "sigterm"])
def test_one_ctrl_c_or_sigterm_ends_the_crawl_however_its_servers_answer(
        tmp_path: Path, floods, sig: signal.Signals) -> None:
    web, log = floods
    proc = start(tmp_path, web.address)
    wait_for_silence(log, proc)
    asked = time.monotonic()
    proc.send_signal(sig)
    status = proc.wait(timeout=300)
    took = time.monotonic() - asked
    stderr = (tmp_path / "crawl.log").read_text()
    # TIANWANG_CLOSE_GRACE (10 s), then what is in flight is given up; the rest is margin for
    # a loaded machine.
    assert took < 60, f"ended {took:.0f} s after the signal"
    assert status == 0, stderr[-3000:]
    assert "Traceback" not in stderr
    assert "crawl done (shutdown)" in stderr.rstrip().splitlines()[-1]
    assert list((tmp_path / "data" / "stats").glob("*.json"))
