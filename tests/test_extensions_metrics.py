"""The live view: a real Prometheus server scrapes a real crawl of the test web while it runs,
and the counters it holds at the end equal the crawl's stats file and its records."""

from __future__ import annotations

import json
import re
import selectors
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from tests.conftest import ROOT, TestWeb, crawl_command, scrapy_crawl
from tests.gate_proxy import gate, open_gate
from tests.prometheus import Prometheus
from tests.redis_server import free_port
from tianwang.extensions.metrics import exposition
from tianwang.formats.store import iter_tree

Series = tuple[str, tuple[tuple[str, str], ...]]
# The series that are the stats file's counters (the others are a rate, a start time, ...).
FROM_STATS = ("tianwang_pages_stored_total", "tianwang_stored_bytes_total",
              "tianwang_requests_total", "tianwang_responses_total",
              "tianwang_responses_by_status_total", "tianwang_refused_total",
              "tianwang_failed_total", "tianwang_kept_already_stored_total",
              "tianwang_pending_requests", "tianwang_pending_requests_by_weight")


def stats_series(stats: dict) -> dict[Series, float]:
    """What the live view must show, from the stats file's keys (named as the crawl's closing
    line names them: robots.txt, the filters' and failures' reasons)."""
    expected: dict[Series, float] = {
        ("tianwang_pages_stored_total", ()): stats.get("tianwang/storage/records", 0),
        ("tianwang_stored_bytes_total", ()): stats.get("tianwang/storage/body_bytes", 0),
        ("tianwang_requests_total", ()): stats.get("downloader/request_count", 0),
        ("tianwang_responses_total", ()): stats.get("response_received_count", 0),
        ("tianwang_pending_requests", ()): stats.get("tianwang/frontier/pending", 0),
    }
    prefixes = {
        "downloader/response_status_count/": ("tianwang_responses_by_status_total", "status"),
        "tianwang/frontier/pending/w": ("tianwang_pending_requests_by_weight", "weight"),
        "tianwang/filter/": ("tianwang_refused_total", "reason"),
        "tianwang/error/": ("tianwang_failed_total", "reason"),
        "tianwang/dedup/": ("tianwang_kept_already_stored_total", "how"),
    }
    for key, value in stats.items():
        refusal = {"robotstxt/forbidden": "robots.txt", "tianwang/partition/refused": "refused",
                   "tianwang/robots/unavailable_dropped": "unavailable_dropped"}.get(key)
        if refusal:
            expected[("tianwang_refused_total", (("reason", refusal),))] = value
        for prefix, (name, label) in prefixes.items():
            if key.startswith(prefix) and not key.endswith("_bytes"):
                if prefix == "tianwang/dedup/" and key not in ("tianwang/dedup/duplicates",
                                                               "tianwang/dedup/refetched"):
                    continue
                expected[(name, ((label, key[len(prefix):]),))] = value
    return expected


