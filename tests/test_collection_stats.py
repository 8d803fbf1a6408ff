"""`tianwang stats`: seed 004's chapter 4 tables of a sampled collection, checked against
the test web's truth for the sampled pages; the site-size slope against the generator's."""

from __future__ import annotations

import posixpath
from collections import Counter, defaultdict
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.collection_crawl import CollectionCrawl
from tests.commandline import on_terminal
from tests.conftest import tianwang_cli
from tests.truth import host_of
from tianwang.collection.pageclass import domain_type, is_dynamic, page_form
from tianwang.collection.sizefit import fit_sizes
from tianwang.formats import Record, RecordStore, build_http_response, iter_tree, record_files
from tianwang.testweb.layout import SIZE_EXPONENT, draw_size
from tianwang.testweb.model import SyntheticWeb
from tianwang.testweb.sitebuilder import SiteBuilder

DATE = "Sun, 22 Nov 2026 05:16:17 GMT"

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def tables(report: str) -> dict[str, list[list[str]]]:
    """The report's Markdown tables by the heading above them: rows of cells, no header."""
    found: dict[str, list[list[str]]] = {}
    heading = ""
    for line in report.splitlines():
        if line.startswith("## "):
            heading = line[3:]
        elif line.startswith("|") and not line.startswith("|---"):
            found.setdefault(heading, []).append([c.strip() for c in line.strip("|").split("|")])
    return {name: rows[1:] for name, rows in found.items()}  # drop each header row


def number(cell: str) -> int:
    return int(cell.split()[0].replace(",", ""))


def truth_form(url: str) -> str:
    path = urlsplit(url).path
    return "/" if path in ("", "/") or path.endswith("/") else posixpath.splitext(path)[1][1:]


def truth_dynamic(url: str) -> bool:
    return bool(urlsplit(url).query) or truth_form(url) in ("asp", "php")


@pytest.fixture(scope="module")
def sampled(collection_crawl: CollectionCrawl, tmp_path_factory: pytest.TempPathFactory):
    """The seed-1 sample of the crawl, its stats report and plot, and its pages' truth."""
    base = tmp_path_factory.mktemp("stats")
    run = tianwang_cli("sample", str(collection_crawl.dedup), "--out", str(base / "sample"),
                       "--seed", "1")
    assert run.returncode == 0, run.stderr
    hosts = {host_of(record.url) for _path, record in iter_tree(base / "sample")}
    run = tianwang_cli("stats", str(base / "sample"), "--plot", str(base / "sizes.png"))
    assert run.returncode == 0, run.stderr
    pages = {url: page for url, page in collection_crawl.expected.items()
             if host_of(url) in hosts}
    return {"report": run.stdout, "plot": base / "sizes.png", "pages": pages, "dir": base}


def test_size_table_equals_the_truth_of_the_sampled_pages(sampled: dict) -> None:
    pages = sampled["pages"]
    size = {row[0]: row[1] for row in tables(sampled["report"])["Size"]}
    hosts = {host_of(url) for url in pages}
    body_bytes = sum(page["bytes"] for page in pages.values())
    assert number(size["pages"]) == len(pages)
    assert number(size["sites"]) == len(hosts)
    assert number(size["bytes"]) == body_bytes
    assert number(size["average page size"]) == round(body_bytes / len(pages))
    assert size["pages per site"].startswith(f"{len(pages) / len(hosts):,.1f} ")
    assert number(size["dynamic pages"]) == sum(map(truth_dynamic, pages))


def test_domain_types_equal_the_truth_of_the_sampled_pages(sampled: dict) -> None:
    pages = sampled["pages"]
    expected: defaultdict[str, list] = defaultdict(lambda: [0, 0, set()])
    for url in pages:
        host = host_of(url)
        row = expected["." + host.split(".", 2)[2]]  # the test web: prefix.wordN.tld
        row[0] += 1
        row[1] += truth_dynamic(url)
        row[2].add(host)
    rows = tables(sampled["report"])["Domain types"]
    got = {row[0]: (number(row[2]), number(row[3]), number(row[4])) for row in rows}
    assert {name: v for name, v in got.items() if v[0]} == {
        name: (p, d, len(h)) for name, (p, d, h) in expected.items()}
    assert len(rows) == 12  # every type of seed 004's table, empty ones too
    assert [number(row[2]) for row in rows] == sorted((number(row[2]) for row in rows),
                                                      reverse=True)


