"""A crawl through scrapyd: a real scrapyd on a loopback port, the egg deployed with the real
scrapyd-deploy, a `site` job scheduled with arguments and `setting=` overrides."""

from __future__ import annotations

import configparser
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import ROOT, TestWeb
from tests.test_spiders_site import access_log, read_tree
from tests.truth import host_of, reach


@dataclass
class Scrapyd:
    url: str
    root: Path


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def call(url: str, data: dict | list | None = None, timeout: float = 30) -> dict:
    body = urllib.parse.urlencode(data).encode() if data is not None else None
    # An explicit empty proxy map: nothing here may go anywhere but 127.0.0.1.
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(url, data=body, timeout=timeout) as response:
        return json.loads(response.read())


def script(name: str) -> str:
    """A console script installed beside this Python (pip puts them there)."""
    beside = Path(sys.executable).parent / name
    found = str(beside) if beside.exists() else shutil.which(name)
    assert found, f"{name} is not installed: pip install -e '.[test]'"
    return found


def clean_env(home: Path) -> dict[str, str]:
    # HOME: scrapyd and scrapyd-deploy also read ~/.scrapyd.conf and ~/.scrapy.cfg.
    env = {**os.environ, "HOME": str(home)}
    for name in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "PYTHONPATH",
                 "SCRAPY_SETTINGS_MODULE"):
        env.pop(name, None)
    return env


