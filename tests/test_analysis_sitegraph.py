"""Reading site graphs from a recorded graph directory (the UCI format) and from a crawl's
links.tsv; every expected value is worked out by hand from the files written here."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import tianwang_cli
from tianwang.analysis.sitegraph import (
    GraphDirError,
    choose_homepage,
    read_recorded_graph,
    read_sites,
)
from tianwang.formats.linksfile import LinkGraphWriter


def write_recorded(directory: Path, pages: list[tuple[int, str]], edges: list[tuple[int, int]],
                   ) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "pages.tsv").write_text(
        "id\turl\thost\n" + "".join(f"{i}\t{url}\t{url.split('/')[2]}\n" for i, url in pages))
    (directory / "edges.tsv").write_text(
        "src_id\tdst_id\n" + "".join(f"{a}\t{b}\n" for a, b in edges))
    return directory


# a.test: its root (https), two pages reached from it and one nobody links (left out);
# b.test: no root page; /x/ reaches two pages, /y.html only itself.
PAGES = [
    (10, "https://a.test/"),
    (11, "https://a.test/k/1.html"),
    (12, "https://a.test/k/2.html"),
    (13, "https://a.test/lost.html"),
    (20, "http://b.test/y.html"),
    (21, "http://b.test/x/"),
    (22, "http://b.test/x/1.html"),
    (23, "http://b.test/x/2.html"),
]
EDGES = [
    (10, 11), (11, 12), (12, 10),
    (10, 11),  # a repeated edge: counted once
    (11, 11),  # a self link: left out
    (12, 21),  # to another host: left out of both sites
    (13, 10),
    (21, 22), (22, 23), (23, 21), (20, 22), (22, 20),
]


def test_read_recorded_graph_maps_ids_to_urls(tmp_path: Path) -> None:
    graph = read_recorded_graph(write_recorded(tmp_path, PAGES, EDGES))
    assert graph.urls == [url for _id, url in PAGES]
    # ids 10.. are lines 0..: edge (10, 11) is (0, 1), (20, 22) is (4, 6)
    assert list(graph.edges())[:3] == [(0, 1), (1, 2), (2, 0)]
    assert (4, 6) in list(graph.edges())
    assert len(graph.sources) == len(EDGES)


def test_read_recorded_graph_with_ids_in_line_order(tmp_path: Path) -> None:
    pages = [(0, "http://c.test/"), (1, "http://c.test/a/1.html")]
    graph = read_recorded_graph(write_recorded(tmp_path, pages, [(0, 1), (1, 0)]))
    assert graph.urls == ["http://c.test/", "http://c.test/a/1.html"]
    assert list(graph.edges()) == [(0, 1), (1, 0)]


def test_sites_of_a_recorded_graph(tmp_path: Path) -> None:
    sites = read_sites(write_recorded(tmp_path, PAGES, EDGES))
    a = sites["a.test"]
    assert a.homepage == "https://a.test/"
    assert a.links == {
        "https://a.test/": ["https://a.test/k/1.html"],
        "https://a.test/k/1.html": ["https://a.test/k/2.html"],
        "https://a.test/k/2.html": ["https://a.test/"],
    }
    assert a.depth == {"https://a.test/": 0, "https://a.test/k/1.html": 1,
                       "https://a.test/k/2.html": 2}
    assert (a.pages, a.unreached) == (3, 1)  # lost.html links the root, nothing links it
    b = sites["b.test"]
    # no root: each of the four pages reaches all four; x/1.html has the highest in-degree
    # (2: from x/ and y.html; the others 1)
    assert b.homepage == "http://b.test/x/1.html"
    assert (b.pages, b.unreached) == (4, 0)


def test_min_pages_and_one_site(tmp_path: Path) -> None:
    directory = write_recorded(tmp_path, PAGES, EDGES)
    assert list(read_sites(directory, min_pages=4)) == ["b.test"]
    assert list(read_sites(directory, site="A.test")) == ["a.test"]


def test_homepage_is_the_page_reaching_most_when_there_is_no_root() -> None:
    table = {
        "http://h.test/a/": ["http://h.test/a/1.html"],  # reaches 2
        "http://h.test/a/1.html": [],
        "http://h.test/b/x/y/z.html": ["http://h.test/a/", "http://h.test/c.html"],  # 4
        "http://h.test/c.html": [],
    }
    assert choose_homepage("h.test", table) == "http://h.test/b/x/y/z.html"


def test_sites_of_a_crawl(tmp_path: Path) -> None:
    home, a1, a2, moved = ("http://s.test/", "http://s.test/a/1.html", "http://s.test/a/2.html",
                           "http://s.test/a/new.html")
    with LinkGraphWriter(tmp_path) as writer:
        writer.add("s.test", home, None, [a1, "http://s.test/logo.png", "http://o.test/"])
        writer.add("s.test", a1, home, [a2, a1, "http://s.test/a/old.html"])
        writer.add("s.test", a2, a1, [home])
        # reached through a redirect from /a/old.html, which a1 links: only the parent says so
        writer.add("s.test", moved, a1, [])
        writer.add("s.test", a2, a1, [])  # a revisit: its last line is its links now
        writer.add("o.test", "http://o.test/", home, [home])
    sites = read_sites(tmp_path)
    assert sorted(sites) == ["o.test", "s.test"]
    assert sites["s.test"].links == {home: [a1], a1: [a2, moved], a2: [], moved: []}
    assert sites["o.test"].links == {"http://o.test/": []}


def test_damaged_links_lines_are_skipped_and_the_commands_say_so(tmp_path: Path) -> None:
    home, page = "http://s.test/", "http://s.test/a/1.html"
    with LinkGraphWriter(tmp_path) as writer:
        writer.add("s.test", home, None, [page])
        writer.add("s.test", page, home, [home])
    links = next(tmp_path.glob("data_*/s.test/links.tsv"))
    # NUL bytes, an undecodable byte and a bad host, as a damaged disk or an editor leaves them
    links.write_bytes(links.read_bytes() + b"http://s.test/\x00x\t" + home.encode() + b"\n"
                      b"http://s.t\xffest/\t\n\x00\x00\x00\thttp://[bad/\n")
    sites = read_sites(tmp_path)
    assert sites["s.test"].links == {home: [page], page: [home]}
    for command in (["stats", str(tmp_path)],
                    ["plan", str(tmp_path), "--crawlers", "2", "--out", str(tmp_path / "p")]):
        result = tianwang_cli("partition", *command)
        assert result.returncode == 0, result.stderr
        assert "Traceback" not in result.stderr
        assert "skipped 3 links.tsv lines" in result.stderr
    assert "s.test" in (tmp_path / "p").read_text()


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda d: d / "missing", "is not a directory"),
        (lambda d: d, "no link graph in"),
    ],
)
def test_a_directory_without_a_graph(tmp_path: Path, make, message: str) -> None:
    with pytest.raises(GraphDirError, match=message):
        read_sites(make(tmp_path))


def test_an_unknown_site(tmp_path: Path) -> None:
    with pytest.raises(GraphDirError, match="site z.test is not in the link graph"):
        read_sites(write_recorded(tmp_path, PAGES, EDGES), site="z.test")


@pytest.mark.parametrize(
    ("pages", "edges", "message"),
    [
        ("id\turl\thost\nx\thttp://a.test/\ta.test\n", "src_id\tdst_id\n", r"pages.tsv line 2"),
        ("id\turl\thost\n0\thttp://a.test/\ta.test\n", "src_id\tdst_id\n0\t7\n",
         r"edges.tsv line 2: edge '0' -> '7' does not name two pages"),
        ("id\turl\thost\n0\thttp://a.test/\ta.test\n", "src_id\tdst_id\n0 0\n",
         r"edges.tsv line 2: 1 field"),
    ],
)
def test_a_bad_recorded_graph_names_file_and_line(tmp_path: Path, pages, edges, message) -> None:
    (tmp_path / "pages.tsv").write_text(pages)
    (tmp_path / "edges.tsv").write_text(edges)
    with pytest.raises(GraphDirError, match=message):
        read_recorded_graph(tmp_path)
