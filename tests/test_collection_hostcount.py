"""`tianwang hosts count`: pages per site from url lists (D0), as a user runs it.

The expected sites and counts are written out by hand from the lists below, not taken from
the code: which spellings are one host follows the URL standard (lowercase, IDNA, default
ports, IPv4 numbers), and each bad line's reason is the module docstring's.
"""

from __future__ import annotations

import gzip
import os
import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.commandline import on_terminal
from tests.conftest import tianwang_cli
from tianwang.collection import hostcount
from tianwang.collection.sitelist import read_sites

LIST_A = (
    "http://www.pku.edu.cn/\n"
    "http://WWW.PKU.EDU.CN/index.html\n"
    "http://www.pku.edu.cn:80/news/a.htm?id=1#top\n"
    "  http://www.pku.edu.cn/indented\r\n"  # leading blanks and a CRLF ending
    "http://www.pku.edu.cn./trailing-dot\n"
    "https://www.pku.edu.cn/\n"  # another scheme: another site
    "http://www.pku.edu.cn:8080/\n"
    "http://user:secret@bbs.pku.edu.cn/x\n"
    "http://bbs.pku.edu.cn\n"  # no path, no newline handling issue mid-file
    "\n"
    "   \n"
    "http://\uff57\uff57\uff57.tsinghua.edu.cn/\n"  # full-width www
    "http://\u5317\u4eac.cn/\n"  # 北京.cn
    "http://2130706433/\n"  # 127.0.0.1 spelled as one number
    "http://0x7f.0.0.1:8000/\n"
    "http://[::1]:8080/a\n"
    "http://a_b.example.com/\n"  # the URL standard allows _: a site; clean removes it
    "http://a<b.example.com/\n"  # forbidden: kept as spelled for clean to remove
    "not a url\n"
    "www.pku.edu.cn/no-scheme\n"
    "ftp://ftp.pku.edu.cn/pub\n"
    "mailto:someone@pku.edu.cn\n"
    "http:///no-host\n"
    "http://www.pku.edu.cn:99999/\n"
    "http://www.pku.edu.cn:8o/\n"
    "http://a\x01b.cn/\n"
    "http://a\u2028b.cn/\n"
)
BAD_BYTES = b"http://\xb1\xb1\xbe\xa9.cn/\n"  # 北京 in GBK: not UTF-8

EXPECTED_A = {
    "http://www.pku.edu.cn:80/": 5,
    "https://www.pku.edu.cn:443/": 1,
    "http://www.pku.edu.cn:8080/": 1,
    "http://bbs.pku.edu.cn:80/": 2,
    "http://www.tsinghua.edu.cn:80/": 1,
    "http://xn--1lq90i.cn:80/": 1,
    "http://127.0.0.1:80/": 1,
    "http://127.0.0.1:8000/": 1,
    "http://[::1]:8080/": 1,
    "http://a_b.example.com:80/": 1,
    "http://a<b.example.com:80/": 1,
}
BAD_A = {"not-url": 2, "other-scheme": 2, "empty-host": 1, "bad-port": 2, "not-utf8": 1,
         "control-char": 2}

LIST_B = "http://www.pku.edu.cn/b1\nhttp://www.pku.edu.cn/b2\nhttp://www.sina.com.cn/\n"


def d0_of(path: Path) -> dict[str, int]:
    return {site: int(pages) for site, pages in read_sites(path)}


@pytest.fixture
def list_a(tmp_path: Path) -> Path:
    path = tmp_path / "a.txt"
    path.write_bytes(LIST_A.encode("utf-8") + BAD_BYTES)
    return path


@pytest.mark.parametrize("workers", ["1", "2"])
def test_counts_one_list_by_site(list_a: Path, tmp_path: Path, workers: str) -> None:
    out = tmp_path / "D0"
    run = tianwang_cli("hosts", "count", str(list_a), "--out", str(out), "--workers", workers)
    assert run.returncode == 0, run.stderr
    assert d0_of(out) == EXPECTED_A
    text = out.read_text(encoding="utf-8")
    assert text.splitlines() == sorted(text.splitlines())  # sorted by site
    assert all(line.count("\t") == 1 for line in text.splitlines())
    urls, bad = sum(EXPECTED_A.values()), sum(BAD_A.values())
    assert run.stdout.splitlines()[0] == (
        f"D0: {len(EXPECTED_A)} sites from {urls} urls in 1 list, {bad} bad lines")
    for reason, count in BAD_A.items():
        assert f"bad lines, {reason}: {count} (first: " in run.stdout
    assert "\r" not in run.stderr  # no progress bar off a terminal


