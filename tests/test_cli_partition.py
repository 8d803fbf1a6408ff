"""`tianwang partition plan | simulate | stats` on hand-made graphs: every expected value is
worked out by hand in the comments, from the files the tests write."""

from __future__ import annotations

import csv
import json
import math
import re
from pathlib import Path

import pytest

from tests.test_analysis_sitegraph import write_recorded
from tianwang.analysis.sitepartition import Plan
from tianwang.cli import main
from tianwang.formats.linksfile import LinkGraphWriter
from tianwang.formats.partitionplan import PlanFile, SitePlan, load_plan

UCI = Path(__file__).resolve().parents[2] / "shared/data/uci-ics-dev-crawl"
ONE_CRAWLER_SCORE = (1 - 0.8) / math.sqrt(max(0.0, 0.2))  # A^2 (C - eps)/sqrt(max(O, delta))

S = "http://s.test"
H = S + "/"
A1, A2, A3, A4 = (f"{S}/a/{n}.html" for n in range(1, 5))
B1, B2, B3 = (f"{S}/b/{n}.html" for n in range(1, 4))
C1, C2, C3, C4 = (f"{S}/c/{n}.html" for n in range(1, 5))
OTHER = "http://o.test/"


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["partition", *args])
    out, err = capsys.readouterr()
    return code, out, err


# --- plan on a crawl -----------------------------------------------------------------------


@pytest.fixture
def crawl(tmp_path: Path) -> Path:
    """A crawl's links.tsv: s.test as in test_analysis_partition's graph, plus C4, reached
    from C1 through a redirect (C1 links /c/old.html; only C4's parent says so), a revisit
    of A4 whose links changed, links to an image and to o.test; and o.test, one page."""
    data = tmp_path / "data"
    with LinkGraphWriter(data) as w:
        w.add("s.test", H, None, [A1, B1, C1, S + "/logo.png", OTHER])
        w.add("s.test", A1, H, [A2, A3])
        w.add("s.test", B1, H, [B2, B3, A1])
        w.add("s.test", C1, H, [C2, S + "/c/old.html"])
        w.add("s.test", A2, A1, [A4])
        w.add("s.test", A3, A1, [B1])
        w.add("s.test", B2, B1, [B1])
        w.add("s.test", B3, B1, [C2, C3])
        w.add("s.test", C2, C1, [C1, A2])
        w.add("s.test", C4, C1, [])
        w.add("s.test", A4, A2, [B3])  # first visit
        w.add("s.test", C3, B3, [])
        w.add("s.test", A4, A2, [A1])  # revisit: its links now
        w.add("o.test", OTHER, H, [H])
    return data


# s.test: 12 pages: a 4, c 4 (C1-C4), b 3, s.test/ 1. 0.9 * 12 = 10.8: a (4), c (8; a and c
# tie at 4, a first by key), b (11): the key paths. N = 2: a -> 0 (4); c -> 1 (4); b: 4 and 4
# tie, the lower index: 0 (7).
# In-degrees: A1 3 (H, B1, A4's last line), A2 2, B1 3, B2 1, B3 1 (A4's first line no
# longer counts), C1 2 (H, C2), C2 2 (C1, B3), C3 1, C4 1 (the parent link from C1).
# Depths: A1 B1 C1 1; A2 A3 B2 B3 C2 C4 2. Seeds: a: A1, A2; c: C1, C2 (tie at 2, C1
# shallower); b: B1, then B2 and B3 tie (1, depth 2): B2 by url. Crawler 0 gets a's then b's.
EXPECTED_PLAN = PlanFile(2, 0.9, {
    "o.test": SitePlan(OTHER, 1, Plan(2, {"o.test/": 0}, ((OTHER,), ()))),
    "s.test": SitePlan(H, 12, Plan(2, {"s.test/a": 0, "s.test/b": 0, "s.test/c": 1},
                                   ((A1, A2, B1, B2), (C1, C2)))),
})


