"""`tianwang testweb hosts | truth | serve`: output and argument checks, as a user runs them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tianwang.testweb.model import SyntheticWeb

ROOT = Path(__file__).resolve().parent.parent


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "tianwang.cli", "testweb", *args]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=120)


def test_hosts_prints_one_homepage_a_line() -> None:
    result = cli("hosts", "--seed", "3", "--hosts", "12")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == 12 and len(set(lines)) == 12
    assert lines == SyntheticWeb(3, 12).homepages()
    assert all(line.startswith("http://") and line.endswith("/") for line in lines)


def test_truth_prints_json_lines_equal_to_the_model() -> None:
    result = cli("truth", "--seed", "3", "--hosts", "4", "--max-pages", "40")
    assert result.returncode == 0, result.stderr
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert records == list(SyntheticWeb(3, 4, max_pages=40).truth())
    assert {r["kind"] for r in records if r["url"].endswith("/")} >= {"home"}


@pytest.mark.parametrize(
    ("args", "option"),
    [
        (["hosts", "--seed", "1", "--hosts", "0"], "--hosts"),
        (["truth", "--seed", "1", "--hosts", "-3"], "--hosts"),
        (["truth", "--seed", "1", "--hosts", "2", "--max-pages", "0"], "--max-pages"),
        (["serve", "--seed", "1", "--hosts", "2", "--port", "70000"], "--port"),
        (["serve", "--seed", "x", "--hosts", "2"], "--seed"),
        (["serve", "--seed", "1", "--hosts", "2", "--latency", "-0.5"], "--latency"),
        (["serve", "--seed", "1", "--hosts", "2", "--latency", "nan"], "--latency"),
        (["serve", "--seed", "1", "--hosts", "2", "--latency-spread", "1.5"], "--latency-spread"),
        (["serve", "--seed", "1", "--hosts", "2", "--latency-spread", "-0.1"], "--latency-spread"),
        (["hosts", "--hosts", "2"], "--seed"),
    ],
)
def test_bad_arguments_name_the_option(args: list[str], option: str) -> None:
    result = cli(*args)
    assert result.returncode == 2
    assert option in result.stderr and "error" in result.stderr
