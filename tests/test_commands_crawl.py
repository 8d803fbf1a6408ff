"""`scrapy crawl site` as a user runs it: a refusal at start is one line and status 2 with no
traceback; the exit status and the last line say whether the crawl did its job."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from tests.conftest import TestWeb, scrapy_crawl


def _refused(tmp_path: Path, seeds: str, **settings: str) -> str:
    result = scrapy_crawl("site", {"seeds": seeds},
                          {"TIANWANG_DATA_DIR": str(tmp_path / "data"), **settings}, cwd=tmp_path)
    output = result.stdout + result.stderr
    assert result.returncode == 2, output[-2000:]
    assert "Traceback" not in output
    assert "never retrieved" not in output
    assert not (tmp_path / "data").exists() or not any((tmp_path / "data").rglob("page.dat*"))
    return result.stderr.rstrip("\n")


@pytest.mark.parametrize(("settings", "line"), [
    ({"TIANWANG_MAX_LEVEL": "1"},
     "tianwang: error: unknown setting TIANWANG_MAX_LEVEL: did you mean TIANWANG_MAX_LEVELS?"),
    ({"DOWNLOAD_DELAYY": "0"},
     "tianwang: error: unknown setting DOWNLOAD_DELAYY: did you mean DOWNLOAD_DELAY? (if "
     "DOWNLOAD_DELAYY is a setting of another component, list it in TIANWANG_EXTRA_SETTINGS)"),
    ({"tianwang_max_levels": "1"},
     "tianwang: error: unknown setting tianwang_max_levels: did you mean TIANWANG_MAX_LEVELS? "
     "(setting names are upper case)"),
    ({"TIANWANG_MAX_LEVELS": "abc"},
     "tianwang: error: setting TIANWANG_MAX_LEVELS='abc' is invalid: expected a whole number"),
    ({"TIANWANG_STORE_TYPES": "abc"},
     "tianwang: error: setting TIANWANG_STORE_TYPES='abc' is invalid: expected media types like "
     "text/html, not 'abc'"),
    ({"TIANWANG_ALLOWED_DOMAINS": "abc"},
     "tianwang: error: setting TIANWANG_ALLOWED_DOMAINS=['abc'] is invalid: expected domains "
     "holding at least one seed (none of the 1 seeds is in them, e.g. www.a.example)"),
    ({"TIANWANG_GC_THRESHOLD": "0"},
     "tianwang: error: setting TIANWANG_GC_THRESHOLD='0' is invalid: expected one to three "
     "whole numbers >= 0, the first above 0"),
    ({"TIANWANG_VERTICAL": "nosuch"},
     "tianwang: error: setting TIANWANG_VERTICAL='nosuch' is invalid: expected one of: "),
])
def test_a_bad_setting_is_one_line_and_status_2(tmp_path: Path, settings: dict[str, str],
                                                 line: str) -> None:
    last = _refused(tmp_path, "http://www.a.example/", **settings).splitlines()[-1]
    assert last.startswith(line), last


def test_other_components_settings_and_a_bom_in_the_seeds_file_are_accepted(
        testweb: TestWeb, tmp_path: Path) -> None:
    homes = sorted(url for url, page in testweb.truth.items() if page["kind"] == "home"
                   and page["status"] == 200 and page["robots_allowed"])[:2]
    seeds = tmp_path / "seeds.txt"  # as Windows Notepad saves it: a BOM, CRLF line ends
    seeds.write_bytes("\ufeff".encode() + "\r\n".join(homes).encode() + b"\r\n")
    result = scrapy_crawl("site", {"seeds": str(seeds)},
                          {"TIANWANG_DATA_DIR": str(tmp_path / "data"),
                           "TIANWANG_PROXY": testweb.address, "TIANWANG_MAX_LEVELS": "1",
                           # another add-on's own settings: one far from every setting, one
                           # a typo from USER_AGENT and declared as the user's own
                           "ZYTE_API_KEY": "k", "USER_AGENTS": "a,b",
                           "TIANWANG_EXTRA_SETTINGS": "USER_AGENTS"}, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    last = result.stderr.rstrip("\n").splitlines()[-1]
    assert "INFO: crawl done (finished): stored 2, kept 0 already stored" in last, last


def test_every_bad_seed_line_is_named_with_its_line_number(tmp_path: Path) -> None:
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("http://www.a.example/\nnot a url\n# a comment\nftp://b.example/\n"
                     "www.c.example\nhttp://[bad\n")
    shown = _refused(tmp_path, str(seeds)).splitlines()
    assert shown[-4:] == [
        "tianwang: error: 3 bad seed entries:",
        f"{seeds}:2: malformed seed url: 'not a url' (need http(s)://host/...)",
        f"{seeds}:4: malformed seed url: 'ftp://b.example/' (need http(s)://host/...)",
        f"{seeds}:6: malformed seed url: 'http://[bad'",
    ]


def test_a_missing_seeds_file_is_one_line(tmp_path: Path) -> None:
    shown = _refused(tmp_path, str(tmp_path / "nosuch.txt"))
    assert shown.splitlines()[-1] == f"tianwang: error: seeds file not found: {tmp_path}/nosuch.txt"


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes anywhere")
def test_an_unwritable_data_dir_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "ro").mkdir(mode=0o500)
    shown = _refused(tmp_path, "http://www.a.example/", TIANWANG_DATA_DIR=str(tmp_path / "ro/x"))
    assert "TIANWANG_DATA_DIR" in shown.splitlines()[-1]


def test_a_data_dir_that_is_a_file_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    result = scrapy_crawl("site", {"seeds": "http://www.a.example/"},
                          {"TIANWANG_DATA_DIR": str(tmp_path / "file")}, cwd=tmp_path)
    assert result.returncode == 2, result.stderr[-2000:]
    assert "Traceback" not in result.stderr
    last = result.stderr.rstrip("\n").splitlines()[-1]
    assert last.startswith(f"tianwang: error: setting TIANWANG_DATA_DIR='{tmp_path}/file' is "
                           "invalid: expected a writable directory"), last


def _dead_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_a_crawl_that_stores_nothing_fails(tmp_path: Path) -> None:
    # Every request goes through a proxy nobody listens on: each one fails.
    proxy = f"http://127.0.0.1:{_dead_port()}"
    result = scrapy_crawl("site", {"seeds": "http://www.a.example/,http://www.b.example/"},
                          {"TIANWANG_DATA_DIR": str(tmp_path / "data"), "RETRY_ENABLED": "False",
                           "ROBOTSTXT_OBEY": "False", "TIANWANG_PROXY": proxy}, cwd=tmp_path)
    assert result.returncode == 1, result.stderr[-2000:]
    last = result.stderr.rstrip("\n").splitlines()[-1]
    assert "ERROR: crawl FAILED (no page stored): stored 0, kept 0 already stored, refused 0, " \
           "failed 2 (refused 2)" in last, last
    assert "Traceback" not in result.stderr


def test_a_good_crawl_exits_0_and_sums_up_what_it_stored(testweb: TestWeb,
                                                          tmp_path: Path) -> None:
    homes = [url for url, page in testweb.truth.items() if page["kind"] == "home"
             and page["status"] == 200 and page["robots_allowed"]]
    result = scrapy_crawl("site", {"seeds": ",".join(sorted(homes)[:2])},
                          {"TIANWANG_DATA_DIR": str(tmp_path / "data"),
                           "TIANWANG_PROXY": testweb.address, "TIANWANG_MAX_LEVELS": "1"},
                          cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    last = result.stderr.rstrip("\n").splitlines()[-1]
    # Level 1 is the seeds alone: the two homepages are stored, nothing else is fetched.
    assert "INFO: crawl done (finished): stored 2, kept 0 already stored, refused " in last, last


def test_a_bad_partition_plan_is_one_line(tmp_path: Path) -> None:
    plan = tmp_path / "plan.json"
    plan.write_text("{not json")
    result = scrapy_crawl("site", {"partition": str(plan), "share": "0"},
                          {"TIANWANG_DATA_DIR": str(tmp_path / "data")}, cwd=tmp_path)
    assert result.returncode == 2, result.stderr[-2000:]
    assert "Traceback" not in result.stderr
    last = result.stderr.rstrip("\n").splitlines()[-1]
    assert last.startswith(f"tianwang: error: -a partition={plan}: "), last