def test_plan_of_a_crawl_equals_the_hand_computed_plan(
    capsys: pytest.CaptureFixture[str], crawl: Path, tmp_path: Path
) -> None:
    out_file = tmp_path / "plan.json"
    code, out, err = run(capsys, "plan", str(crawl), "--crawlers", "2", "--out", str(out_file))
    assert (code, err) == (0, "")
    assert load_plan(out_file) == EXPECTED_PLAN
    assert out.splitlines() == [
        f"o.test: 1 pages, homepage {OTHER}, 1 key paths, per crawler 1/0",
        f"s.test: 12 pages, homepage {H}, 3 key paths, per crawler 2/1",
        f"plan: 2 site(s), 2 crawler(s), key paths holding 0.9 of each site's urls -> {out_file}",
    ]


def test_plan_of_one_site_with_another_share(
    capsys: pytest.CaptureFixture[str], crawl: Path, tmp_path: Path
) -> None:
    # share 0.5: 6 of 12 urls: a (4) then c (8) -> a to crawler 0, c to crawler 1
    out_file = tmp_path / "plan.json"
    code, _out, _err = run(capsys, "plan", str(crawl), "--crawlers", "2", "--site", "s.test",
                           "--share", "0.5", "--out", str(out_file))
    assert code == 0
    plan_file = load_plan(out_file)
    assert (plan_file.share, list(plan_file.sites)) == (0.5, ["s.test"])
    assert plan_file.sites["s.test"].plan == Plan(
        2, {"s.test/a": 0, "s.test/c": 1}, ((A1, A2), (C1, C2)))


def test_score_for_one_crawler_is_0447_for_every_site(
    capsys: pytest.CaptureFixture[str], crawl: Path, tmp_path: Path
) -> None:
    report = tmp_path / "runs.json"
    code, _out, _err = run(capsys, "simulate", str(crawl), "--crawlers", "1",
                           "--json", str(report))
    assert code == 0
    sites = json.loads(report.read_text())["sites"]
    assert sorted(site["host"] for site in sites) == ["o.test", "s.test"]
    for site in sites:
        for run_ in site["runs"]:  # key-path, url-hash and site-hash
            assert run_["crawlers"] == 1
            assert run_["score"] == pytest.approx(ONE_CRAWLER_SCORE)
            assert round(run_["score"], 3) == 0.447


# --- simulate on a recorded graph ----------------------------------------------------------

URLS = [H, A1, A2, A3, A4, B1, B2, B3, C1, C2, C3]
LINKS = {
    H: [A1, B1, C1], A1: [A2, A3], A2: [A4], A3: [B1], A4: [A1], B1: [B2, B3, A1],
    B2: [B1], B3: [C2, C3], C1: [C2], C2: [C1, A2],
}


@pytest.fixture
def graph_dir(tmp_path: Path) -> Path:
    ids = {url: k for k, url in enumerate(URLS)}
    edges = [(ids[a], ids[b]) for a, targets in LINKS.items() for b in targets]
    return write_recorded(tmp_path / "graph", list(enumerate(URLS)), edges)


def medians(out: str, scheme: str, n: int) -> list[float]:
    """The medians of one row of the table (one site: median = both quartiles)."""
    section = out.split(f"\n{scheme}\n", 1)[1]
    row = next(line for line in section.splitlines() if line.split()[:1] == [str(n)])
    cells = re.findall(r"(\d+\.\d+) \[(\d+\.\d+)-(\d+\.\d+)\]", row)
    assert all(len(set(cell)) == 1 for cell in cells)  # q1 = median = q3 for one site
    return [float(cell[0]) for cell in cells]


def finding(out: str, label: str) -> list[str]:
    line = next(line for line in out.splitlines() if line.startswith(label))
    return line.split()[-3:]


# key-path (test_analysis_partition's hand simulation): N = 2: O 1/12, C 1, A 11/7;
# N = 3: O 2/12, C 10/11, A 11/5.
# url-hash, md5(url) mod N (first 8 bytes, big-endian), worked out once by hand:
#   N = 2: crawler 1 owns H, A1, A2; crawler 0 the rest. Crawler 0: H, B1, C1, B2, B3, C2,
#   C3 (A3 and A4 are linked only from crawler 1's pages) = 7; crawler 1: H, A1, A2 = 3.
#   N 10, I 9, M 7: O 0.1, C 9/11, A 11/7, score (11/7)^2 (9/11 - 0.8)/sqrt(0.2).
#   N = 3: owners 0: H B2 B3 C3; 1: A1 B1; 2: A2 A3 A4 C1 C2. Crawler 0: H; crawler 1: H,
#   A1, B1; crawler 2: H, C1, C2, A2, A4. N 9, I 7, M 5: O 2/9, C 7/11 < eps: score 0, A 2.2.
def score(o: float, c: float, a: float) -> float:
    return max(a * a * (c - 0.8) / math.sqrt(max(o, 0.2)), 0.0)


