"""The mirror table: lines as written, a cut last line skipped, mirror degrees."""

from __future__ import annotations

from pathlib import Path

from tianwang.formats.mirrors import (
    MIRRORS_FILE,
    Mirror,
    MirrorTable,
    iter_mirrors,
    mirror_degrees,
    mirrors_path,
)

MD5 = "0cc175b9c0f1b6a831c399e269772661"


def test_a_tree_without_a_table_has_no_mirrors(tmp_path: Path) -> None:
    assert list(iter_mirrors(tmp_path)) == []
    assert mirror_degrees(tmp_path) == {}


def test_lines_read_back_in_order_from_the_data_dir(tmp_path: Path) -> None:
    with MirrorTable(tmp_path) as table:
        table.add(MD5, "http://a.cn/default.htm", "http://a.cn/")
        table.add(MD5, "http://b.cn/", "http://a.cn/")
    assert mirrors_path(tmp_path) == tmp_path / MIRRORS_FILE
    assert (tmp_path / "mirrors.tsv").read_text() == (
        f"{MD5}\thttp://a.cn/default.htm\thttp://a.cn/\n{MD5}\thttp://b.cn/\thttp://a.cn/\n"
    )
    assert list(iter_mirrors(tmp_path)) == [
        Mirror(MD5, "http://a.cn/default.htm", "http://a.cn/"),
        Mirror(MD5, "http://b.cn/", "http://a.cn/"),
    ]


def test_degree_counts_the_kept_url_and_its_copies(tmp_path: Path) -> None:
    with MirrorTable(tmp_path) as table:
        table.add(MD5, "http://a.cn/default.htm", "http://a.cn/")
        table.add(MD5, "http://a.cn/?sessionid=1", "http://a.cn/")
        table.add("92eb5ffee6ae2fec3ad71c777531578f", "http://c.cn/x", "http://b.cn/x")
    assert mirror_degrees(tmp_path) == {"http://a.cn/": 3, "http://b.cn/x": 2}


def test_a_line_cut_by_a_crash_is_not_read_and_is_repaired_on_open(tmp_path: Path) -> None:
    path = tmp_path / "mirrors.tsv"
    path.write_text(f"{MD5}\thttp://b.cn/\thttp://a.cn/\n{MD5}\thttp://c.cn/\thttp://a")
    assert [m.duplicate for m in iter_mirrors(tmp_path)] == ["http://b.cn/"]
    with MirrorTable(tmp_path) as table:
        table.add(MD5, "http://d.cn/", "http://a.cn/")
    assert [m.duplicate for m in iter_mirrors(tmp_path)] == ["http://b.cn/", "http://d.cn/"]
    assert mirror_degrees(tmp_path) == {"http://a.cn/": 3}


def test_a_line_of_the_wrong_width_is_skipped(tmp_path: Path) -> None:
    (tmp_path / "mirrors.tsv").write_text(f"{MD5}\thttp://b.cn/\nx\ty\tz\n")
    assert list(iter_mirrors(tmp_path)) == [Mirror("x", "y", "z")]
