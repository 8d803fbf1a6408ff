"""`tianwang demo`, the README's first command, on a small web."""

import os
import re
import subprocess
from pathlib import Path

from tests.conftest import ROOT, tianwang_cli
from tests.spec_reader import http_parts, read_records


def test_demo_crawls_the_test_web_and_reports_what_it_stored(tmp_path: Path) -> None:
    data = tmp_path / "data"
    # Another project's scrapy.cfg here must not leak into the demo's settings.
    (tmp_path / "scrapy.cfg").write_text("[settings]\ndefault = otherproject.settings\n")
    result = tianwang_cli("demo", "--hosts", "6", "--data-dir", str(data), cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    last = next(line for line in result.stdout.splitlines() if line.startswith("pages "))
    summary = r"pages (\d+), hosts (\d+), bytes (\d+) \((\d+) on disk in .+\), ([\d.]+) pages/s"
    match = re.fullmatch(summary + r" over [\d.]+ s", last)
    assert match, last
    pages, hosts, body_bytes, on_disk = (int(match.group(i)) for i in range(1, 5))
    files = list(data.glob("data_*/*/page.dat"))
    records = [record for path in files for record in read_records(path.read_bytes())]
    assert pages == len(records) > 0 and hosts == len(files) == 6
    assert body_bytes == sum(len(http_parts(record["data"])[2]) for record in records)
    assert on_disk == sum(path.stat().st_size for path in files)
    assert float(match.group(5)) > 0


def test_demo_writes_into_its_own_directory_and_says_what_to_run_next(tmp_path: Path) -> None:
    result = tianwang_cli("demo", "--hosts", "4", cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    # Its own directory: ./data, where `scrapy crawl` writes by default, stays the user's.
    assert sorted(path.name for path in tmp_path.iterdir()) == ["demo"]
    assert len(list((tmp_path / "demo").glob("data_*/*/page.dat"))) == 4
    lines = result.stdout.splitlines()
    steps = lines[lines.index("Next:") + 1:]
    assert [step.split("  # ")[1] for step in steps] == [
        "an HTML report of this crawl: demo/report.html", "the records it stored, one a line",
        "a crawl of your own, on the test web, offline"]
    # The first two, run as printed, work on what the demo stored.
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for step in steps[:2]:
        run = subprocess.run(step.split("  # ")[0], shell=True, cwd=tmp_path, env=env,
                             capture_output=True, text=True, timeout=120)
        assert run.returncode == 0, (step, run.stderr[-2000:])
    assert (tmp_path / "demo" / "report.html").is_file()
    assert len(run.stdout.splitlines()) == int(re.search(r"pages (\d+)", result.stdout).group(1))


def test_demo_refuses_a_data_dir_that_holds_records(tmp_path: Path) -> None:
    (tmp_path / "demo" / "data_7" / "www.a.com").mkdir(parents=True)
    page = tmp_path / "demo" / "data_7" / "www.a.com" / "page.dat"
    page.write_bytes(b"earlier crawl")
    result = tianwang_cli("demo", "--hosts", "2", cwd=tmp_path)
    assert result.returncode == 2 and "already holds records" in result.stderr
    assert page.read_bytes() == b"earlier crawl"


def test_demo_rejects_a_bad_host_count(tmp_path: Path) -> None:
    result = tianwang_cli("demo", "--hosts", "0", cwd=tmp_path)
    assert result.returncode == 2 and "--hosts" in result.stderr
    assert not (tmp_path / "demo").exists()
