"""The README is a newcomer's way in: every command block in it is run here as written, in a
copy of the project as a clone has it, or checked where running it here cannot be (the test
command is CI's own, which runs it; a fresh install would need the package index)."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.conftest import ROOT, lines_until
from tests.truth import load_truth, reach
from tianwang.formats.store import iter_tree
from tianwang.testweb.launcher import TestWebProcess

README = ROOT / "README.md"
FIRST_CRAWL_PORT = 8731  # tianwang first-crawl's default, which the README's commands name

# Each command block of the README, by its first line, and the test here that runs or
# checks it. A block added to the README without a test fails the first test below.
RUN_BY = {
    "python3 -m venv .venv && .venv/bin/python -m pip install -e . && ":
        "test_the_install_command_is_cis_and_its_demo_runs",
    "{ python3 -m venv .venv ||": "test_ci_runs_the_readme_test_command",
    "source .venv/bin/activate\ntianwang first-crawl":
        "test_first_crawl_prints_the_readmes_commands",
    "source .venv/bin/activate\nscrapy crawl site -a seeds=first-crawl/seeds.txt":
        "test_the_readmes_first_crawl_stores_the_test_web_and_reports_it",
    "tianwang records ls first-crawl/data": "test_the_readmes_record_tools_read_the_first_crawl",
    "scrapy crawl site -a seeds=seeds.txt": "test_the_readmes_real_web_command_crawls_politely",
}


def blocks(language: str = "sh") -> list[str]:
    text = README.read_text(encoding="utf-8")
    return re.findall(rf"^```{language}\n(.+?)\n```$", text, re.S | re.M)


def block(start: str) -> str:
    (found,) = [text for text in blocks() if text.startswith(start)]
    return found


def test_every_command_block_is_run_or_checked_by_a_test() -> None:
    for text in blocks():
        starts = [start for start in RUN_BY if text.startswith(start)]
        assert len(starts) == 1, f"no test runs this README block (add it to RUN_BY):\n{text}"
    assert len(blocks()) == len(RUN_BY)
    assert all(callable(globals().get(name)) for name in RUN_BY.values())


def test_the_readme_is_read_in_five_minutes() -> None:
    text = README.read_text(encoding="utf-8")
    # 238 words a minute, adults' silent reading of non-fiction (Brysbaert 2019).
    assert len(text.splitlines()) < 250 and len(text.split()) <= 5 * 238


def test_ci_runs_the_readme_test_command() -> None:
    ci_lines = [
        line
        for line in (ROOT / ".ci" / "run").read_text().splitlines()
        if line and not line.startswith(("#", "set ", "cd "))
    ]
    assert ci_lines == [block("{ python3 -m venv .venv ||")]


# --- a copy of the project, as a clone has it --------------------------------------------


def _env() -> dict[str, str]:
    env = dict(os.environ)
    for name in ("SCRAPY_SETTINGS_MODULE", "PYTHONPATH", "VIRTUAL_ENV", "http_proxy",
                 "https_proxy", "HTTP_PROXY", "HTTPS_PROXY"):
        env.pop(name, None)
    return env


def _bash(script: str, cwd: Path, env: dict[str, str] | None = None,
          timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "-c", script], cwd=cwd, env=env or _env(),
                          capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def clone(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The project's files without what a run leaves, and `.venv` the virtual environment
    these tests run in: the README's install into a fresh one needs the package index, which
    no test may reach (CI's command, which the test below holds equal to the README's, runs
    that install every time)."""
    copy = tmp_path_factory.mktemp("clone") / "tianwang"
    shutil.copytree(ROOT, copy, symlinks=True, ignore=shutil.ignore_patterns(
        ".git", ".venv", "data", "demo", "first-crawl", "__pycache__", ".pytest_cache",
        ".hypothesis", ".ruff_cache", "build", "*.egg-info"))
    assert Path(sys.prefix, "bin", "activate").is_file(), "the tests run outside a venv"
    (copy / ".venv").symlink_to(sys.prefix)
    return copy


def test_the_install_command_is_cis_and_its_demo_runs(clone: Path) -> None:
    venv, install, demo = block("python3 -m venv .venv && ").split(" && ")
    ci = (ROOT / ".ci" / "run").read_text()
    # The same environment and install as CI's command, which adds the tests' packages.
    assert venv == "python3 -m venv .venv" and venv in ci
    assert install == ".venv/bin/python -m pip install -e ." and f"{install}[test]'" in \
        ci.replace("-e '.", "-e .")
    result = _bash(demo, clone)
    assert result.returncode == 0, result.stderr[-3000:]
    lines = result.stdout.splitlines()
    summary = next(line for line in lines if line.startswith("pages "))
    assert re.fullmatch(r"pages 2534, hosts 100, bytes \d+ \(\d+ on disk in demo/\), .+", summary)
    assert lines[lines.index(summary) + 1] == "Next:" and "first-crawl" in lines[-1]
    assert len(list((clone / "demo").glob("data_*/*/page.dat"))) == 100


# --- a first crawl of your own -------------------------------------------------------------