def test_merges_lists_summing_a_host_found_in_both(list_a: Path, tmp_path: Path) -> None:
    zipped = tmp_path / "b-from-machine-2"  # gzip is known by its bytes, not its name
    zipped.write_bytes(gzip.compress(b"\xef\xbb\xbf" + LIST_B.encode()))  # and a BOM
    named = tmp_path / "c.gz"
    named.write_bytes(gzip.compress(b"http://www.sina.com.cn/x\n" * 3))
    marked = tmp_path / "d.txt"
    marked.write_bytes(b"\xef\xbb\xbfhttp://www.sina.com.cn/\n")  # a BOM before the first url
    out = tmp_path / "D0"
    run = tianwang_cli("hosts", "count", str(list_a), str(zipped), str(named), str(marked),
                       "-o", str(out))
    assert run.returncode == 0, run.stderr
    expected = dict(EXPECTED_A)
    expected["http://www.pku.edu.cn:80/"] += 2
    expected["http://www.sina.com.cn:80/"] = 5
    assert d0_of(out) == expected
    assert run.stdout.startswith(f"D0: {len(expected)} sites from {sum(expected.values())} "
                                 f"urls in 4 lists, {sum(BAD_A.values())} bad lines")


def test_merge_sums_d0_files_counted_on_each_machine(list_a: Path, tmp_path: Path) -> None:
    list_b = tmp_path / "b.txt"
    list_b.write_text(LIST_B)
    for name, url_list in (("m1", list_a), ("m2", list_b)):
        run = tianwang_cli("hosts", "count", str(url_list), "-o", str(tmp_path / name))
        assert run.returncode == 0, run.stderr
    out = tmp_path / "D0"
    run = tianwang_cli("hosts", "count", "--merge", str(tmp_path / "m1"), str(tmp_path / "m2"),
                       "-o", str(out))
    assert run.returncode == 0, run.stderr
    expected = dict(EXPECTED_A)
    expected["http://www.pku.edu.cn:80/"] += 2
    expected["http://www.sina.com.cn:80/"] = 1
    assert d0_of(out) == expected
    assert run.stdout.startswith(f"D0: {len(expected)} sites from {sum(expected.values())} "
                                 "urls in 2 lists, 0 bad lines")


def test_merge_refuses_a_file_that_is_no_d0(list_a: Path, tmp_path: Path) -> None:
    out = tmp_path / "D0"
    run = tianwang_cli("hosts", "count", "--merge", str(list_a), "-o", str(out))
    assert run.returncode == 1
    assert f"{list_a}: line 1" in run.stderr and "not written" in run.stderr
    assert not out.exists()


def generated_list(seed: int, lines: int) -> tuple[bytes, dict[str, int]]:
    """Random lines over a few hosts, with the truth counted as they are made."""
    rng = random.Random(seed)
    hosts = ["www.a.com", "b.cn", "WWW.A.COM", "c.org:81", "d.net"]
    site = {"www.a.com": "http://www.a.com:80/", "b.cn": "http://b.cn:80/",
            "WWW.A.COM": "http://www.a.com:80/", "c.org:81": "http://c.org:81/",
            "d.net": "http://d.net:80/"}
    truth: dict[str, int] = {}
    out = []
    for _ in range(lines):
        host = rng.choice(hosts)
        if rng.random() < 0.05:
            out.append("junk " + "x" * rng.randrange(30))
            continue
        truth[site[host]] = truth.get(site[host], 0) + 1
        out.append(f"http://{host}/" + "p" * rng.randrange(40))
    return ("\n".join(out) + ("\n" if seed % 2 else "")).encode(), truth


