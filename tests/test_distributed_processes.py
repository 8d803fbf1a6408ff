"""`scrapy crawl site -s TIANWANG_PROCESSES=2`: one crawl as two processes of this machine.

Against the mirror web's ground truth (tests/test_pipelines_dedup.py's check): every page a
correct crawl stores is stored or listed as a copy, each body once, although the two
processes dedup apart; the access log says no url was fetched twice; the processes' stats
files say each host was fetched by one process and both worked.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
import redis

from tests.accesslog import line_count, urls_since
from tests.conftest import TestWeb, crawl_command, scrapy_crawl, start_until_stored
from tests.fetchlog import fetch_log_settings, read_fetch_log, served_beyond_sent
from tests.redis_server import RedisServer, ensure_redis_server
from tests.test_pipelines_dedup import check_against_truth
from tianwang.analysis.crawlreport import HOSTS, STATS_DIR
from tianwang.distributed.processes import combined, wait_all
from tianwang.outcome import Outcome


@pytest.fixture(scope="module", autouse=True)
def redis_server_installed() -> None:
    ensure_redis_server()  # the product starts it; a fresh machine gets Debian's package


def crawl_settings(web: TestWeb, data: Path, **extra: str) -> dict[str, str]:
    return {"TIANWANG_PROXY": web.address, "TIANWANG_DATA_DIR": str(data),
            "TIANWANG_SESSION_PARAMS": "",  # the ?sessionid= copies are deduped, as urls
            "TIANWANG_PROCESSES": "2", **extra}


def homepages(web: TestWeb) -> list[str]:
    return [url for url, page in web.truth.items() if page["kind"] == "home"]


def hosts_by_process(data: Path) -> list[set[str]]:
    files = sorted((data / STATS_DIR).glob("*.json"))
    return [set(json.loads(path.read_text())[HOSTS]) for path in files]


def test_two_processes_store_each_page_once_each_host_in_one_process(
    mirror_web: TestWeb, tmp_path: Path
) -> None:
    seeds = homepages(mirror_web)
    data = tmp_path / "data"
    start = line_count(mirror_web.access_log)
    settings = crawl_settings(mirror_web, data, **fetch_log_settings(tmp_path / "sent.txt"))
    result = scrapy_crawl("site", {"seeds": ",".join(seeds)}, settings, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    check_against_truth(data, mirror_web.truth, seeds)
    fetched = urls_since(mirror_web.access_log, start)
    # What both processes sent (one FetchLog); the server served just that (tests/fetchlog.py).
    sent = Counter(read_fetch_log(tmp_path / "sent.txt"))
    assert served_beyond_sent(fetched, sent.elements()) == {}
    # Sent twice: only 5xx pages, which Scrapy retries by design.
    twice = {url for url, n in sent.items() if n > 1}
    assert [url for url in twice if mirror_web.truth[url]["status"] < 500] == []
    first, second = hosts_by_process(data)
    assert first and second and first & second == set()
    assert first | second == {url.split("/")[2] for url in fetched}
    summary = [line for line in result.stderr.splitlines() if "[2 processes]" in line]
    assert len(summary) == 1 and "crawl done (finished): stored " in summary[0], summary


def test_a_bad_process_count_is_one_line_and_status_2(mirror_web: TestWeb, tmp_path: Path) -> None:
    settings = crawl_settings(mirror_web, tmp_path / "data", TIANWANG_PROCESSES="0")
    result = scrapy_crawl("site", {"seeds": homepages(mirror_web)[0]}, settings, cwd=tmp_path)
    assert result.returncode == 2
    assert "tianwang: error: setting TIANWANG_PROCESSES='0' is invalid" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_setting_the_processes_refuse_is_said_once(mirror_web: TestWeb, tmp_path: Path) -> None:
    settings = crawl_settings(mirror_web, tmp_path / "data", TIANWANG_BUCKETS="0")
    start = line_count(mirror_web.access_log)
    result = scrapy_crawl("site", {"seeds": homepages(mirror_web)[0]}, settings, cwd=tmp_path)
    assert result.returncode == 2
    said = result.stderr.count("tianwang: error: setting TIANWANG_BUCKETS=")
    assert said == 1, result.stderr[-3000:]
    assert "Traceback" not in result.stderr
    assert urls_since(mirror_web.access_log, start) == []


def test_feed_export_with_processes_is_refused(mirror_web: TestWeb, tmp_path: Path) -> None:
    command, env = crawl_command("site", {"seeds": homepages(mirror_web)[0]},
                                 crawl_settings(mirror_web, tmp_path / "data"))
    result = subprocess.run([*command, "-o", "items.jsonl"], cwd=tmp_path, env=env,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 2
    assert "tianwang: error: a feed export (-o, FEEDS) and TIANWANG_PROCESSES=2" in result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "items.jsonl").exists()


def test_ctrl_c_stops_both_then_the_same_command_resumes_with_nothing_lost(
    mirror_web: TestWeb, tmp_path: Path
) -> None:
    seeds = homepages(mirror_web)
    data = tmp_path / "data"
    settings = crawl_settings(mirror_web, data, JOBDIR=str(tmp_path / "job"),
                              DOWNLOAD_DELAY="0.2", CONCURRENT_REQUESTS_PER_DOMAIN="1")
    command, env = crawl_command("site", {"seeds": ",".join(seeds)}, settings)
    log = tmp_path / "first.log"
    supervisor = start_until_stored(command, env, tmp_path, data, 50_000, log)
    supervisor.send_signal(signal.SIGINT)  # what Ctrl-C sends
    assert supervisor.wait(timeout=120) == 0, log.read_text()[-3000:]
    first = log.read_text()
    assert "SIGINT: passed on to the 2 processes" in first
    assert first.count("Received SIGINT, shutting down gracefully") == 2, first[-3000:]
    assert "[2 processes]" in first and "crawl done (shutdown)" in first
    resumed = scrapy_crawl("site", {"seeds": ",".join(seeds)}, settings, cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    check_against_truth(data, mirror_web.truth, seeds)


def test_a_killed_supervisor_leaves_no_process_behind(mirror_web: TestWeb, tmp_path: Path) -> None:
    settings = crawl_settings(mirror_web, tmp_path / "data", DOWNLOAD_DELAY="1",
                              CONCURRENT_REQUESTS_PER_DOMAIN="1")
    command, env = crawl_command("site", {"seeds": ",".join(homepages(mirror_web))}, settings)
    supervisor = subprocess.Popen(command, cwd=tmp_path, env=env, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while len(children_of(supervisor.pid)) < 3:  # redis-server and two crawl processes
        assert supervisor.poll() is None and time.monotonic() < deadline
        time.sleep(0.05)
    children = children_of(supervisor.pid)
    supervisor.send_signal(signal.SIGKILL)
    supervisor.wait()
    deadline = time.monotonic() + 60
    while left := [pid for pid in children if Path(f"/proc/{pid}").exists() and not zombie(pid)]:
        assert time.monotonic() < deadline, left
        time.sleep(0.1)


def children_of(pid: int) -> list[int]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return False


def test_the_crawl_as_a_whole_sums_the_counts_and_takes_the_worst_end() -> None:
    stored = {"finish_reason": "finished", "tianwang/storage/records": 3,
              "tianwang/storage/hosts": 1, "downloader/request_count": 4}
    idle = {"finish_reason": "finished", "tianwang/storage/records": 0,
            "tianwang/storage/hosts": 0, "downloader/request_count": 0}
    assert combined([stored, idle]) == Outcome(
        0, "crawl done (finished): stored 3, kept 0 already stored, refused 0, failed 0")
    stopped = {**idle, "finish_reason": "shutdown"}
    assert combined([stored, stopped]).line.startswith("crawl done (shutdown): stored 3")
    broken = {**idle, "finish_reason": "cancelled"}
    assert combined([stored, broken]).status == 1
    nothing = combined([idle, idle])  # a storing crawl that stored nothing, anywhere
    assert nothing.status == 0 and nothing.line.startswith("nothing to do")


def test_a_process_failing_before_all_joined_stops_the_others() -> None:
    failing = subprocess.Popen([sys.executable, "-c", "import sys; sys.exit(1)"])
    waiting = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    started = time.monotonic()
    statuses = wait_all([failing, waiting], short=lambda: True)
    assert statuses[0] == 1 and statuses[1] == -signal.SIGTERM
    assert time.monotonic() - started < 30


def test_a_process_failing_once_all_joined_leaves_the_others_at_work() -> None:
    failing = subprocess.Popen([sys.executable, "-c", "import sys; sys.exit(1)"])
    working = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(1)"])
    assert wait_all([failing, working], short=lambda: False) == [1, 0]


def test_a_refusal_stops_the_others_whatever_joined() -> None:
    refusing = subprocess.Popen([sys.executable, "-c", "import sys; sys.exit(2)"])
    waiting = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    assert wait_all([refusing, waiting], short=lambda: False) == [2, -signal.SIGTERM]


def test_processes_without_seeds_are_refused_as_one_process_is(
    mirror_web: TestWeb, tmp_path: Path
) -> None:
    """On their own redis-server nobody else can seed them: no waiting for seeds for ever."""
    result = scrapy_crawl("site", {}, crawl_settings(mirror_web, tmp_path / "data"),
                          cwd=tmp_path, timeout=120)
    assert result.returncode == 2, result.stderr[-3000:]
    assert result.stderr.count("tianwang: error: no seeds") == 1


def test_without_redis_server_on_path_the_crawl_says_so_in_one_line(
    mirror_web: TestWeb, tmp_path: Path
) -> None:
    command, env = crawl_command("site", {"seeds": homepages(mirror_web)[0]},
                                 crawl_settings(mirror_web, tmp_path / "data"))
    env["PATH"] = str(tmp_path)  # python is run by its full path; no redis-server here
    result = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 2
    assert "tianwang: error: TIANWANG_PROCESSES above 1 needs redis-server" in result.stderr
    assert "Traceback" not in result.stderr


def command_lines() -> list[str]:
    """Every process's command line, as `ps` shows them to any user."""
    lines = []
    for path in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            lines.append(path.read_bytes().replace(b"\0", b" ").decode("utf-8", "replace"))
        except OSError:
            continue
    return lines


