"""`tianwang hosts dealias`: one name per homepage MD5, held to the test web's truth."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.commandline import run_in_process
from tests.conftest import COLLECTION_HOSTS, COLLECTION_PAGES, COLLECTION_SEED, tianwang_cli
from tianwang.collection.dealias import dealias
from tianwang.collection.hosttable import Checked
from tianwang.testweb.hostlist import CollectionWeb

MD5 = "0" * 32


def row(site: str, pages: int, md5: str = MD5) -> Checked:
    return Checked(site, pages, 200, md5, site)


@pytest.mark.parametrize(
    ("names", "kept"),
    [
        # www before more pages
        ([("http://www.a.com:80/", 5), ("http://a.com:80/", 50)], "http://www.a.com:80/"),
        # no www name: the most pages
        ([("http://bbs.a.com:80/", 5), ("http://forum.a.com:80/", 9)], "http://forum.a.com:80/"),
        # a tie: the smallest site string
        ([("http://news.a.com:80/", 7), ("http://mirror.a.com:80/", 7)],
         "http://mirror.a.com:80/"),
        # the default port before www and pages
        ([("http://www.a.com:8080/", 90), ("http://a.com:80/", 3)], "http://a.com:80/"),
        # a name before an IP address
        ([("http://61.135.169.125:80/", 90), ("http://a.com:80/", 3)], "http://a.com:80/"),
        # https on 443 is on its default port
        ([("https://www.a.com:443/", 2), ("http://a.com:8000/", 30)], "https://www.a.com:443/"),
        # three names: www wins, among www names the most pages
        ([("http://a.com:80/", 99), ("http://www.a.com:80/", 4), ("http://www.a.net:80/", 6)],
         "http://www.a.net:80/"),
    ],
)
def test_the_kept_name(names: list[tuple[str, int]], kept: str) -> None:
    rows = [row(site, pages) for site, pages in names]
    [result], aliases = dealias(reversed(rows))
    assert result.site == kept
    assert result.pages == sum(p for _s, p in names)  # the group's pages, summed
    assert result.aliases == len(names) - 1
    assert sorted(a.site for a, _k in aliases) == sorted(s for s, _p in names if s != kept)
    assert all(k == kept for _a, k in aliases)


def test_different_homepages_stay_apart() -> None:
    kept, aliases = dealias([row("http://b.com:80/", 3, "1" * 32), row("http://a.com:80/", 4)])
    assert [r.site for r in kept] == ["http://a.com:80/", "http://b.com:80/"]
    assert aliases == [] and all(r.aliases == 0 for r in kept)


@pytest.fixture(scope="module")
def truth() -> list[dict]:
    return list(CollectionWeb(COLLECTION_SEED, COLLECTION_HOSTS, COLLECTION_PAGES).truth())


def write_d2(path: Path, truth: list[dict]) -> Path:
    """D2 as truth says validate must write it: every reachable site, sorted."""
    rows = [r for r in truth if r["step"] not in ("D1", "D2")]
    lines = [f"{r['site']}\t{r['pages']}\t200\t{r['md5']}\t{r['final_url']}\n"
             for r in sorted(rows, key=lambda r: r["site"])]
    path.write_text("".join(lines), encoding="utf-8")
    return path


def test_d3_and_aliases_equal_truth(tmp_path: Path, truth: list[dict]) -> None:
    d2 = write_d2(tmp_path / "d2", truth)
    result = tianwang_cli("hosts", "dealias", str(d2), "-o", str(tmp_path / "d3"))
    assert result.returncode == 0, result.stderr
    d3 = [line.split("\t") for line in (tmp_path / "d3").read_text().splitlines()]
    survivors = {r["site"]: r for r in truth if r["step"] in (None, "D4")}
    assert [parts[0] for parts in d3] == sorted(survivors)
    for site, pages, status, md5, final_url, aliases in d3:
        record = survivors[site]
        assert int(pages) == (record["group_pages"] or record["pages"])
        assert (status, md5, final_url) == ("200", record["md5"], record["final_url"])
        assert int(aliases) == (1 if record["group_pages"] else 0)
    aliases = [line.split("\t") for line in (tmp_path / "d3.aliases").read_text().splitlines()]
    expected = sorted((r["site"], str(r["pages"]), r["alias_of"]) for r in truth
                      if r["class"] == "alias")
    assert [tuple(a) for a in aliases] == expected
    reachable = sum(1 for r in truth if r["step"] not in ("D1", "D2"))
    assert result.stdout.splitlines()[0].startswith(
        f"D3: {len(survivors)} sites of {reachable} in D2; {len(expected)} aliases removed")


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "d2: No such file or directory"),
        (f"http://a.com:80/\t3\t200\t{MD5}\thttp://a.com/\nhttp://b.com:80/\t3\n",
         "d2: line 2: expected <site>\\t<pages>\\t<status>\\t<md5>\\t<final_url>"),
        ("http://a.com:80/\t3\t200\tnot-an-md5\thttp://a.com/\n", "d2: line 1: expected"),
        (f"a.com\t3\t200\t{MD5}\thttp://a.com/\n", "d2: line 1: expected"),
        (f"http://a.com:80/\t3\t200\t{MD5}\thttp://a.com/\n" * 2,
         "d2: line 2: site http://a.com:80/ written twice"),
    ],
)
def test_bad_input_is_one_line_and_nothing_is_written(tmp_path: Path, content: str | None,
                                                      message: str, capsys) -> None:
    d2, d3 = tmp_path / "d2", tmp_path / "d3"
    if content is not None:
        d2.write_text(content, encoding="utf-8")
    d3.write_text("earlier\n")
    code, _out, err = run_in_process(capsys, "hosts", "dealias", str(d2), "-o", str(d3))
    assert code == 1
    [line] = err.splitlines()
    assert message in line and line.endswith(f"{d3} not written")
    assert d3.read_text() == "earlier\n" and not (tmp_path / "d3.aliases").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["d3"] + (["d2"] if content is not None else []))