@contextlib.contextmanager
def _port_of_our_own(port: int) -> Iterator[None]:
    """Hold the README's fixed port for this test: another run of this test (a second test
    process, another checkout's suite) waits on the lock, anything else for the port."""
    with open(Path(tempfile.gettempdir()) / f"tianwang-readme-port-{port}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        deadline = time.monotonic() + 600
        while True:
            with socket.socket() as probe:
                probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                try:
                    probe.bind(("127.0.0.1", port))
                    break
                except OSError:
                    assert time.monotonic() < deadline, f"127.0.0.1:{port} stays taken"
            time.sleep(1)
        yield



@pytest.fixture(scope="module")
def first_crawl(clone: Path) -> Iterator[dict]:
    """The README's first crawl: `tianwang first-crawl` running, its printed commands, and
    the README's crawl and report commands run as written "in another terminal"."""
    with _port_of_our_own(FIRST_CRAWL_PORT):
        server = subprocess.Popen(["bash", "-c", block("source .venv/bin/activate\ntianwang")],
                                  cwd=clone, env=_env(), stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True, start_new_session=True)
        with server:
            try:
                printed = lines_until(server, "Ctrl-C here stops the test web.")
                crawl = _bash(block("source .venv/bin/activate\nscrapy crawl"), clone)
                yield {"printed": printed, "crawl": crawl, "data": clone / "first-crawl" / "data"}
            finally:
                os.killpg(server.pid, signal.SIGINT)  # Ctrl-C in its terminal
                server.wait(timeout=60)


def test_first_crawl_prints_the_readmes_commands(first_crawl: dict) -> None:
    printed = [line.strip() for line in first_crawl["printed"] if line.startswith("    ")]
    assert printed == block("source .venv/bin/activate\nscrapy crawl").splitlines()[1:]


def test_the_readmes_first_crawl_stores_the_test_web_and_reports_it(
        first_crawl: dict, clone: Path) -> None:
    crawl = first_crawl["crawl"]
    assert crawl.returncode == 0, crawl.stderr[-3000:]
    # The closing line the README shows is this crawl's, word for word.
    (shown,) = [line for line in blocks("text") if line.startswith("crawl done")]
    last = [line for line in crawl.stderr.splitlines() if "crawl done" in line][-1]
    assert last.endswith(f"INFO: {shown}")
    # What a correct crawl of these seeds stores, from the test web's truth alone.
    seeds = (clone / "first-crawl" / "seeds.txt").read_text().split()
    truth = load_truth(1, 100, None, "--dot-test")
    stored = {record.url for _path, record in iter_tree(first_crawl["data"])}
    assert stored == reach(truth, seeds).stored(truth)
    assert crawl.stdout.startswith(f"report of {len(stored):,} pages from 100 hosts")
    # The data directory holds what the README's listing says it does.
    listing = next(text for text in blocks("text") if text.startswith("first-crawl/data/"))
    for line in listing.splitlines()[1:]:
        path = re.sub(r"<[^>]+>", "*", line.split()[0])
        assert list(clone.glob(f"first-crawl/data/{path}")), path


def test_the_readmes_record_tools_read_the_first_crawl(first_crawl: dict, clone: Path) -> None:
    result = _bash("source .venv/bin/activate\n" + block("tianwang records ls"), clone)
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr[-2000:]
    out = result.stdout.splitlines()
    assert all(len(line.split("\t")) == 5 for line in out[:3])
    url = re.search(r"--url (\S+)", block("tianwang records ls")).group(1)
    assert out[3:5] == ["version: 1.0", f"url: {url}"]
    assert re.fullmatch(r"wrote [\d,]+ response records to first-crawl/crawl.warc.gz: "
                        r"2,534 pages and \d+ redirects rebuilt .+", out[-1])
    assert (clone / "first-crawl" / "crawl.warc.gz").stat().st_size > 0


# --- the real web: a test web behind http_proxy stands in for it ---------------------------


def test_the_readmes_real_web_command_crawls_politely(clone: Path, tmp_path: Path) -> None:
    seed, hosts, pages = 5, 3, 8
    truth = load_truth(seed, hosts, pages)
    homepages = [url for url, page in truth.items() if page["kind"] == "home"]
    work = tmp_path / "project"
    shutil.copytree(clone, work, symlinks=True, ignore=shutil.ignore_patterns(
        "demo", "first-crawl"))
    (work / "seeds.txt").write_text("".join(f"{url}\n" for url in homepages))
    log = tmp_path / "access.jsonl"
    with TestWebProcess(seed, hosts, pages, access_log=log) as web:
        # Scrapy takes the proxy from the environment, as from a user's shell.
        env = {**_env(), "http_proxy": web.address}
        result = _bash("source .venv/bin/activate\n" + block("scrapy crawl site -a seeds=seeds"),
                       work, env)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "crawl done (finished)" in result.stderr.splitlines()[-1]
    stored = {record.url for _path, record in iter_tree(work / "data")}
    assert stored == reach(truth, homepages).stored(truth)
    # Polite by default: robots.txt first, then one request at a time per host, a second
    # apart (0.5 to 1.5 s, Scrapy's jitter), so a host's requests span half a second each.
    served = [json.loads(line) for line in log.read_text().splitlines()]
    for host in {urlsplit(url).hostname for url in homepages}:
        times = [line["time"] for line in served if urlsplit(line["url"]).hostname == host]
        first = next(line["url"] for line in served if urlsplit(line["url"]).hostname == host)
        assert first.endswith("/robots.txt")
        assert times[-1] - times[0] >= 0.5 * (len(times) - 2), host
    assert len(served) > 3 * hosts