def test_page_forms_equal_the_truth_of_the_sampled_pages(sampled: dict) -> None:
    pages = sampled["pages"]
    expected = Counter(truth_form(url) for url in pages)
    dynamic = Counter(truth_form(url) for url in pages if truth_dynamic(url))
    rows = tables(sampled["report"])["Page forms"]
    assert {row[0]: number(row[2]) for row in rows} == dict(expected)
    assert {row[0]: number(row[3]) for row in rows if number(row[3])} == dict(dynamic)
    assert {"/", "html", "htm", "shtml", "asp", "php", "txt"} <= set(expected)


def test_the_site_sizes_are_plotted_with_their_fitted_slope(sampled: dict) -> None:
    assert sampled["plot"].read_bytes().startswith(PNG_MAGIC)
    sizes = Counter(host_of(url) for url in sampled["pages"]).values()
    line = next(x for x in sampled["report"].splitlines() if x.startswith("fitted slope:"))
    assert f"on sizes {min(sizes)}..{max(sizes)}, {len(sizes)} sites" in line
    assert str(sampled["plot"]) in sampled["report"]


@pytest.mark.parametrize("seed", [1, 11, 23])
def test_the_slope_of_a_large_test_webs_site_sizes_is_the_generators(seed: int) -> None:
    """5,000 sites' sizes as the test web's model draws them (no server: sizes only)."""
    hosts, max_pages = 5000, 300
    web = SyntheticWeb(seed, hosts, max_pages)
    sizes = [SiteBuilder(seed, i, hosts, web.hosts.__getitem__, max_pages).size
             for i in range(hosts)]
    fit = fit_sizes(sizes)
    assert fit is not None and abs(fit.alpha - SIZE_EXPONENT) < 0.05
    assert fit.slope == -fit.alpha


