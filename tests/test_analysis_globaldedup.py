"""Global dedup on record trees built here: one record per body, the mirror table, the split
of the input not mattering, kill -9 and resume, damaged input, refused outputs."""

from __future__ import annotations

import hashlib
import os
import random
import signal
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

import pytest

from tests.commandline import on_terminal
from tianwang.analysis.globaldedup import DONE_FILE, WORK_DIR, DedupError, dedup
from tianwang.formats import Record, RecordStore, build_http_response, iter_tree
from tianwang.formats.linksfile import LinkGraphWriter, iter_pages
from tianwang.formats.mirrors import MirrorTable, iter_mirrors
from tianwang.urls import url_host

ROOT = Path(__file__).resolve().parent.parent
DATE = "Sun, 22 Nov 2026 05:16:17 GMT"


# -- building trees and reading results, independently of the code under test ------------


def page(url: str, body: bytes, date: str = DATE) -> Record:
    data = build_http_response(200, [(b"Content-Type", b"text/html")], body)
    return Record(url=url, data=data, date=date, ip="127.0.0.1")


def write_tree(root: Path, pages: list[tuple[str, bytes]], online_dedup: bool = False,
               links: bool = True) -> None:
    """Store the pages in order, as a crawl would; with online_dedup, a body already stored
    is not stored again and goes to the mirror table instead (what the crawl's pipeline does)."""
    kept: dict[str, str] = {}
    with RecordStore(root) as store, LinkGraphWriter(root) as graph, MirrorTable(root) as table:
        for url, body in pages:
            md5 = hashlib.md5(body).hexdigest()
            if online_dedup and md5 in kept:
                if kept[md5] != url:
                    table.add(md5, url, kept[md5])
                continue
            kept.setdefault(md5, url)
            store.write(url_host(url), page(url, body))
            if links:
                graph.add(url_host(url), url, "", [f"{url}#self", "http://elsewhere.cn/"])


def records(out: Path) -> dict[str, list[str]]:
    """md5 of the body -> urls of the records with it."""
    found: defaultdict[str, list[str]] = defaultdict(list)
    for _path, record in iter_tree(out):
        found[hashlib.md5(record.http.body).hexdigest()].append(record.url)
    return dict(found)


def groups(out: Path) -> dict[str, set[str]]:
    """md5 -> every url known to have that body: the record's and the mirror table's."""
    found: defaultdict[str, set[str]] = defaultdict(set)
    for md5, urls in records(out).items():
        found[md5].update(urls)
    for mirror in iter_mirrors(out):
        found[mirror.md5].update((mirror.duplicate, mirror.kept))
    return dict(found)


def tree_bytes(root: Path) -> dict[str, bytes]:
    """Every file of the output except the report (which holds the run's time)."""
    return {path.relative_to(root).as_posix(): path.read_bytes()
            for path in sorted(root.rglob("*")) if path.is_file() and path.name != DONE_FILE}


def shortest(urls: set[str] | list[str]) -> str:
    return min(urls, key=lambda url: (len(url), url))


def web(count: int, bodies: int, seed: int = 1) -> list[tuple[str, bytes]]:
    """count pages over a few hosts, sharing bodies at random (including `/` and a query)."""
    rng = random.Random(seed)
    pages = []
    for i in range(count):
        host = f"h{i % 7}.cn"
        url = rng.choice([f"http://{host}/", f"http://{host}/p{i}.html",
                          f"http://{host}/p{i}.html?sid={i}", f"http://{host}/d{i % 3}/x{i}.htm"])
        pages.append((url, b"<html>body %d</html>" % rng.randrange(bodies)))
    return list(dict(pages).items())  # one body per url, as a single crawl sees it


# -- what the output holds ---------------------------------------------------------------


def test_one_record_per_body_kept_under_its_shortest_url(tmp_path: Path) -> None:
    pages = [("http://a.cn/default.htm", b"home"), ("http://a.cn/", b"home"),
             ("http://b.cn/x?sid=9", b"x"), ("http://b.cn/x", b"x"), ("http://c.cn/y", b"y"),
             ("http://c.cn/home-copy", b"home")]
    write_tree(tmp_path / "in", pages)
    report = dedup([tmp_path / "in"], tmp_path / "out", workers=1)
    md5 = {body: hashlib.md5(body).hexdigest() for _url, body in pages}
    assert records(tmp_path / "out") == {md5[b"home"]: ["http://a.cn/"],
                                         md5[b"x"]: ["http://b.cn/x"], md5[b"y"]: ["http://c.cn/y"]}
    assert sorted((m.md5, m.duplicate, m.kept) for m in iter_mirrors(tmp_path / "out")) == sorted([
        (md5[b"home"], "http://a.cn/default.htm", "http://a.cn/"),
        (md5[b"home"], "http://c.cn/home-copy", "http://a.cn/"),
        (md5[b"x"], "http://b.cn/x?sid=9", "http://b.cn/x"),
    ])
    assert (report.records, report.distinct, report.duplicates) == (6, 3, 3)


