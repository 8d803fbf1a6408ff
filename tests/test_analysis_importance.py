"""Importance on a link graph built here, every expected figure counted by hand."""

from __future__ import annotations

import csv
import io
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tianwang.analysis.importance import Coefficients, importance, weight
from tianwang.formats import Record, RecordStore, build_http_response
from tianwang.formats.linksfile import LinkGraphWriter
from tianwang.formats.mirrors import MirrorTable
from tianwang.urls import url_host

ROOT = Path(__file__).resolve().parent.parent
A, X1, X2, B = "http://a.cn/", "http://a.cn/x/1.html", "http://a.cn/x/2.html", "http://b.cn/"

# (url, parent, out-links) in the order a crawl wrote them
LINES = [
    (A, "", [X1, X2, A, B]),  # a self-link
    (X1, A, [X2, A, X2]),  # X2 twice
    (X2, A, [A]),
    (B, A, [X1, "http://not-stored.cn/"]),
    ("http://ghost.cn/", A, [X2]),  # a line of a page with no record: not a stored page
    (X2, X1, [B]),  # X2 stored again: its current links; its parent stays the first
]
# By hand from LINES: who links to each stored page (distinct pages, no self-link, last line)
INDEGREE = {A: 1, X1: 2, X2: 2, B: 2}  # A <- X1; X1 <- A, B; X2 <- A, X1; B <- A, X2
PARENT = {A: "", X1: A, X2: A, B: A}
MIRROR = {A: 2, X1: 1, X2: 1, B: 1}  # a.cn/default.htm is a copy of A
DEPTH = {A: 0, X1: 2, X2: 2, B: 0}


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    data = build_http_response(200, [(b"Content-Type", b"text/html")], b"page")
    with RecordStore(tmp_path) as store, LinkGraphWriter(tmp_path) as graph:
        for url, parent, links in LINES:
            if "ghost" not in url:
                store.write(url_host(url), Record(url, data, "Sun, 22 Nov 2026 05:16:17 GMT"))
            graph.add(url_host(url), url, parent, links)
    with MirrorTable(tmp_path) as table:
        table.add("0" * 32, "http://a.cn/default.htm", A)
    return tmp_path


def hand_weight(url: str, a: float = 1, b: float = 0.5, c: float = 1, d: float = 1,
                base: float = 10) -> float:
    parent_in = INDEGREE[PARENT[url]] if PARENT[url] else 0
    return (base + a * math.log(1 + INDEGREE[url]) + b * math.log(1 + parent_in)
            + c * math.log(MIRROR[url]) - d * DEPTH[url])


def test_features_are_the_hand_counted_ones(tree: Path) -> None:
    table = {row.url: row for row in importance(tree)}
    assert set(table) == {A, X1, X2, B}
    for url, row in table.items():
        parent_in = INDEGREE[PARENT[url]] if PARENT[url] else 0
        assert (row.indegree, row.parent, row.parent_indegree, row.mirror, row.depth) == (
            INDEGREE[url], PARENT[url], parent_in, MIRROR[url], DEPTH[url]), url
        assert row.weight == pytest.approx(hand_weight(url))


def test_ranked_by_weight_then_url(tree: Path) -> None:
    # B: 10 + ln 3 + 0.5 ln 2 = 11.45; A: 10 + ln 2 + ln 2 = 11.39; X1 = X2 = B - 2
    assert [row.url for row in importance(tree)] == [B, A, X1, X2]


def test_weight_formula_and_coefficients() -> None:
    assert weight(0, 0, 1, 0) == 10  # nothing known: the crawl's URL weight of a depth-0 url
    assert weight(0, 0, 1, 3) == 7
    assert weight(math.e - 1, 0, 1, 1) == pytest.approx(10)  # e x in-links = one level
    custom = Coefficients(base=0, indegree=2, parent_indegree=1, mirror=3, depth=0.5)
    assert weight(3, 1, 4, 2, custom) == pytest.approx(2 * math.log(4) + math.log(2)
                                                       + 3 * math.log(4) - 1)


def tianwang(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tianwang.cli", *map(str, args)],
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})


def test_command_writes_csv_with_coefficients_from_options(tree: Path) -> None:
    run = tianwang("importance", tree, "--depth-coef", "0", "--indegree-coef", "2")
    assert run.returncode == 0, run.stderr
    rows = list(csv.DictReader(io.StringIO(run.stdout)))
    assert list(rows[0]) == ["url", "weight", "indegree", "parent", "parent_indegree",
                             "mirror", "depth"]
    by_url = {row["url"]: row for row in rows}
    assert float(by_url[X1]["weight"]) == pytest.approx(hand_weight(X1, a=2, d=0), abs=1e-6)
    assert by_url[X2]["parent"] == A and by_url[A]["mirror"] == "2"


def test_command_writes_json_lines_to_a_file(tree: Path, tmp_path: Path) -> None:
    out = tmp_path / "rank.jsonl"
    run = tianwang("importance", tree, "--format", "jsonl", "--out", out)
    assert run.returncode == 0, run.stderr
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [row["url"] for row in rows] == [B, A, X1, X2]
    assert {row["url"]: row["indegree"] for row in rows} == INDEGREE


def test_command_names_a_damaged_file(tree: Path) -> None:
    [path] = tree.glob("data_*/b.cn/page.dat")
    with open(path, "ab") as file:
        file.write(b"version: 1.0\nurl: http://b.cn/cut\nlength: 99\n\nshort")
    run = tianwang("importance", tree)
    assert run.returncode == 1
    assert f"{path}: offset" in run.stderr and "Traceback" not in run.stderr


def test_command_refuses_an_unfinished_dedup_output(tree: Path) -> None:
    (tree / ".dedup-work").mkdir()
    run = tianwang("importance", tree)
    assert run.returncode == 1 and "unfinished dedup" in run.stderr


def test_command_goes_past_damage_mid_file_and_ranks_every_page_that_reads(
    tree: Path, tmp_path: Path
) -> None:
    [path] = tree.glob("data_*/a.cn/page.dat")
    blob = path.read_bytes()
    second = blob.index(b"version: ", 1)  # X1's record
    path.write_bytes(blob[:second] + b"vErsion" + blob[second + 7:])
    out = tmp_path / "rank.csv"
    run = tianwang("importance", tree, "--out", out)
    assert run.returncode == 1 and "Traceback" not in run.stderr
    assert f"{path}: offset {second} (" in run.stderr
    assert {row.split(",")[0] for row in out.read_text().splitlines()[1:]} == {A, X2, B}