@pytest.mark.parametrize(
    ("scheme", "n", "expected"),
    [
        ("key-path", 1, (0, 1, 1, ONE_CRAWLER_SCORE)),
        ("key-path", 2, (1 / 12, 1, 11 / 7, score(1 / 12, 1, 11 / 7))),
        ("key-path", 3, (2 / 12, 10 / 11, 11 / 5, score(2 / 12, 10 / 11, 11 / 5))),
        ("url-hash", 1, (0, 1, 1, ONE_CRAWLER_SCORE)),
        ("url-hash", 2, (0.1, 9 / 11, 11 / 7, score(0.1, 9 / 11, 11 / 7))),
        ("url-hash", 3, (2 / 9, 7 / 11, 11 / 5, 0.0)),
        ("site-hash", 3, (0, 1, 1, ONE_CRAWLER_SCORE)),  # the site is one crawler's
    ],
)
def test_simulate_table_on_the_hand_graph(
    capsys: pytest.CaptureFixture[str], graph_dir: Path, scheme, n, expected
) -> None:
    code, out, err = run(capsys, "simulate", str(graph_dir), "--crawlers", "1-3")
    assert (code, err) == (0, "")
    assert out.startswith("1 sites, 11 pages")
    assert medians(out, scheme, n) == pytest.approx(expected, abs=5e-4)


def test_simulate_findings_on_the_hand_graph(
    capsys: pytest.CaptureFixture[str], graph_dir: Path
) -> None:
    _code, out, _err = run(capsys, "simulate", str(graph_dir), "--crawlers", "1-3")
    # columns key-path, url-hash, site-hash; from the values above
    assert finding(out, "overlap <= 10% at N=2") == ["100%", "100%", "100%"]  # 1/12, 0.1, 0
    assert finding(out, "coverage > 90% at N=2") == ["100%", "0%", "100%"]  # 1, 9/11, 1
    assert finding(out, "coverage > 90% at N=3") == ["100%", "0%", "100%"]  # 10/11, 7/11, 1
    assert finding(out, "acceleration 1.5-2 at N=2") == ["100%", "100%", "0%"]  # 11/7 twice
    assert finding(out, "acceleration 2.2-2.6 at N=3") == ["100%", "100%", "0%"]  # 2.2 twice
    assert finding(out, "score > 0.447 at N=2") == ["100%", "0%", "0%"]
    assert finding(out, "overlap <= 50% at N=10") == ["-", "-", "-"]  # N = 10 not run