def test_records_are_copied_byte_for_byte_with_their_links(tmp_path: Path) -> None:
    pages = web(60, 25)
    write_tree(tmp_path / "in", pages)
    dedup([tmp_path / "in"], tmp_path / "out", workers=1)
    originals = {(r.url, r.data, r.date, r.ip) for _p, r in iter_tree(tmp_path / "in")}
    copied = [(r.url, r.data, r.date, r.ip) for _p, r in iter_tree(tmp_path / "out")]
    assert set(copied) <= originals and len(copied) == len(set(copied))
    lines = {p.url: (p.parent, p.links) for p in iter_pages(tmp_path / "in")}
    out_lines = {p.url: (p.parent, p.links) for p in iter_pages(tmp_path / "out")}
    assert out_lines == {url: lines[url] for url, *_rest in copied}


def test_record_files_sit_where_the_tree_layout_says(tmp_path: Path) -> None:
    write_tree(tmp_path / "in", web(40, 10))
    dedup([tmp_path / "in"], tmp_path / "out", workers=1)
    verify = subprocess.run([sys.executable, "-m", "tianwang.cli", "records", "verify",
                             str(tmp_path / "out")], capture_output=True, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert verify.returncode == 0, verify.stderr


# -- the split of the input does not matter ----------------------------------------------


def overlapping(pages: list[tuple[str, bytes]], seed: int) -> tuple[list, list]:
    """Two crawls that each saw part of the pages, a third of them both, in their own order."""
    rng = random.Random(seed)
    a, b = [], []
    for item in pages:
        side = rng.randrange(3)
        if side != 1:
            a.append(item)
        if side != 0:
            b.append(item)
    rng.shuffle(a)
    rng.shuffle(b)
    return a, b


def test_dedup_of_overlapping_trees_is_byte_for_byte_the_dedup_of_their_union(
    tmp_path: Path,
) -> None:
    """Trees that stored every page they fetched: the output is the same, file for file."""
    pages = web(300, 80)
    a, b = overlapping(pages, 2)
    write_tree(tmp_path / "a", a)
    write_tree(tmp_path / "b", b)
    write_tree(tmp_path / "union", random.Random(3).sample(pages, len(pages)))
    dedup([tmp_path / "a", tmp_path / "b"], tmp_path / "ab", workers=2)
    dedup([tmp_path / "b", tmp_path / "a"], tmp_path / "ba", workers=1)
    dedup([tmp_path / "union"], tmp_path / "u", workers=2)
    assert tree_bytes(tmp_path / "ab") == tree_bytes(tmp_path / "u") == tree_bytes(tmp_path / "ba")
    bodies: defaultdict[str, set[str]] = defaultdict(set)
    for url, body in pages:
        bodies[hashlib.md5(body).hexdigest()].add(url)
    assert groups(tmp_path / "u") == bodies
    assert records(tmp_path / "u") == {md5: [shortest(urls)] for md5, urls in bodies.items()}


def test_after_online_dedup_the_same_bodies_and_url_groups_survive(tmp_path: Path) -> None:
    """Crawls that dropped copies online kept whichever url they met first, so the kept url
    may differ from the union's; what must be equal is which bodies are stored (once each)
    and, per body, the set of urls known to have it (kept url plus mirror table)."""
    pages = web(300, 80, seed=4)
    a, b = overlapping(pages, 5)
    write_tree(tmp_path / "a", a, online_dedup=True)
    write_tree(tmp_path / "b", b, online_dedup=True)
    write_tree(tmp_path / "union", random.Random(6).sample(pages, len(pages)), online_dedup=True)
    dedup([tmp_path / "a", tmp_path / "b"], tmp_path / "ab", workers=2)
    dedup([tmp_path / "union"], tmp_path / "u", workers=2)
    assert groups(tmp_path / "ab") == groups(tmp_path / "u")
    assert records(tmp_path / "ab").keys() == records(tmp_path / "u").keys()
    stored_a_or_b = {r.url for tree in ("a", "b") for _p, r in iter_tree(tmp_path / tree)}
    for md5, urls in records(tmp_path / "ab").items():
        assert len(urls) == 1
        candidates = groups(tmp_path / "ab")[md5] & stored_a_or_b
        assert urls[0] == shortest(candidates)
    kept = {m.duplicate: m.kept for m in iter_mirrors(tmp_path / "ab")}
    survivors = {urls[0] for urls in records(tmp_path / "ab").values()}
    assert set(kept.values()) <= survivors and not set(kept) & survivors


def test_one_url_stored_twice_with_one_body_keeps_the_later_record(tmp_path: Path) -> None:
    with RecordStore(tmp_path / "old") as store:
        store.write("a.cn", page("http://a.cn/", b"same", "Sat, 21 Nov 2026 05:00:00 GMT"))
    with RecordStore(tmp_path / "new") as store:
        store.write("a.cn", page("http://a.cn/", b"same", "Sun, 22 Nov 2026 05:00:00 GMT"))
    report = dedup([tmp_path / "old", tmp_path / "new"], tmp_path / "out", workers=1)
    [(_path, record)] = list(iter_tree(tmp_path / "out"))
    assert record.date == "Sun, 22 Nov 2026 05:00:00 GMT"
    assert list(iter_mirrors(tmp_path / "out")) == []  # a url is no mirror of itself
    assert (report.same_url, report.duplicates) == (1, 0)


def test_input_mirror_lines_point_at_the_new_survivor(tmp_path: Path) -> None:
    write_tree(tmp_path / "a", [("http://a.cn/long/page.html", b"p"),
                                ("http://a.cn/long/copy.html", b"p")], online_dedup=True)
    write_tree(tmp_path / "b", [("http://b.cn/p", b"p")])
    dedup([tmp_path / "a", tmp_path / "b"], tmp_path / "out", workers=1)
    md5 = hashlib.md5(b"p").hexdigest()
    assert {(m.duplicate, m.kept) for m in iter_mirrors(tmp_path / "out")} == {
        ("http://a.cn/long/page.html", "http://b.cn/p"),
        ("http://a.cn/long/copy.html", "http://b.cn/p"),
    }
    assert records(tmp_path / "out") == {md5: ["http://b.cn/p"]}


# -- interrupted runs --------------------------------------------------------------------


def big_tree(root: Path) -> None:
    rng = random.Random(9)
    words = [bytes(rng.choices(b"abcdefghij ", k=400)) for _ in range(50)]
    pages = [(f"http://host{i % 400}.cn/p{i}.html", b"".join(rng.choices(words, k=8))
              + b"%d" % rng.randrange(15000)) for i in range(20000)]
    write_tree(root, pages)


def start(*args: str | Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", "tianwang.cli", "dedup", *map(str, args)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})


def kill_when(process: subprocess.Popen[bytes], reached: object, what: str) -> None:
    deadline = time.monotonic() + 120
    while not reached():  # type: ignore[operator]
        finished = process.poll() is not None
        assert not finished and time.monotonic() < deadline, f"never killed {what}"
        time.sleep(0.001)
    process.send_signal(signal.SIGKILL)
    process.communicate()


def test_killed_in_each_phase_then_rerun_gives_the_same_output(tmp_path: Path) -> None:
    big_tree(tmp_path / "in")
    clean = start(tmp_path / "in", "--out", tmp_path / "clean", "--workers", "2")
    _stdout, stderr = clean.communicate(timeout=300)
    assert clean.returncode == 0, stderr
    out = tmp_path / "out"
    work = out / WORK_DIR
    kill_points = [
        ("hashing", lambda: (work / "manifest.json").exists()),
        ("choosing", lambda: any((work / "choose").glob("s*"))),
        ("copying", lambda: any(out.glob("data_*"))),
    ]
    for what, reached in kill_points:
        kill_when(start(tmp_path / "in", "--out", out, "--workers", "1"), reached, what)
        assert not (out / DONE_FILE).exists()
        assert work.exists()  # the unfinished run is marked so
    rerun = start(tmp_path / "in", "--out", out)
    stdout, stderr = rerun.communicate(timeout=300)
    assert rerun.returncode == 0, stderr
    assert b"resumed" in stdout
    assert not work.exists()
    assert tree_bytes(out) == tree_bytes(tmp_path / "clean")


def test_rerun_of_a_finished_output_changes_nothing(tmp_path: Path) -> None:
    write_tree(tmp_path / "in", web(50, 20))
    first = dedup([tmp_path / "in"], tmp_path / "out", workers=1)
    before = tree_bytes(tmp_path / "out")
    again = dedup([tmp_path / "in"], tmp_path / "out", workers=1)
    assert tree_bytes(tmp_path / "out") == before
    assert (again.records, again.distinct) == (first.records, first.distinct)


# -- refusals and damaged input ----------------------------------------------------------


@pytest.mark.parametrize("where", ["in", "in/out", "."])
def test_an_output_that_is_holds_or_sits_in_an_input_is_refused(
    tmp_path: Path, where: str
) -> None:
    write_tree(tmp_path / "in", web(10, 5))
    with pytest.raises(DedupError, match="is, holds or sits inside input"):
        dedup([tmp_path / "in"], tmp_path / where, workers=1)


def test_a_non_empty_output_or_one_of_other_inputs_is_refused(tmp_path: Path) -> None:
    write_tree(tmp_path / "a", web(10, 5))
    write_tree(tmp_path / "b", web(10, 5, seed=2))
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "notes.txt").write_text("mine")
    with pytest.raises(DedupError, match="not empty"):
        dedup([tmp_path / "a"], tmp_path / "busy", workers=1)
    assert (tmp_path / "busy" / "notes.txt").read_text() == "mine"
    dedup([tmp_path / "a"], tmp_path / "out", workers=1)
    with pytest.raises(DedupError, match="finished dedup of other inputs"):
        dedup([tmp_path / "b"], tmp_path / "out", workers=1)


def damaged_tree(root: Path) -> tuple[Path, int]:
    """A tree whose one file ends in half a record; the file and where that record starts."""
    write_tree(root, [(f"http://a.cn/{i}", b"body %d" % i) for i in range(5)], links=False)
    [path] = root.glob("data_*/a.cn/page.dat")
    size = path.stat().st_size
    [*_rest, last] = [record.offset for _p, record in iter_tree(root)]
    with open(path, "r+b") as file:
        file.truncate(size - 7)
    return path, last


def test_damaged_input_stops_with_file_and_offset(tmp_path: Path) -> None:
    path, offset = damaged_tree(tmp_path / "in")
    run = start(tmp_path / "in", "--out", tmp_path / "out")
    _stdout, stderr = run.communicate(timeout=120)
    assert run.returncode == 1
    assert f"{path}: offset {offset}: truncated record".encode() in stderr
    assert b"Traceback" not in stderr
    assert not (tmp_path / "out" / DONE_FILE).exists()


def test_damaged_input_skipped_on_request_keeps_the_records_before_it(tmp_path: Path) -> None:
    path, offset = damaged_tree(tmp_path / "in")
    run = start(tmp_path / "in", "--out", tmp_path / "out", "--skip-damaged")
    stdout, stderr = run.communicate(timeout=120)
    assert run.returncode == 0, stderr
    assert f"skipped damaged: {path}: offset {offset}: truncated record".encode() in stdout
    assert sorted(r.url for _p, r in iter_tree(tmp_path / "out")) == [
        f"http://a.cn/{i}" for i in range(4)]


def test_progress_bar_on_a_terminal_and_counts_at_the_end(tmp_path: Path) -> None:
    write_tree(tmp_path / "in", web(100, 30))
    code, stdout, shown = on_terminal("dedup", str(tmp_path / "in"), "--out", str(tmp_path / "out"))
    assert code == 0
    for phase in (b"hash", b"choose", b"copy"):
        assert phase in shown and b"100.0%" in shown
    distinct = len({body for _url, body in web(100, 30)})
    assert f"distinct bodies: {distinct} ".encode() in stdout
    assert b"records/s" in stdout


def test_a_record_whose_url_has_no_host_stays_in_its_host_directory(tmp_path: Path) -> None:
    with RecordStore(tmp_path / "in") as store:
        store.write("odd.cn", page("odd-url-without-host", b"odd"))
        store.write("odd.cn", page("http://odd.cn/", b"even"))
    dedup([tmp_path / "in"], tmp_path / "out", workers=1)
    assert {path.relative_to(tmp_path / "out") for path, _r in iter_tree(tmp_path / "out")} == {
        path.relative_to(tmp_path / "in") for path, _r in iter_tree(tmp_path / "in")}
    assert sorted(r.url for _p, r in iter_tree(tmp_path / "out")) == [
        "http://odd.cn/", "odd-url-without-host"]