@pytest.fixture(scope="module")
def scrapyd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Scrapyd]:
    root = tmp_path_factory.mktemp("scrapyd")
    port = free_port()
    (root / "scrapyd.conf").write_text(
        "[scrapyd]\n"
        "bind_address = 127.0.0.1\n"
        f"http_port = {port}\n"
        f"eggs_dir = {root / 'eggs'}\n"
        f"logs_dir = {root / 'logs'}\n"
        f"dbs_dir = {root / 'dbs'}\n"
        "items_dir =\n"
        "poll_interval = 0.5\n"
        "max_proc = 1\n"
    )
    output = open(root / "scrapyd.out", "wb")
    proc = subprocess.Popen(
        [script("scrapyd")], cwd=root, env=clean_env(root), stdout=output, stderr=subprocess.STDOUT
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_up(url, proc, root)
        yield Scrapyd(url, root)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        output.close()


def wait_until_up(url: str, proc: subprocess.Popen, root: Path) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert proc.poll() is None, (root / "scrapyd.out").read_text()
        try:
            if call(f"{url}/daemonstatus.json", timeout=2)["status"] == "ok":
                return
        except OSError:
            time.sleep(0.2)
    raise AssertionError(f"scrapyd did not answer: {(root / 'scrapyd.out').read_text()}")


def project_copy(dest: Path, scrapyd_url: str) -> Path:
    """This project as a user has it, its scrapy.cfg deploy target pointed at the test's
    scrapyd (deploying from the shared checkout would leave build files in it)."""
    shutil.copytree(ROOT / "tianwang", dest / "tianwang",
                    ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, dest / name)
    config = configparser.ConfigParser()
    config.read(ROOT / "scrapy.cfg")
    port = urllib.parse.urlsplit(scrapyd_url).port
    target = urllib.parse.urlsplit(config["deploy"]["url"])._replace(netloc=f"127.0.0.1:{port}")
    config["deploy"]["url"] = target.geturl()
    with open(dest / "scrapy.cfg", "w") as file:
        config.write(file)
    return dest


def deploy_project(scrapyd_url: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """`scrapyd-deploy` run by a user in a copy of this project: its answer."""
    project = project_copy(tmp_path / "project", scrapyd_url)
    return subprocess.run(
        [script("scrapyd-deploy")], cwd=project, env=clean_env(tmp_path),
        capture_output=True, text=True, timeout=300,
    )


def test_the_projects_deploy_target_has_no_trailing_slash() -> None:
    # scrapyd-client 2.0.3 joins "/listprojects.json" to it: a trailing slash makes "//".
    config = configparser.ConfigParser()
    config.read(ROOT / "scrapy.cfg")
    assert config["deploy"]["project"] == "tianwang"
    assert not config["deploy"]["url"].endswith("/")


def wait_for_job(scrapyd: Scrapyd, job: str, timeout: float = 300) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        jobs = call(f"{scrapyd.url}/listjobs.json?project=tianwang")
        finished = [entry for entry in jobs["finished"] if entry["id"] == job]
        if finished:
            return finished[0]
        time.sleep(0.5)
    raise AssertionError(f"job {job} did not finish: {jobs}")


def test_a_job_deployed_and_scheduled_through_scrapyd_crawls_with_its_overrides(
    scrapyd: Scrapyd, testweb: TestWeb, tmp_path: Path
) -> None:
    deploy = deploy_project(scrapyd.url, tmp_path)
    assert deploy.returncode == 0, deploy.stderr
    assert '"status": "ok"' in deploy.stdout + deploy.stderr, deploy.stdout + deploy.stderr
    assert "site" in call(f"{scrapyd.url}/listspiders.json?project=tianwang")["spiders"]

    homepages = [url for url, page in testweb.truth.items() if page["kind"] == "home"]
    # Seeds whose third level holds pages, so a two-level limit visibly stops short of it.
    seeds = [url for url in homepages
             if reach(testweb.truth, [url], 3).stored(testweb.truth)
             > reach(testweb.truth, [url], 2).stored(testweb.truth)][:3]
    data = tmp_path / "data"
    since = len(testweb.access_log.read_text(encoding="utf-8").splitlines())
    job = call(f"{scrapyd.url}/schedule.json", [
        ("project", "tianwang"), ("spider", "site"), ("seeds", ",".join(seeds)),
        ("setting", f"TIANWANG_PROXY={testweb.address}"),
        ("setting", f"TIANWANG_DATA_DIR={data}"),
        ("setting", "DOWNLOAD_DELAY=0"),
        ("setting", "CONCURRENT_REQUESTS_PER_DOMAIN=4"),
        # The overrides under test: two levels (default three), plain records (default zlib).
        ("setting", "TIANWANG_MAX_LEVELS=2"),
        ("setting", "TIANWANG_COMPRESS=False"),
    ])
    assert job["status"] == "ok", job
    finished = wait_for_job(scrapyd, job["jobid"])

    log = (scrapyd.root / "logs" / "tianwang" / "site" / f"{job['jobid']}.log").read_text()
    assert "Spider closed (finished)" in log, log[-3000:]
    assert "] INFO: crawl done (finished): stored " in log.splitlines()[-1], log[-3000:]
    assert finished["log_url"]
    records = read_tree(data)
    stored = {record["header"]["url"] for record in records}
    assert stored == reach(testweb.truth, seeds, max_levels=2).stored(testweb.truth)
    assert all("unzip-length" not in record["header"] for record in records)
    fetched = {host_of(entry["url"]) for entry in access_log(testweb, since)}
    assert fetched == {host_of(url) for url in seeds}


def test_a_failed_job_is_told_from_a_good_one_by_its_log(scrapyd: Scrapyd, tmp_path: Path) -> None:
    deploy = deploy_project(scrapyd.url, tmp_path)
    assert deploy.returncode == 0, deploy.stderr
    data = tmp_path / "data"
    cases = {
        "TIANWANG_MAX_LEVEL=2": "unknown setting TIANWANG_MAX_LEVEL: did you mean "
                                "TIANWANG_MAX_LEVELS?",
        "TIANWANG_MAX_LEVELS=x": "setting TIANWANG_MAX_LEVELS='x' is invalid: expected a whole "
                                 "number",
    }
    jobs = {}
    for setting in cases:
        job = call(f"{scrapyd.url}/schedule.json", [
            ("project", "tianwang"), ("spider", "site"), ("seeds", "http://www.a.example/"),
            ("setting", f"TIANWANG_DATA_DIR={data}"), ("setting", setting)])
        assert job["status"] == "ok", job
        jobs[setting] = job["jobid"]
    for setting, line in cases.items():
        wait_for_job(scrapyd, jobs[setting])
        log = (scrapyd.root / "logs" / "tianwang" / "site" / f"{jobs[setting]}.log").read_text()
        assert log.splitlines()[-1].endswith(f"ERROR: tianwang: error: {line}"), log[-2000:]
        assert "Traceback" not in log
