"""`tianwang hosts filter`: ports, IPs, spam, digit-led names, families, small sites -> D4."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from tests.commandline import run_in_process
from tests.conftest import COLLECTION_HOSTS, COLLECTION_PAGES, COLLECTION_SEED, tianwang_cli
from tianwang.collection.spamfilter import filter_sites, outlier_families, registered_domain
from tianwang.hosts import SpamList
from tianwang.testweb.hostlist import FAMILY_DOMAIN, CollectionWeb, spam_list

REASONS = ("ip", "port", "spam", "digit", "family", "small")


@pytest.mark.parametrize(
    ("host", "domain"),
    [
        ("www.pku.edu.cn", "pku.edu.cn"),
        ("news.sina.com.cn", "sina.com.cn"),
        ("a12.freeblog8.com.cn", "freeblog8.com.cn"),
        ("www.bjedu.bj.cn", "bjedu.bj.cn"),  # a province domain
        ("www.example.com", "example.com"),
        ("example.com", "example.com"),
        ("bbs.example.cn", "example.cn"),  # .cn alone: one-label suffix
        ("www.bbc.co.uk", "bbc.co.uk"),
        ("shop.example.de", "example.de"),
        ("com.cn", "com.cn"),
    ],
)
def test_registered_domain(host: str, domain: str) -> None:
    assert registered_domain(host) == domain


def test_a_domain_of_alike_hosts_is_a_family_by_the_binomial_bound() -> None:
    # 90 other hosts, 9 of them with 20..30 pages; the family: 10 hosts of 20 pages.
    others = [1] * 40 + [5] * 41 + [25] * 9
    sizes = {f"o{k}.com": [s] for k, s in enumerate(others)}
    sizes["fam.com"] = [20] * 10
    sizes["uni.edu.cn"] = [10, 15, 23, 35, 52, 78, 117, 175, 262, 393]  # spread: no family
    [(domain, family)] = outlier_families(sizes).items()
    # the share of the 100 other hosts in [20, 30] (9, and uni.edu.cn's 23), smoothed
    p = (10 + 1) / (100 + 2)
    assert domain == "fam.com" and family.in_window == 10
    assert family.expected == pytest.approx(10 * p)
    assert family.bound == pytest.approx(p**10)  # exp(-n KL(1 || p)) = p^n
    # nine alike hosts are not enough (--family-min 10), and a looser bound finds none
    sizes["fam.com"] = [20] * 9
    assert outlier_families(sizes) == {}
    sizes["fam.com"] = [20] * 10
    assert outlier_families(sizes, alpha=1e-12) == {}


def test_each_site_gets_the_first_reason() -> None:
    rows = [("http://1a.fangwen.com:8080/", 50), ("http://1a.example.com:80/", 50),
            ("http://61.135.169.125:8080/", 50), ("http://www.fangwen.com:80/", 5),
            ("http://www.ok.com:80/", 10), ("http://www.tiny.com:80/", 9)]
    result = filter_sites(rows, SpamList(["fangwen.com"]))
    assert result.kept == [("http://www.ok.com:80/", 10)]
    assert {site: reason for site, _p, reason in result.removed} == {
        "http://1a.fangwen.com:8080/": "port", "http://1a.example.com:80/": "digit",
        "http://61.135.169.125:8080/": "ip", "http://www.fangwen.com:80/": "spam",
        "http://www.tiny.com:80/": "small"}


@pytest.fixture(scope="module")
def truth() -> list[dict]:
    return list(CollectionWeb(COLLECTION_SEED, COLLECTION_HOSTS, COLLECTION_PAGES).truth())


def write_d3(path: Path, truth: list[dict]) -> Path:
    """D3 as truth says dealias must write it (pages of an alias group summed)."""
    rows = sorted((r["site"], r["group_pages"] or r["pages"], r["md5"], r["final_url"],
                   1 if r["group_pages"] else 0) for r in truth if r["step"] in (None, "D4"))
    path.write_text("".join(f"{s}\t{p}\t200\t{m}\t{u}\t{a}\n" for s, p, m, u, a in rows))
    return path


def test_d4_and_removals_equal_truth(tmp_path: Path, truth: list[dict]) -> None:
    d3 = write_d3(tmp_path / "d3", truth)
    (tmp_path / "spam.txt").write_text(spam_list())
    result = tianwang_cli("hosts", "filter", str(d3), "-o", str(tmp_path / "d4"),
                          "--spam-list", str(tmp_path / "spam.txt"))
    assert result.returncode == 0, result.stderr
    d4 = [line.split("\t") for line in (tmp_path / "d4").read_text().splitlines()]
    assert d4 == sorted([r["site"], str(r["group_pages"] or r["pages"])] for r in truth
                        if r["step"] is None)
    removed = [line.split("\t") for line in (tmp_path / "d4.removed").read_text().splitlines()]
    assert removed == sorted([r["site"], str(r["group_pages"] or r["pages"]), r["reason"]]
                             for r in truth if r["step"] == "D4")
    counts = Counter(r["reason"] for r in truth if r["step"] == "D4")
    total = sum(1 for r in truth if r["step"] in (None, "D4"))
    parts = ", ".join(f"{reason} {counts[reason]}" for reason in REASONS)
    lines = result.stdout.splitlines()
    assert lines[0] == (f"D4: {len(d4)} sites of {total} in D3; {sum(counts.values())} "
                        f"removed: {parts}")
    assert [line.split(":")[0] for line in lines[1:]] == [f"family {FAMILY_DOMAIN}"]


def test_min_pages_and_no_spam_list(tmp_path: Path, truth: list[dict], capsys) -> None:
    d3 = write_d3(tmp_path / "d3", truth)
    code, _out, err = run_in_process(capsys, "hosts", "filter", str(d3), "-o",
                                     str(tmp_path / "d4"), "--min-pages", "1", "--removed",
                                     str(tmp_path / "gone"))
    assert code == 0 and err == ""  # no progress bar off a terminal
    reasons = Counter(line.rsplit("\t", 1)[1] for line in
                      (tmp_path / "gone").read_text().splitlines())
    # Without the list, fangwen.com's letter-led hosts pass the list rule and are found as a
    # family of alike sizes; a8blog.cn's u-hosts are half its family and found with it.
    assert reasons["spam"] == 0 and reasons["small"] == 0
    spam_hosts = sum(1 for r in truth if r["reason"] == "spam")
    families = sum(1 for r in truth if r["reason"] == "family")
    assert reasons["family"] == families + spam_hosts


@pytest.mark.parametrize(
    ("files", "args", "message"),
    [
        ({}, (), "d3: No such file or directory"),
        ({"d3": "http://a.com:80/\t12\nhttp://b.com:80/\tmany\n"}, (),
         "d3: line 2: expected <site>\\t<pages>"),
        ({"d3": "http://a.com:80/\t12\nhttp://a.com:80/\t12\n"}, (),
         "d3: line 2: site http://a.com:80/ written twice"),
        ({"d3": "http://a.com:80/\t12\n", "spam": "ok.com\n(unclosed\n"}, ("--spam-list",),
         "spam list"),
        ({"d3": "http://a.com:80/\t12\n"}, ("--spam-list",), "spam list"),
    ],
)
def test_bad_input_is_one_line_and_nothing_is_written(tmp_path: Path, files: dict[str, str],
                                                      args: tuple[str, ...],
                                                      message: str, capsys) -> None:
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    extra = [*args, str(tmp_path / "spam")] if args else []
    code, _out, err = run_in_process(capsys, "hosts", "filter", str(tmp_path / "d3"), "-o",
                                     str(tmp_path / "d4"), *extra)
    assert code == 1
    [line] = err.splitlines()
    assert message in line and line.endswith("d4 not written")
    if "spam" in files:
        assert "line 2: bad regex '(unclosed'" in line
    assert not (tmp_path / "d4").exists() and not (tmp_path / "d4.removed").exists()


def test_min_pages_must_be_positive(tmp_path: Path, capsys) -> None:
    code, _out, err = run_in_process(capsys, "hosts", "filter", "d3", "-o", str(tmp_path / "d4"),
                                     "--min-pages", "0")
    assert code == 2 and "must be at least 1" in err
