"""`tianwang first-crawl`: the printed crawl and report commands, run as printed, crawl the
test web offline and show it; the same crawl without the proxy setting fetches nothing."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import ROOT, lines_until
from tests.redis_server import free_port
from tests.truth import load_truth, reach
from tianwang.formats.store import iter_tree

SEED, HOSTS = 3, 6
LAST_LINE = "Ctrl-C here stops the test web."


@pytest.fixture(scope="module")
def first_crawl(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict]:
    """The command running in a directory of its own (no scrapy.cfg there), and what it
    printed up to its last line."""
    workdir = tmp_path_factory.mktemp("firstcrawl")
    port = free_port()
    command = [sys.executable, "-m", "tianwang", "first-crawl", "--seed", str(SEED),
               "--hosts", str(HOSTS), "--port", str(port)]
    proc = subprocess.Popen(command, cwd=workdir, env=_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    with proc:  # its pipes closed on the way out
        try:
            lines = lines_until(proc, LAST_LINE)
            yield {"workdir": workdir, "lines": lines, "port": port, "proc": proc}
        finally:
            if proc.poll() is None:
                proc.send_signal(signal.SIGINT)  # as Ctrl-C at the terminal
                proc.wait(timeout=60)


def _env() -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("http_proxy", None)  # Scrapy would take it: only the printed setting counts
    env.pop("SCRAPY_SETTINGS_MODULE", None)
    return env



def _printed(lines: list[str], after: str) -> str:
    """The command printed (indented) after the line starting with `after`."""
    at = next(i for i, line in enumerate(lines) if line.startswith(after))
    return next(line for line in lines[at + 1:] if line.startswith("    ")).strip()


def _shell(command: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, shell=True, cwd=cwd, env=_env(), capture_output=True,
                          text=True, timeout=400)


def test_the_printed_commands_crawl_the_test_web_and_report_it(first_crawl: dict) -> None:
    workdir, lines = first_crawl["workdir"], first_crawl["lines"]
    assert f"served at http://127.0.0.1:{first_crawl['port']}" in lines[0]
    seeds = (workdir / "first-crawl" / "seeds.txt").read_text().split()
    assert len(seeds) == HOSTS and all(url.endswith(".test/") for url in seeds)
    crawl = _printed(lines, "In another terminal")
    assert f"-s TIANWANG_PROXY=http://127.0.0.1:{first_crawl['port']}" in crawl
    result = _shell(crawl, workdir)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "crawl done (finished)" in result.stderr.splitlines()[-1]
    # What a correct crawl of these seeds stores, from the test web's truth alone.
    truth = load_truth(SEED, HOSTS, None, "--dot-test")
    expected = reach(truth, seeds).stored(truth)
    stored = {record.url for _path, record in iter_tree(workdir / "first-crawl" / "data")}
    assert stored == expected and len(stored) > HOSTS
    report = _shell(_printed(lines, "then look at what it stored"), workdir)
    assert report.returncode == 0, report.stderr[-2000:]
    assert report.stdout.startswith(f"report of {len(expected):,} pages from {HOSTS} hosts")
    assert (workdir / "first-crawl" / "data" / "report.html").is_file()


def test_the_crawl_without_the_proxy_setting_fetches_nothing(first_crawl: dict,
                                                            tmp_path: Path) -> None:
    crawl = _printed(first_crawl["lines"], "In another terminal")
    proxy = f" -s TIANWANG_PROXY=http://127.0.0.1:{first_crawl['port']}"
    # Forgotten: the seeds are under .test, which no DNS resolves; the crawl says so at once.
    forgot = crawl.replace(proxy, "").replace("first-crawl/data", str(tmp_path / "data"))
    assert "TIANWANG_PROXY" not in forgot
    result = _shell(forgot.replace("seeds=first-crawl/", f"seeds={first_crawl['workdir']}/"
                                   "first-crawl/"), tmp_path)
    assert result.returncode == 2, result.stderr[-2000:]
    assert result.stderr.rstrip("\n").splitlines()[-1] == (
        "tianwang: error: the seeds are under .test, names no DNS resolves: they are the test "
        "web's (tianwang first-crawl), crawled through its proxy: give "
        "-s TIANWANG_PROXY=http://127.0.0.1:PORT, the address it printed")
    assert "Traceback" not in result.stderr and not (tmp_path / "data").exists()


def test_ctrl_c_stops_the_test_web(first_crawl: dict) -> None:
    proc = first_crawl["proc"]
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=60) == 0


def test_a_port_in_use_is_one_line(tmp_path: Path) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = subprocess.run(
            [sys.executable, "-m", "tianwang", "first-crawl", "--port", str(port)],
            cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=120)
    assert result.returncode == 1
    assert result.stderr.splitlines()[-1].startswith(
        f"tianwang first-crawl: cannot listen on 127.0.0.1:{port} (")
    assert result.stderr.splitlines()[-1].endswith("still running? Give --port N")