@pytest.mark.parametrize("chunk, max_line", [(3, 16), (7, 1 << 20), (64, 16), (1000, 1 << 20)])
@pytest.mark.parametrize("workers", [1, 2])
def test_lines_across_task_boundaries_counted_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int, max_line: int, workers: int
) -> None:
    # Lines span several tasks; with max_line 16 only a line's head is read (every
    # `http://host:port` here is at most 16 bytes), the rest skipped in bounded reads.
    data, truth = generated_list(chunk + workers, 400)
    plain, zipped = tmp_path / "plain", tmp_path / "zipped"
    plain.write_bytes(data)
    zipped.write_bytes(gzip.compress(data))
    monkeypatch.setattr(hostcount, "CHUNK", chunk)
    monkeypatch.setattr(hostcount, "MAX_LINE", max_line)
    result = hostcount.count_lists([str(plain), str(zipped)], workers)
    assert result.sites == {site: 2 * pages for site, pages in truth.items()}
    assert result.bad["not-url"] == 2 * (400 - sum(truth.values()))


def _fails(self: object, data: bytes) -> None:
    raise RuntimeError("a bug")


def _dies(self: object, data: bytes) -> None:
    os._exit(3)


@pytest.mark.parametrize("add, message", [(_fails, "RuntimeError: a bug"), (_dies, "died")])
def test_a_failing_or_dying_worker_fails_the_count(
    list_a: Path, monkeypatch: pytest.MonkeyPatch, add, message: str
) -> None:
    monkeypatch.setattr(hostcount.Tally, "add", add)  # the forked workers inherit it
    with pytest.raises(hostcount.CountError, match=message):
        hostcount.count_lists([str(list_a)], 2)


def test_unreadable_input_leaves_no_d0(list_a: Path, tmp_path: Path) -> None:
    out = tmp_path / "D0"
    run = tianwang_cli("hosts", "count", str(list_a), str(tmp_path / "missing"), "-o", str(out))
    assert run.returncode == 1
    assert "missing" in run.stderr and "not written" in run.stderr
    assert not out.exists()
    assert os.listdir(tmp_path) == ["a.txt"]


def test_output_folder_checked_before_counting(list_a: Path, tmp_path: Path) -> None:
    run = tianwang_cli("hosts", "count", str(list_a), "-o", str(tmp_path / "no" / "D0"))
    assert run.returncode == 1
    assert "no such directory" in run.stderr and not run.stdout
    assert os.listdir(tmp_path) == ["a.txt"]


def test_corrupt_gzip_midway_keeps_the_old_d0(list_a: Path, tmp_path: Path) -> None:
    data, _ = generated_list(3, 20000)
    broken = tmp_path / "broken.gz"
    broken.write_bytes(gzip.compress(data)[:-5000])  # cut: fails after some lines are read
    out = tmp_path / "D0"
    out.write_text("http://old.example.com:80/\t1\n")
    run = tianwang_cli("hosts", "count", str(list_a), str(broken), "-o", str(out))
    assert run.returncode == 1, run.stdout
    assert "broken.gz" in run.stderr
    assert out.read_text() == "http://old.example.com:80/\t1\n"
    assert sorted(os.listdir(tmp_path)) == ["D0", "a.txt", "broken.gz"]


def test_progress_bar_on_a_terminal(list_a: Path, tmp_path: Path) -> None:
    code, _, shown = on_terminal("hosts", "count", str(list_a), "-o", str(tmp_path / "D0"))
    drawn = shown.decode()
    assert code == 0
    assert "\rcount" in drawn and "100.0%" in drawn


# The fast path for plain ASCII names must give what the URL standard's parser gives.
@pytest.mark.parametrize("key", [
    b"http://www.pku.edu.cn", b"HTTP://WWW.PKU.EDU.CN:80", b"https://a.b.c:443", b"http://a.com.",
    b"http://1.2.3.4", b"http://a.1", b"http://a.0x1F", b"http://0x", b"http://a.b:65536",
    b"http://a.b:0080", b"http://a-.b-c", b"http://x.0x1g",
])
def test_plain_names_read_as_the_parser_reads_them(key: bytes) -> None:
    assert hostcount.site_of(key) == hostcount._parsed_site(key)


@settings(max_examples=150, deadline=None)
@given(st.from_regex(rb"\Ahttps?://[A-Za-z0-9.-]{1,20}(:[0-9]{0,6})?\Z"))
def test_plain_path_agrees_with_the_parser(key: bytes) -> None:
    assert hostcount.site_of(key) == hostcount._parsed_site(key)
