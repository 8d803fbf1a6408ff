"""The link graph: one line per page beside its host's records; edges; lookup by url."""

from __future__ import annotations

from pathlib import Path

import pytest

from tianwang.formats.linksfile import (
    LinkGraphWriter,
    PageLinks,
    iter_edges,
    iter_pages,
    link_files,
    links_path,
    out_links,
)
from tianwang.formats.store import page_path

A, B = "http://www.pku.edu.cn", "http://www.tsinghua.edu.cn"


def test_lines_go_beside_the_hosts_records(tmp_path: Path) -> None:
    with LinkGraphWriter(tmp_path) as writer:
        writer.add("WWW.PKU.EDU.CN", f"{A}/", None, [f"{A}/news/", f"{B}/"])
        writer.add("www.tsinghua.edu.cn", f"{B}/", "", [])
    records = page_path(tmp_path, "www.pku.edu.cn")
    assert links_path(tmp_path, "www.pku.edu.cn") == records.with_name("links.tsv")
    assert (links_path(tmp_path, "www.pku.edu.cn")).read_text() == f"{A}/\t\t{A}/news/\t{B}/\n"
    assert (links_path(tmp_path, "www.tsinghua.edu.cn")).read_text() == f"{B}/\t\n"
    assert len(link_files(tmp_path)) == 2


def test_pages_and_edges_read_back(tmp_path: Path) -> None:
    with LinkGraphWriter(tmp_path) as writer:
        writer.add("www.pku.edu.cn", f"{A}/", None, [f"{A}/a", f"{A}/b"])
        writer.add("www.pku.edu.cn", f"{A}/a", f"{A}/", [f"{A}/b"])
    assert list(iter_pages(tmp_path)) == [
        PageLinks(f"{A}/", "", [f"{A}/a", f"{A}/b"]),
        PageLinks(f"{A}/a", f"{A}/", [f"{A}/b"]),
    ]
    assert list(iter_edges(tmp_path)) == [(f"{A}/", f"{A}/a"), (f"{A}/", f"{A}/b"),
                                          (f"{A}/a", f"{A}/b")]


def test_out_links_of_a_url_are_its_latest_line(tmp_path: Path) -> None:
    with LinkGraphWriter(tmp_path) as writer:
        writer.add("www.pku.edu.cn", f"{A}/", None, [f"{A}/old"])
        writer.add("www.pku.edu.cn", f"{A}/", None, [f"{A}/new"])
    assert out_links(tmp_path, f"{A}/", "www.pku.edu.cn") == [f"{A}/new"]
    assert out_links(tmp_path, f"{A}/none", "www.pku.edu.cn") is None
    assert out_links(tmp_path, f"{B}/", "www.tsinghua.edu.cn") is None


def test_only_max_open_files_stay_open_and_closed_ones_reopen(tmp_path: Path) -> None:
    hosts = [f"h{i}.example.com" for i in range(5)]
    with LinkGraphWriter(tmp_path, max_open=2) as writer:
        for round_ in range(2):
            for host in hosts:
                writer.add(host, f"http://{host}/{round_}", None, [])
                assert len(writer._open) <= 2
    urls = [page.url for page in iter_pages(tmp_path)]
    for host in hosts:
        assert [url for url in urls if host in url] == [f"http://{host}/0", f"http://{host}/1"]


def test_a_line_cut_by_a_crash_is_skipped_and_repaired(tmp_path: Path) -> None:
    path = links_path(tmp_path, "www.pku.edu.cn")
    path.parent.mkdir(parents=True)
    path.write_text(f"{A}/\t\t{A}/a\n{A}/a\t{A}/\t{A}/")
    assert [p.url for p in iter_pages(tmp_path)] == [f"{A}/"]
    with LinkGraphWriter(tmp_path) as writer:
        writer.add("www.pku.edu.cn", f"{A}/b", f"{A}/", [])
    assert [p.url for p in iter_pages(tmp_path)] == [f"{A}/", f"{A}/b"]


def test_bad_max_open_and_a_link_with_a_tab_are_refused(tmp_path: Path) -> None:
    from tianwang.formats.lines import LineError

    with pytest.raises(ValueError, match="max_open"):
        LinkGraphWriter(tmp_path, max_open=0)
    with LinkGraphWriter(tmp_path) as writer, pytest.raises(LineError):
        writer.add("www.pku.edu.cn", f"{A}/", None, [f"{A}/a\tb"])
    assert list(iter_pages(tmp_path)) == []