def test_the_redis_password_shows_in_no_command_line_and_no_log(
    mirror_web: TestWeb, tmp_path: Path
) -> None:
    """Two processes on a redis-server that asks a password, the url with it given in the
    project's settings: while they crawl no command line (the children's included, which
    name the url) holds it, nor does anything the crawl logs or writes beside its records."""
    secret = "s3cret-Pa55"
    server = RedisServer(tmp_path / "redis", password=secret).start()
    try:
        (tmp_path / "secretsettings.py").write_text(
            f"from tianwang.settings import *  # noqa\nTIANWANG_REDIS_URL = {server.url!r}\n")
        data = tmp_path / "data"
        command, env = crawl_command("site", {"seeds": ",".join(homepages(mirror_web))},
                                     crawl_settings(mirror_web, data, DOWNLOAD_DELAY="0.05"))
        env["SCRAPY_SETTINGS_MODULE"] = "secretsettings"
        env["PYTHONPATH"] = f"{tmp_path}:{env['PYTHONPATH']}"
        log = tmp_path / "crawl.log"
        with open(log, "wb") as out:
            crawl = subprocess.Popen(command, cwd=tmp_path, env=env, stdout=out, stderr=out)
        children_seen = False
        while crawl.poll() is None:
            lines = command_lines()
            assert not [line for line in lines if secret in line]
            bare = f"TIANWANG_REDIS_URL=redis://127.0.0.1:{server.port}/0"
            children_seen |= any(bare in line for line in lines)  # the url, less its password
            time.sleep(0.2)
        said = log.read_text(errors="replace")
        assert crawl.returncode == 0, said[-3000:]
        assert children_seen and "[2 processes]" in said and secret not in said
        assert redis.Redis.from_url(server.url).exists("tianwang:{site}:seeded")  # it was used
        for path in data.rglob("*"):
            if path.is_file() and path.suffix in (".json", ".tsv", ".txt", ".log"):
                assert secret not in path.read_text(errors="replace"), path
    finally:
        server.stop()
