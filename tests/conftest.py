"""Fixtures: the test web in a subprocess, and real `scrapy crawl` runs through it."""

from __future__ import annotations

import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import settings as hypothesis_settings

from tests.integration import is_integration, unit_guard
from tests.redis_cluster import redis_cluster  # noqa: F401 - a Redis Cluster (issue 22)
from tests.redis_server import redis_server  # noqa: F401 - a session redis-server (issue 7)
from tests.truth import load_truth
from tianwang.testweb.launcher import TestWebProcess

ROOT = Path(__file__).resolve().parent.parent

# Hypothesis's 200 ms deadline per example is a wall-clock limit: on a loaded machine a test
# of correct code fails it. Its examples are judged by their assertions only.
hypothesis_settings.register_profile("tianwang", deadline=None)
hypothesis_settings.load_profile("tianwang")

# A suite started in the background by a non-interactive shell (`nohup ... &`) has SIGINT
# ignored, and so would every command it starts (an ignored signal is inherited through
# exec): the tests that stop a command with Ctrl-C would wait for it for ever. A handler of
# Python's own is reset to the default in a child, so the commands get Ctrl-C as a terminal
# gives it. Here, at import, so that each xdist worker does it too.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


# The files that take a minute or so of a worker (--junitxml's times), started first. Under
# --dist loadfile the suite ends when the last file a worker took ends: a long one taken
# last (alphabetical order put test_verticals there) leaves the other worker idle.
LONGEST_FIRST = (
    "test_distributed_crawl", "test_distributed_faults", "test_spiders_site",
    "test_middlewares_hostfilter", "test_extensions_closing", "test_verticals",
    "test_bench_realpages", "test_readme", "test_frontier_scheduler", "test_middlewares_robots",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark the tests that start processes `integration` (tests/integration.py), and run
    the longest files first (each file's tests in their order)."""
    for item in items:
        if is_integration(item):
            item.add_marker(pytest.mark.integration)
    items.sort(key=_file_turn)


def _file_turn(item: pytest.Item) -> int:
    name = item.path.stem
    return LONGEST_FIRST.index(name) if name in LONGEST_FIRST else len(LONGEST_FIRST)


@pytest.fixture(autouse=True)
def _unit_tests_start_no_process(request: pytest.FixtureRequest,
                                 monkeypatch: pytest.MonkeyPatch) -> None:
    unit_guard(request, monkeypatch)


# The main test web: 200 hosts, as the Foundation issue asks.
WEB_SEED = 11
WEB_HOSTS = 200

# Fast, local settings for crawling the test web (the project defaults are for the real web).
TEST_SETTINGS = {
    "DOWNLOAD_DELAY": "0",
    "CONCURRENT_REQUESTS": "32",
    "CONCURRENT_REQUESTS_PER_DOMAIN": "4",
    "LOG_LEVEL": "INFO",
}


@dataclass
class TestWeb:
    __test__ = False
    address: str
    access_log: Path
    truth: dict[str, dict]
    seed: int
    hosts: int


@pytest.fixture(scope="session")
def testweb(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestWeb]:
    log = tmp_path_factory.mktemp("testweb") / "access.jsonl"
    with TestWebProcess(WEB_SEED, WEB_HOSTS, access_log=log) as web:
        yield TestWeb(web.address, log, load_truth(WEB_SEED, WEB_HOSTS), WEB_SEED, WEB_HOSTS)


# A small web with mirrored content (issue 5), crawled whole in seconds.
MIRROR_SEED, MIRROR_HOSTS, MIRROR_PAGES = 7, 30, 40


@pytest.fixture(scope="session")
def mirror_web(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestWeb]:
    yield from _flagged_web(tmp_path_factory, "--mirrors", MIRROR_SEED, MIRROR_HOSTS, MIRROR_PAGES)


def _flagged_web(tmp_path_factory: pytest.TempPathFactory, flag: str, seed: int, hosts: int,
                 pages: int) -> Iterator[TestWeb]:
    """A test web process with one of its optional parts (--mirrors, --changing) on."""
    log = tmp_path_factory.mktemp(flag.strip("-") + "web") / "access.jsonl"
    with TestWebProcess(seed, hosts, pages, access_log=log, extra_args=(flag,)) as web:
        yield TestWeb(web.address, log, load_truth(seed, hosts, pages, flag), seed, hosts)


@pytest.fixture(scope="session")
def mirror_crawl(mirror_web: TestWeb, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """One default crawl of every homepage of the mirror web: its data dir and its log."""
    workdir = tmp_path_factory.mktemp("mirrorcrawl")
    homepages = ",".join(url for url, page in mirror_web.truth.items() if page["kind"] == "home")
    settings = {"TIANWANG_PROXY": mirror_web.address, "TIANWANG_DATA_DIR": str(workdir / "data"),
                # The copies under ?sessionid= are what this crawl dedups: keep them urls.
                "TIANWANG_SESSION_PARAMS": ""}
    result = scrapy_crawl("site", {"seeds": homepages}, settings, cwd=workdir)
    assert result.returncode == 0, result.stderr[-3000:]
    return {"data": workdir / "data", "stderr": result.stderr, "seeds": homepages.split(",")}


@pytest.fixture(scope="session")
def junk_crawls(tmp_path_factory: pytest.TempPathFactory):
    """Crawls of a junk-enabled test web, filters on and off (tests/filters_crawl.py)."""
    from tests.filters_crawl import run_junk_crawls

    return run_junk_crawls(tmp_path_factory.mktemp("junk"))


@pytest.fixture(scope="session")
def hostile_web_crawl(tmp_path_factory: pytest.TempPathFactory):
    """One crawl of every host of the raw hostile web: robots.txt cases, protocol faults,
    session ids, text that turns binary, local names (tests/hostile_web.py)."""
    from tests import hostile_web
    from tests.hostile_web_crawl import run_crawl

    seeds = [f"http://{host}/" for host in hostile_web.SEED_HOSTS]
    settings = {"TIANWANG_STAY_IN_HOST": "False",
                # An unreadable robots.txt: asked twice, half a second apart, then given up.
                "TIANWANG_ROBOTS_RETRY_DELAY": "0.5", "TIANWANG_ROBOTS_RETRIES": "1"}
    return run_crawl(tmp_path_factory.mktemp("hostileweb"), seeds, settings)


def crawl_command(
    spider: str, args: dict[str, str], settings: dict[str, str]
) -> tuple[list[str], dict[str, str]]:
    """The command line and environment of `scrapy crawl SPIDER -a k=v -s K=V`."""
    command = [sys.executable, "-m", "scrapy", "crawl", spider]
    for key, value in args.items():
        command += ["-a", f"{key}={value}"]
    for key, value in {**TEST_SETTINGS, **settings}.items():
        command += ["-s", f"{key}={value}"]
    env = {**os.environ, "SCRAPY_SETTINGS_MODULE": "tianwang.settings", "PYTHONPATH": str(ROOT)}
    env.pop("http_proxy", None)
    return command, env


def scrapy_crawl(
    spider: str,
    args: dict[str, str],
    settings: dict[str, str],
    cwd: Path,
    timeout: float = 400,
) -> subprocess.CompletedProcess[str]:
    """Run a crawl as a user runs it, in its own process, and wait for it."""
    command, env = crawl_command(spider, args, settings)
    return subprocess.run(
        command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
    )


def stats_of(stderr: str) -> dict[str, int]:
    """The counters of a crawl's final stats dump (`'name': number` lines of Scrapy's
    "Dumping Scrapy stats"), as a user reads them in its log."""
    dump = stderr.split("Dumping Scrapy stats")[-1]
    return {name: int(value) for name, value in re.findall(r"'([a-z_/0-9]+)': (\d+)[,}]", dump)}


def start_until_stored(command: list[str], env: dict[str, str], cwd: Path, data: Path,
                       size: int, log: Path) -> subprocess.Popen[bytes]:
    """Start a crawl (its output to `log`) and return it, still running, once the record
    files under `data` hold `size` bytes: "midway", for a kill or a Ctrl-C."""
    with open(log, "wb") as out:
        proc = subprocess.Popen(command, cwd=cwd, env=env, stdout=out, stderr=out)
    deadline = time.monotonic() + 120
    while sum(f.stat().st_size for f in data.glob("data_*/*/page.dat")) < size:
        ended = proc.poll() is not None or time.monotonic() > deadline
        assert not ended, f"crawl ended before {size} bytes were stored: {log.read_text()[-2000:]}"
        time.sleep(0.02)
    return proc


def tianwang_cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "tianwang.cli", *args]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def project_crawler(**overrides: object):
    """A Crawler with the project's settings (tianwang/settings.py) plus overrides."""
    from scrapy.utils.test import get_crawler

    import tianwang.default_settings as stack
    import tianwang.settings as project

    settings = {name: getattr(project, name) for name in dir(project) if name.isupper()}
    # The component lists as the project listed them before the add-on's defaults had their
    # own module: by path, at project priority (the add-on keeps them and adds nothing).
    components = ("DOWNLOADER_MIDDLEWARES", "ITEM_PIPELINES", "EXTENSIONS", "SPIDER_MIDDLEWARES")
    settings.update({name: getattr(stack, name) for name in components})
    return get_crawler(settings_dict={**settings, **overrides})


# A small web whose pages change over a clock a control request moves (issue 6).
CHANGING_SEED, CHANGING_HOSTS, CHANGING_PAGES = 13, 12, 60


@pytest.fixture(scope="module")
def changing_web(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestWeb]:
    """Module-scoped: each test module moves the clock its own way, from the start."""
    yield from _flagged_web(tmp_path_factory, "--changing", CHANGING_SEED, CHANGING_HOSTS,
                            CHANGING_PAGES)


def advance_clock(web: TestWeb, seconds: float) -> float:
    """Move a --changing test web's clock forward; its new time (epoch seconds)."""
    import json
    import urllib.request

    with urllib.request.urlopen(f"{web.address}/_testweb/clock?advance={seconds}") as answer:
        return json.load(answer)["now"]


# --- a recorded link graph served as a test web (issue 8: `testweb serve --graph DIR`) ---


def write_graph(directory: Path, urls: list[str], links: list[tuple[int, int]]) -> Path:
    """A recorded graph in the UCI format: pages.tsv `id url host`, edges.tsv `src dst`."""
    from urllib.parse import urlsplit

    directory.mkdir(parents=True, exist_ok=True)
    pages = "".join(f"{i}\t{url}\t{urlsplit(url).hostname}\n" for i, url in enumerate(urls))
    (directory / "pages.tsv").write_text("id\turl\thost\n" + pages, encoding="utf-8")
    edges = "".join(f"{source}\t{target}\n" for source, target in links)
    (directory / "edges.tsv").write_text("src_id\tdst_id\n" + edges, encoding="utf-8")
    return directory


def serve_graph(directory: Path, access_log: Path) -> Iterator[TestWeb]:
    """Serve a recorded graph through the test web proxy (a subprocess, as every test web);
    its truth is every page of the graph, a 200 text/html page with its recorded links."""
    from tianwang.testweb.graph import GraphWeb

    truth = {record["url"]: record for record in GraphWeb.from_dir(directory).truth()}
    hosts = len({record["host"] for record in truth.values()})
    with TestWebProcess.for_graph(directory, access_log=access_log) as web:
        yield TestWeb(web.address, access_log, truth, 0, hosts)


# --- issue 9: a small web with mirrors, crawled with the site spider's defaults, deduped ---


@pytest.fixture(scope="session")
def collection_crawl(tmp_path_factory: pytest.TempPathFactory):
    """The crawl and global dedup the sample and stats tests share (tests/collection_crawl.py)."""
    from tests.collection_crawl import run_collection_crawl

    return run_collection_crawl(tmp_path_factory.mktemp("collection"))


# --- the collection host list (issue 9: `testweb collection`, `testweb serve --collection`) ---
COLLECTION_SEED, COLLECTION_HOSTS, COLLECTION_PAGES = 21, 40, 80


@dataclass
class CollectionTestWeb:
    """The served collection web, its url lists, spam list and per-site truth."""

    __test__ = False
    address: str
    access_log: Path
    files: Path  # urls_<k>.txt, truth.jsonl, spamlist.txt as `testweb collection` wrote them
    truth: dict[str, dict]  # site (`http://host:port/`) -> its truth record

    def url_lists(self) -> list[Path]:
        return sorted(self.files.glob("urls_*.txt"))


@pytest.fixture(scope="session")
def collection_web(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CollectionTestWeb]:
    import json

    files = tmp_path_factory.mktemp("collection")
    sizes = ["--seed", str(COLLECTION_SEED), "--hosts", str(COLLECTION_HOSTS),
             "--max-pages", str(COLLECTION_PAGES)]
    made = tianwang_cli("testweb", "collection", *sizes, "--out", str(files))
    assert made.returncode == 0, made.stderr
    lines = (files / "truth.jsonl").read_text(encoding="utf-8").splitlines()
    truth = {record["site"]: record for record in map(json.loads, lines)}
    log = files / "access.jsonl"
    with TestWebProcess(COLLECTION_SEED, COLLECTION_HOSTS, COLLECTION_PAGES, access_log=log,
                        extra_args=("--collection",)) as web:
        yield CollectionTestWeb(web.address, log, files, truth)


# --- issue 17: the protocol hosts (`serve --protocols`), crawled with sitemaps on and off ---


@pytest.fixture(scope="session")
def protocols_crawls(tmp_path_factory: pytest.TempPathFactory):
    """Two crawls of the protocol hosts, each through its own server (tests/protocols_crawl.py)."""
    from tests.protocols_crawl import run_protocols_crawls

    return run_protocols_crawls(tmp_path_factory.mktemp("protocols"))


# --- issue 16: the hostile hosts of the junk web ---


@pytest.fixture(scope="session")
def hostile_crawl(tmp_path_factory: pytest.TempPathFactory):
    """One crawl of the junk web's hostile hosts: bombs, fake text, bad redirects, traps
    (issue 16, tests/hostile_crawl.py)."""
    from tests.hostile_crawl import run_hostile_crawl

    return run_hostile_crawl(tmp_path_factory.mktemp("hostile"))


def lines_until(proc: subprocess.Popen[str], last: str, timeout: float = 300) -> list[str]:
    """A running command's stdout lines up to the line `last`; the command ending first fails
    with its stderr. Read by a thread: select() on the pipe misses lines that a readline()
    already took into the text file's buffer (all of them, when they came in one write)."""
    lines: list[str] = []
    arrived: queue.Queue[str] = queue.Queue()
    assert proc.stdout is not None
    threading.Thread(target=lambda: [arrived.put(line) for line in iter(
        proc.stdout.readline, "")] + [arrived.put("")], daemon=True).start()
    while last not in lines:
        try:
            line = arrived.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"no output in {timeout:.0f} s: {lines}") from None
        assert line, f"it ended: {proc.wait()} {proc.stderr.read()[-2000:]}"
        lines.append(line.rstrip("\n"))
    return lines