def test_simulate_writes_the_four_figures_and_json(
    capsys: pytest.CaptureFixture[str], graph_dir: Path, tmp_path: Path
) -> None:
    plots, report = tmp_path / "plots", tmp_path / "runs.json"
    code, out, _err = run(capsys, "simulate", str(graph_dir), "--crawlers", "1-3",
                          "--plots", str(plots), "--json", str(report))
    assert code == 0
    names = ["overlap.png", "coverage.png", "acceleration.png", "score.png"]
    assert sorted(p.name for p in plots.iterdir()) == sorted(names)
    for name in names:
        assert (plots / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert f"plot: {plots / name}" in out
    (site,) = json.loads(report.read_text())["sites"]
    assert (site["host"], site["homepage"], site["pages"]) == ("s.test", H, 11)
    assert len(site["runs"]) == 9  # three schemes, N = 1..3


# --- the paper's two statistics ------------------------------------------------------------

# Share of each page's links within its own path key: H 0/3, A1 2/2, A2 1/1, A3 0/1, A4 1/1,
# B1 2/3, B2 1/1, B3 0/2, C1 1/1, C2 1/2 (C3 has no links): five 1s + 2/3 + 1/2 = 37/6
# over 10 pages = 61.67%.
# Path keys: s.test/, a, b, c; key paths a, b, c: 3/4 = 75%.
def test_stats_on_the_hand_graph(capsys: pytest.CaptureFixture[str], graph_dir: Path) -> None:
    code, out, _err = run(capsys, "stats", str(graph_dir))
    assert code == 0
    assert "links within the page's own path key: 61.67% (mean over 10 pages" in out
    assert "path keys holding 90% of a site's urls: 75.00% (mean over 1 sites" in out
    assert re.search(r"s\.test\s+11\s+61\.7%\s+4\s+3", out)


def test_simulate_prints_the_statistics_too(
    capsys: pytest.CaptureFixture[str], graph_dir: Path
) -> None:
    _code, out, _err = run(capsys, "simulate", str(graph_dir), "--crawlers", "2")
    assert "own path key: 61.67%" in out and "urls: 75.00%" in out


# --- bad input -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["plan", "{missing}", "--crawlers", "2"], "is not a directory"),
        (["plan", "{empty}", "--crawlers", "2"], "no link graph in"),
        (["plan", "{graph}", "--crawlers", "2", "--site", "z.test"], "site z.test is not in"),
        (["plan", "{graph}", "--crawlers", "0"], "crawler counts must be >= 1"),
        (["plan", "{graph}", "--crawlers", "two"], "is not N, A-B or N,N"),
        (["plan", "{graph}", "--crawlers", "1-3"], "plan takes one N"),
        (["plan", "{graph}", "--crawlers", "2", "--share", "1.5"], "must be in (0, 1]"),
        (["plan", "{graph}", "--crawlers", "2", "--min-pages", "50"], "has 50 or more pages"),
        (["simulate", "{graph}", "--crawlers", "0-3"], "crawler counts must be >= 1"),
        (["stats", "{missing}"], "is not a directory"),
    ],
)
def test_bad_input_is_one_line_status_2_and_no_file(
    capsys: pytest.CaptureFixture[str], graph_dir: Path, tmp_path: Path, args, message
) -> None:
    (tmp_path / "empty").mkdir()
    paths = {"missing": tmp_path / "missing", "empty": tmp_path / "empty", "graph": graph_dir}
    args = [arg.format(**paths) for arg in args]
    out_file = tmp_path / "plan.json"
    if args[0] == "plan":
        args += ["--out", str(out_file)]
    code, out, err = run(capsys, *args)
    assert code == 2
    assert out == ""
    assert len(err.splitlines()) == 1
    assert err.startswith(f"tianwang partition {args[0]}: ") and message in err
    assert not out_file.exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith("plan")] == []


def test_plan_into_a_missing_directory(
    capsys: pytest.CaptureFixture[str], graph_dir: Path, tmp_path: Path
) -> None:
    code, _out, err = run(capsys, "plan", str(graph_dir), "--crawlers", "2",
                          "--out", str(tmp_path / "no" / "plan.json"))
    assert code == 2 and "does not exist" in err


# --- the real graph ------------------------------------------------------------------------