@pytest.fixture(scope="module")
def scraped(testweb: TestWeb, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """A crawl scraped by Prometheus every second: a sample taken while it ran, and the
    samples of its last scrape, with its stats file, records and log."""
    workdir = tmp_path_factory.mktemp("liveview")
    homes = sorted(url for url, page in testweb.truth.items() if page["kind"] == "home"
                   and page["status"] == 200 and page["robots_allowed"])
    held = homes[4].split("/")[2]  # a host whose requests wait until the test says
    dropped = homes[5].split("/")[2]  # a host whose connections are cut: failures
    port = free_port()
    prometheus = Prometheus(workdir / "prometheus", [f"127.0.0.1:{port}"]).start()
    try:
        with gate(testweb.address, held, dropped) as gated:
            settings = {"TIANWANG_DATA_DIR": str(workdir / "data"),
                        "TIANWANG_PROXY": gated.address, "TIANWANG_MAX_LEVELS": "2",
                        "TIANWANG_MAX_HOST_PAGES": "6",  # refusals to count
                        "TIANWANG_METRICS_PORT": str(port), "TIANWANG_METRICS_LINGER": "300"}
            seeds = ",".join(homes[:6])
            command, env = crawl_command("site", {"seeds": seeds}, settings)
            with open(workdir / "crawl.log", "w") as log:
                crawl = subprocess.Popen(command, cwd=workdir, env=env, stdout=log, stderr=log)
                try:
                    _wait_line(gated, "held")
                    # A scrape of the crawl as it runs: it cannot end while the gate holds.
                    during = prometheus.wait_for("tianwang_pages_stored_total", lambda v: v > 0)
                    running = prometheus.query("tianwang_crawl_running", at=during)
                    open_gate(gated)
                    status = crawl.wait(timeout=600)
                finally:
                    if crawl.poll() is None:
                        crawl.kill()
                        crawl.wait()
        # The crawl ended after its final counters were scraped: the first sample saying it
        # no longer runs is that scrape's, as are all the samples taken at that time.
        end = prometheus.wait_for("tianwang_crawl_running", lambda v: v == 0, timeout=60)
        final = prometheus.query('{__name__=~"tianwang_.+"}', at=end)
        # every query of the docs' dashboard, as Prometheus answers it
        answers = {query: prometheus.query(query, at=end) for _panel, query in docs_queries()}
        during_stored = prometheus.query("tianwang_pages_stored_total", at=during)
        during_hosts = prometheus.query("tianwang_pending_hosts", at=during)
    finally:
        prometheus.stop()
    (stats_file,) = (workdir / "data" / "stats").glob("*.json")
    return {"status": status, "log": (workdir / "crawl.log").read_text(),
            "running": running, "during_stored": during_stored, "during_hosts": during_hosts,
            "answers": answers,
            "final": {_series(one["metric"]): float(one["value"][1]) for one in final},
            "stats": json.loads(stats_file.read_text()),
            "records": [record.url for _path, record in iter_tree(workdir / "data")]}


def docs_page() -> str:
    return (ROOT / "docs" / "live-view.md").read_text(encoding="utf-8")


def docs_queries() -> list[tuple[str, str]]:
    """(panel, PromQL) of the docs' dashboard table."""
    table = docs_page().split("## A dashboard's queries", 1)[1]
    return re.findall(r"^\| ([^|`]+?) \| `([^`]+)` \|$", table, re.M)


def _wait_line(proc: subprocess.Popen[str], wanted: str, timeout: float = 300) -> None:
    with selectors.DefaultSelector() as selector:
        selector.register(proc.stdout, selectors.EVENT_READ)
        while True:
            assert selector.select(timeout=timeout), f"no {wanted!r} in {timeout} s"
            line = proc.stdout.readline()
            assert line, f"the gate ended before {wanted!r}"
            if line.strip() == wanted:
                return


def _series(metric: dict[str, str]) -> Series:
    labels = tuple(sorted((k, v) for k, v in metric.items()
                          if k not in ("__name__", "job", "instance")))
    return metric["__name__"], labels


def test_prometheus_scraped_the_crawl_while_it_ran(scraped: dict) -> None:
    assert scraped["status"] == 0, scraped["log"][-3000:]
    assert [float(one["value"][1]) for one in scraped["running"]] == [1.0]
    (stored,) = scraped["during_stored"]
    assert 0 < float(stored["value"][1]) <= len(scraped["records"])
    # the scheduler answered for its queue (once closed, it no longer does)
    assert len(scraped["during_hosts"]) == 1


def test_the_last_scrape_equals_the_stats_file_and_the_records(scraped: dict) -> None:
    final, stats = scraped["final"], scraped["stats"]
    shown = {series: value for series, value in final.items() if series[0] in FROM_STATS}
    assert shown == stats_series(stats)
    assert final[("tianwang_pages_stored_total", ())] == len(scraped["records"]) > 0
    # What the crawl met, counted: refusals by the host budget, the connections cut.
    reasons = {(name, labels[0][1]) for name, labels in shown if labels}
    assert ("tianwang_refused_total", "host_budget") in reasons, reasons
    assert any(name == "tianwang_failed_total" for name, _reason in reasons), reasons
    assert final[("tianwang_crawl_running", ())] == 0
    assert "live view: final counters scraped" in scraped["log"]


def _unordered(series: list[dict[Series, float]]) -> list[list[tuple[Series, float]]]:
    return sorted(sorted((key, float(value)) for key, value in one.items()) for one in series)


def _two_free_ports() -> int:
    """A port P such that P and P + 1 are free on 127.0.0.1 (for TIANWANG_PROCESSES=2)."""
    import socket

    while True:
        port = free_port()
        with socket.socket() as next_one:
            try:
                next_one.bind(("127.0.0.1", port + 1))
            except OSError:
                continue
        return port


def test_each_process_of_a_crawl_serves_its_own_counters(testweb: TestWeb,
                                                         tmp_path: Path) -> None:
    from tests.redis_server import ensure_redis_server

    ensure_redis_server()  # the crawl's processes start one of their own
    homes = sorted(url for url, page in testweb.truth.items() if page["kind"] == "home")[:8]
    port = _two_free_ports()
    targets = [f"127.0.0.1:{port}", f"127.0.0.1:{port + 1}"]
    prometheus = Prometheus(tmp_path / "prometheus", targets).start()
    try:
        command, env = crawl_command(
            "site", {"seeds": ",".join(homes)},
            {"TIANWANG_DATA_DIR": str(tmp_path / "data"), "TIANWANG_PROXY": testweb.address,
             "TIANWANG_MAX_LEVELS": "2", "TIANWANG_PROCESSES": "2",
             "TIANWANG_METRICS_PORT": str(port), "TIANWANG_METRICS_LINGER": "300"})
        with open(tmp_path / "crawl.log", "w") as log:
            status = subprocess.run(command, cwd=tmp_path, env=env, stdout=log, stderr=log,
                                    timeout=600).returncode
        assert status == 0, (tmp_path / "crawl.log").read_text()[-3000:]
        finals = []
        for target in targets:  # each process's last scrape, as its own
            end = prometheus.wait_for(f'tianwang_crawl_running{{instance="{target}"}}',
                                      lambda v: v == 0, timeout=60)
            final = prometheus.query(f'{{__name__=~"tianwang_.+",instance="{target}"}}', at=end)
            finals.append({_series(one["metric"]): float(one["value"][1]) for one in final})
    finally:
        prometheus.stop()
    files = sorted((tmp_path / "data" / "stats").glob("*.json"))
    expected = [stats_series(json.loads(path.read_text())) for path in files]
    shown = [{k: v for k, v in final.items() if k[0] in FROM_STATS} for final in finals]
    assert len(files) == 2 and _unordered(shown) == _unordered(expected)
    assert all(final[("tianwang_pages_stored_total", ())] > 0 for final in finals)
    for final in finals:  # a node of a shared crawl: its round trips to Redis
        assert final[("tianwang_redis_round_trips_total", (("of", "frontier"),))] > 0
        assert final[("tianwang_redis_round_trips_total", (("of", "dedup"),))] > 0


def test_the_port_is_off_unless_set_and_a_port_taken_is_one_line(tmp_path: Path) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = scrapy_crawl("site", {"seeds": "http://www.a.example/"},
                              {"TIANWANG_DATA_DIR": str(tmp_path / "data"),
                               "TIANWANG_METRICS_PORT": str(port)}, cwd=tmp_path)
    assert result.returncode == 2, result.stderr[-2000:]
    last = result.stderr.rstrip("\n").splitlines()[-1]
    assert last.startswith(f"tianwang: error: setting TIANWANG_METRICS_PORT={port} is invalid: "
                           "expected a port free on 127.0.0.1 ("), last


def test_the_page_is_the_text_format_with_label_values_escaped() -> None:
    stats = {"tianwang/storage/records": 3, "tianwang/error/Bad\"Thing\\x": 2,
             "robotstxt/forbidden": 4, "tianwang/frontier/pending/w5": 1,
             "tianwang/frontier/pending/w-2": 0, "tianwang/redis/round_trips/frontier": 7}
    page = exposition(stats, Counter({"b.cn": 2, "a.cn": 2, "c.cn": 5, "d.cn": 0}), 2, 1.5,
                      True, 1700000000.0)
    lines = page.splitlines()
    assert "tianwang_pages_stored_total 3" in lines
    assert 'tianwang_failed_total{reason="Bad\\"Thing\\\\x"} 2' in lines
    assert 'tianwang_refused_total{reason="robots.txt"} 4' in lines
    assert [line for line in lines if line.startswith("tianwang_pending_requests_by_weight")] \
        == ['tianwang_pending_requests_by_weight{weight="5"} 1',
            'tianwang_pending_requests_by_weight{weight="-2"} 0']
    # the hosts with most pending, ties by name; how many hosts have any
    assert [line for line in lines if line.startswith("tianwang_pending_requests_by_host")] \
        == ['tianwang_pending_requests_by_host{host="c.cn"} 5',
            'tianwang_pending_requests_by_host{host="a.cn"} 2']
    assert "tianwang_pending_hosts 3" in lines
    assert 'tianwang_redis_round_trips_total{of="frontier"} 7' in lines
    assert "tianwang_pages_per_second 1.5" in lines and "tianwang_crawl_running 1" in lines
    # every sample line follows its family's HELP and TYPE
    names = [line.split()[2] for line in lines if line.startswith("# TYPE")]
    assert all(line.split("{")[0].split()[0] in names for line in lines
               if not line.startswith("#"))


def test_the_docs_scrape_configuration_passes_promtool(tmp_path: Path) -> None:
    from tests.prometheus import ensure_prometheus

    ensure_prometheus()  # promtool comes in the same package
    (config,) = re.findall(r"```yaml\n(.+?)```", docs_page(), re.S)
    path = tmp_path / "prometheus.yml"
    path.write_text(config)
    check = subprocess.run([shutil.which("promtool") or "promtool", "check", "config",
                            str(path)], capture_output=True, text=True, timeout=120)
    assert check.returncode == 0, check.stdout + check.stderr
    assert "SUCCESS" in check.stdout + check.stderr


def test_prometheus_answers_every_query_of_the_docs_dashboard(scraped: dict) -> None:
    queries = docs_queries()
    assert len(queries) >= 12
    answers = scraped["answers"]
    assert set(answers) == {query for _panel, query in queries}
    # the crawl's own series are there at its end (the rates over its last minutes)
    for query in ("sum(rate(tianwang_pages_stored_total[5m]))",
                  "sum(increase(tianwang_pages_stored_total[1d]))",
                  "sum by (reason) (rate(tianwang_refused_total[5m]))",
                  "sum by (reason) (rate(tianwang_failed_total[5m]))"):
        assert answers[query], query
    assert float(answers["sum(rate(tianwang_pages_stored_total[5m]))"][0]["value"][1]) > 0