def test_the_fit_recovers_other_exponents_and_refuses_a_single_size(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Sizes drawn by the generator's own function with its exponent moved."""
    import random

    import tianwang.testweb.layout as layout

    for exponent in (0.3, 1.2):
        monkeypatch.setattr(layout, "SIZE_EXPONENT", exponent)
        monkeypatch.setattr(layout, "_CUMULATIVE", {})  # its cache of the old exponent's sums
        rng = random.Random(3)
        fit = fit_sizes(draw_size(rng, 500) for _ in range(8000))
        assert fit is not None and abs(fit.alpha - exponent) < 0.05
    assert fit_sizes([7, 7, 7]) is None


@pytest.mark.parametrize(("host", "expected"), [
    ("www.pku.edu.cn", ".edu.cn"), ("www.sina.com.cn", ".com.cn"), ("www.ict.ac.cn", ".ac.cn"),
    ("www.beijing.gov.cn", ".gov.cn"), ("a.b.net.cn", ".net.cn"), ("www.cctv.org.cn", ".org.cn"),
    ("www.bjpc.bj.cn", "province .cn"), ("www.sh.cn", "province .cn"),
    ("news.xj.cn", "province .cn"), ("www.foo.cn", ".cn"), ("foo.cn", ".cn"),
    ("WWW.SOHU.COM", ".com"), ("www.sohu.com:8080", ".com"), ("bbs.abc.net", ".net"),
    ("www.w3.org", ".org"), ("www.example.jp", "other"), ("162.105.80.1", "other"),
    ("[::1]", "other"), ("localhost", "other"),
])
def test_domain_type_of_a_host(host: str, expected: str) -> None:
    assert domain_type(host) == expected


@pytest.mark.parametrize(("url", "form", "dynamic"), [
    ("http://a.com/", "/", False), ("http://a.com", "/", False), ("http://a.com/cs/", "/", False),
    ("http://a.com/show.asp?id=1", "asp", True), ("http://a.com/x/INDEX.PHP", "php", True),
    ("http://a.com/a.html", "html", False), ("http://a.com/a.htm?sessionid=9", "htm", True),
    ("http://a.com/a.shtml", "shtml", False), ("http://a.com/cgi-bin/q.cgi", "cgi", True),
    ("http://a.com/a.jsp;jsessionid=1", "jsp", True), ("http://a.com/x.php3", "php3", True),
    ("http://a.com/readme.txt", "txt", False), ("http://a.com/cs", "(none)", False),
    ("http://a.com/list?page=2", "(none)", True), ("http://a.com/a.b-c", "other", False),
    ("http://a.com/v1.2/", "/", False),
])
def test_page_form_and_dynamic_of_a_url(url: str, form: str, dynamic: bool) -> None:
    assert (page_form(url), is_dynamic(url)) == (form, dynamic)


def test_a_tree_without_records_is_an_error(tmp_path: Path) -> None:
    run = tianwang_cli("stats", str(tmp_path))
    assert run.returncode == 1 and "holds no records" in run.stderr


def test_the_report_goes_to_a_file_with_a_count_line_and_one_worker_agrees(
    sampled: dict,
) -> None:
    out = sampled["dir"] / "report.md"
    run = tianwang_cli("stats", str(sampled["dir"] / "sample"), "--out", str(out),
                       "--workers", "1")
    assert run.returncode == 0, run.stderr
    assert out.read_text(encoding="utf-8") == sampled["report"].replace(
        f"\n![site sizes on log-log axes]({sampled['plot']})\n", "")
    assert run.stdout.startswith(f"stats: {len(sampled['pages']):,} pages")


def test_a_progress_bar_on_a_terminal(sampled: dict) -> None:
    code, stdout, shown = on_terminal("stats", str(sampled["dir"] / "sample"))
    assert code == 0 and b"stats " in shown and b"100.0%" in shown
    assert stdout.startswith(b"# Collection statistics")


def test_damage_is_named_and_every_record_that_reads_is_counted(tmp_path: Path) -> None:
    with RecordStore(tmp_path) as store:
        for n in range(5):
            data = build_http_response(200, [], b"page %d" % n)
            store.write("www.a.cn", Record(f"http://www.a.cn/{n}.html", data, DATE))
    [path] = record_files(tmp_path)
    blob = path.read_bytes()
    third = blob.index(b"version: ", blob.index(b"version: ", 1) + 1)
    path.write_bytes(blob[:third] + b"\x00" * 30 + blob[third + 30:])
    out = tmp_path / "report.md"
    run = tianwang_cli("stats", str(tmp_path), "--out", str(out), "--workers", "1")
    assert run.returncode == 1 and "Traceback" not in run.stderr
    assert f"damaged, not counted: {path}: offset {third} (" in run.stderr
    assert run.stdout.startswith("stats: 4 pages, 1 sites")


def test_provinces_equal_the_truth_of_the_sampled_pages(sampled: dict) -> None:
    """Table 4.4 on the sample: a registry file gives each wordN.tld of the test web's names
    a province (N mod 31 of the 31, every third left out): the table must hold the truth
    pages of each; an unlisted one goes where its name places it (qingdao17.com: Shandong,
    tests/test_collection_provinces.py holds that rule to real names), else under "other"."""
    from tianwang.collection.provinces import LABELS, province_of

    pages = sampled["pages"]
    registry: dict[str, str] = {}
    for host in {host_of(url) for url in pages}:
        domain = host.split(".", 1)[1]  # wordN.tld
        index = int("".join(c for c in domain.split(".")[0] if c.isdigit()))
        if index % 3:
            registry[domain] = LABELS[index % 31]
    path = sampled["dir"] / "registry.txt"
    path.write_text("".join(f"{d} {p.split()[-1]}\n" for d, p in sorted(registry.items())),
                    encoding="utf-8")
    run = tianwang_cli("stats", str(sampled["dir"] / "sample"), "--provinces", str(path))
    assert run.returncode == 0, run.stderr
    expected: defaultdict[str, list] = defaultdict(lambda: [0, 0, set()])
    for url in pages:
        host = host_of(url)
        row = expected[registry.get(host.split(".", 1)[1]) or province_of(host)]
        row[0] += 1
        row[1] += truth_dynamic(url)
        row[2].add(host)
    rows = tables(run.stdout)["Provinces"]
    got = {row[0]: (number(row[2]), number(row[3]), number(row[4])) for row in rows}
    assert {name: v for name, v in got.items() if v[0]} == {
        name: (p, d, len(h)) for name, (p, d, h) in expected.items()}
    assert len(expected) > 3  # the sample spreads over several provinces