@pytest.mark.skipif(not UCI.is_dir(), reason="the UCI crawl's graph is not here")
def test_plan_of_the_real_uci_graph(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    out_file = tmp_path / "plan.json"
    code, _out, _err = run(capsys, "plan", str(UCI), "--crawlers", "3", "--out", str(out_file))
    assert code == 0
    with open(UCI / "pages.tsv", encoding="utf-8") as file:
        pages = list(csv.DictReader(file, delimiter="\t"))
    host_of = {page["url"]: page["host"] for page in pages}
    per_host = {page["host"] for page in pages}
    plan_file = load_plan(out_file)
    assert set(plan_file.sites) == per_host  # 88 hosts, each a site
    assert len(per_host) == 88
    www = plan_file.sites["www.ics.uci.edu"]
    assert www.homepage == "https://www.ics.uci.edu/"
    for host, site in plan_file.sites.items():
        assert host_of[site.homepage] == host
        assert all(key.startswith(f"{host}/") for key in site.plan.owner)
        for seeds in site.plan.seeds:
            assert all(host_of[seed] == host for seed in seeds)  # seeds are pages of the host
        assert len(site.plan.seeds) == 3


# --- seed 002's two trends over N on a synthetic two-site graph ---------------------------
#
# four.test: / links 4 directories a-d of 23 pages and e/ of 7 (100 urls). Key paths a-d
# (92 >= 90% of 100); e/ and / belong to no key path, so every crawler fetches those 8.
#   N=2: a,c -> 0... (largest first to the least loaded, ties to the lowest index): 0 gets a,c
#   and b,d go to 1: 8 + 46 each, M 54, O 8/108 < delta.       A 100/54
#   N=3: a->0, b->1, c->2, d->0: M 54 again.                     A 100/54
#   N=4: one each, M 31, N 124, O 24/124 < delta.                A 100/31
#   N=5, 6: one more crawler each fetching the 8: O 32/132, then 40/140, A 100/31.
# fragile.test: / links x/ (40 pages) and a/ (20); a/k links b/k (20, linked from nowhere
# else): 81 urls, key paths x, a, b. N=2: x->0, a,b->1: 41 each, A 81/41, C 1. From N=3 b is
# a crawler of its own reaching only its 2 seeds: I = 1 + 40 + 20 + 2 = 63, C 63/81 < 0.8:
# the partition fails, score 0.
def write_trend_sites(directory: Path) -> Path:
    four, fragile = "http://four.test", "http://fragile.test"
    links: dict[str, list[str]] = {f"{four}/": [f"{four}/{d}/{k}.html" for d in "abcd"
                                                for k in range(23)]
                                   + [f"{four}/e/{k}.html" for k in range(7)],
                                   f"{fragile}/": [f"{fragile}/x/{k}.html" for k in range(40)]
                                   + [f"{fragile}/a/{k}.html" for k in range(20)]}
    links.update({f"{fragile}/a/{k}.html": [f"{fragile}/b/{k}.html"] for k in range(20)})
    urls = sorted(set(links) | {t for targets in links.values() for t in targets})
    ids = {url: k for k, url in enumerate(urls)}
    edges = [(ids[a], ids[b]) for a, targets in links.items() for b in targets]
    return write_recorded(directory, list(enumerate(urls)), edges)


def trend_cells(line: str) -> list[str]:
    """A trend row's three scheme cells (key-path, url-hash, site-hash), 10 columns each."""
    return [line[50 + 10 * k:60 + 10 * k].strip() for k in range(3)]


def test_simulate_reports_seed_002s_two_trends(capsys: pytest.CaptureFixture[str],
                                               tmp_path: Path) -> None:
    code, out, err = run(capsys, "simulate", str(write_trend_sites(tmp_path / "g")),
                         "--crawlers", "1-6")
    assert (code, err) == (0, "")
    assert out.startswith("2 sites, 181 pages")
    four = [score(8 / 108, 1, 100 / 54), score(16 / 116, 1, 100 / 54),
            score(24 / 124, 1, 100 / 31), score(32 / 132, 1, 100 / 31),
            score(40 / 140, 1, 100 / 31)]
    fragile_n2 = score(1 / 82, 1, 81 / 41)
    passing = [(four[0] + fragile_n2) / 2, *four[1:]]  # fragile.test passes at N=2 only
    assert passing[2] == max(passing) and passing[0] < passing[2] > passing[-1]  # peak at 4
    # columns key-path, url-hash, site-hash; site-hash is N = 1 at every N: no trend
    trend_lines = out.split("\ntrend over N = 2-6 ", 1)[1].splitlines()
    assert trend_lines[1].startswith("failing sites grow with N")  # 0, 1, 1, 1, 1
    assert trend_cells(trend_lines[1])[::2] == ["yes", "no"]
    assert trend_lines[2].startswith("passing score rises, falls")
    assert trend_cells(trend_lines[2])[::2] == ["yes N=4", "no"]
    detail = next(line for line in trend_lines if line.startswith("key-path per N:"))
    failing, medians = detail.split("; median score of passing sites ")
    assert failing == "key-path per N: failing sites 0 1 1 1 1"
    assert [float(v) for v in medians.split()] == pytest.approx(passing, abs=5e-4)
