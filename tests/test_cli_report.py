"""`tianwang report`: a real crawl's report, rendered by headless Chromium, its figures
checked against the test web's ground truth and every plot seen drawn on the screenshot."""

from __future__ import annotations

import html
import re

import pytest
from PIL import Image

from tests.chromium import headless
from tests.conftest import TestWeb, scrapy_crawl, tianwang_cli
from tests.truth import host_of, reach

PLOTS = ("over-time", "bytes-over-time", "status", "media-types", "hosts", "slowest-hosts",
         "refused-hosts", "depths", "refusals", "dedup")
HOST_PAGES = 8


@pytest.fixture(scope="module")
def report(testweb: TestWeb, tmp_path_factory: pytest.TempPathFactory) -> dict:
    workdir = tmp_path_factory.mktemp("report")
    homes = sorted(url for url, page in testweb.truth.items() if page["kind"] == "home")[:6]
    settings = {"TIANWANG_DATA_DIR": str(workdir / "data"), "TIANWANG_PROXY": testweb.address,
                "TIANWANG_MAX_LEVELS": "2"}
    result = scrapy_crawl("site", {"seeds": ",".join(homes)}, settings, cwd=workdir)
    assert result.returncode == 0, result.stderr[-2000:]
    # A second run into the same data dir stores nothing new (every page is there) and has
    # its trap filter's page budget refuse what a host has beyond it: refusals to report.
    again = scrapy_crawl("site", {"seeds": ",".join(homes)},
                         {**settings, "TIANWANG_MAX_HOST_PAGES": str(HOST_PAGES)}, cwd=workdir)
    assert again.returncode == 0, again.stderr[-2000:]
    out = workdir / "report.html"
    made = tianwang_cli("report", str(workdir / "data"), "-o", str(out))
    assert made.returncode == 0, made.stderr
    expected = reach(testweb.truth, homes, max_levels=2).stored(testweb.truth)
    closing = [run.stderr.rstrip("\n").splitlines()[-1].split(" INFO: ", 1)[1]
               for run in (result, again)]
    return {"out": out, "made": made.stdout, "expected": expected, "workdir": workdir,
            "closing": closing}


def _reasons(line: str, what: str) -> dict[str, int]:
    """The counts by reason of a closing line's "refused 12 (robots.txt 10, spam 2)"."""
    found = re.search(rf"{what} [\d,]+ \(([^)]*)\)", line)
    pairs = (part.rsplit(" ", 1) for part in found.group(1).split(", ")) if found else ()
    return {reason: int(n.replace(",", "")) for reason, n in pairs}


def test_the_report_shows_two_sessions_each_with_its_logs_closing_line(report: dict) -> None:
    dom = headless(report["out"], "--dump-dom")
    table = re.search(r'<table id="sessions">(.*?)</table>', dom, re.S).group(1)
    rows = re.findall(r"<tr><td>(\d+)</td><td>([^<]+)</td><td>([^<]+)</td><td>(\d+)</td>"
                      r"<td>([^<]+)</td></tr>", table)
    assert [(n, processes, html.unescape(line)) for n, _s, _e, processes, line in rows] == [
        ("1", "1", report["closing"][0]), ("2", "1", report["closing"][1])]
    assert re.search(r'id="fig-sessions">2<', dom)
    for plot in ("over-time", "bytes-over-time"):  # a line per session, in the legend
        legend = re.search(rf"id=\"plot-{plot}\"[^>]*data-legend=\"([^\"]*)\"", dom).group(1)
        assert [entry.split(":")[0] for entry in legend.split("\n")] == ["session 1",
                                                                         "session 2"], legend


def test_the_reports_labels_and_counts_are_the_logs(report: dict) -> None:
    dom = headless(report["out"], "--dump-dom")
    logs = report["closing"]
    kept = sum(int(re.search(r"kept ([\d,]+) already stored", line).group(1).replace(",", ""))
               for line in logs)
    # The second run found the pages it fetched again stored already, as its log says.
    assert 0 < kept <= len(report["expected"])
    shown = re.search(r'id="fig-kept-already-stored">([\d,]+)<', dom).group(1)
    assert int(shown.replace(",", "")) == kept
    table = re.search(r'<table id="reasons">(.*?)</table>', dom, re.S).group(1)
    rows = re.findall(r"<tr><td>([^<]+)</td><td>(refused|failed)</td><td>([\d,]+)</td></tr>",
                      table)
    for what in ("refused", "failed"):
        said: dict[str, int] = {}
        for line in logs:
            for reason, n in _reasons(line, what).items():
                said[reason] = said.get(reason, 0) + n
        shown = {html.unescape(reason): int(n.replace(",", ""))
                 for reason, kind, n in rows if kind == what}
        assert shown == said, (what, rows)
    assert any(reason == "host_budget" for reason, _w, _n in rows)  # the second run's budget
    for plot in ("refusals", "dedup"):  # groups in colour, named in a legend
        assert re.search(rf'id="plot-{plot}"[^>]*data-legend="[^"]+"', dom), plot


def test_the_report_says_what_the_crawl_stored(report: dict) -> None:
    expected = report["expected"]
    hosts = {host_of(url) for url in expected}
    assert report["made"] == (f"report of {len(expected):,} pages from {len(hosts):,} hosts: "
                              f"{report['out']}\n")


def test_chromium_renders_every_plot_and_the_figures(report: dict) -> None:
    dom = headless(report["out"], "--dump-dom")
    body = re.search(r"<body([^>]*)>", dom).group(1)
    assert f'data-plots="{len(PLOTS)}"' in body
    assert f'data-plots-loaded="{len(PLOTS)}"' in body, body  # every PNG decoded
    pages = re.search(r"id=\"fig-pages-stored\">([\d,]+)<", dom).group(1)
    assert int(pages.replace(",", "")) == len(report["expected"])
    # Two runs of one process each (a run of TIANWANG_PROCESSES=N would count N).
    processes = re.search(r"id=\"fig-crawl-processes-with-stats\">(\d+)<", dom).group(1)
    assert int(processes) == 2


def test_the_screenshot_shows_each_plot_drawn(report: dict) -> None:
    dom = headless(report["out"], "--dump-dom")
    rects = {name: tuple(map(int, rect.split(","))) for name, rect in
             re.findall(r'id="plot-([a-z-]+)"[^>]*data-rect="([\d,]+)"', dom)}
    assert sorted(rects) == sorted(PLOTS)
    shot = report["workdir"] / "shot.png"
    headless(report["out"], f"--screenshot={shot}")
    image = Image.open(shot).convert("RGB")
    assert image.size[1] >= max(top + height for _l, top, _w, height in rects.values())
    for name, (left, top, width, height) in rects.items():
        assert width == 560 and height == 320, (name, width, height)
        region = image.crop((left, top, left + width, top + height))
        colours = region.getcolors(maxcolors=1 << 16) or []
        inked = sum(n for n, (r, g, b) in colours if r + g + b < 600)  # not white or near it
        assert len(colours) > 20, f"plot {name} is blank ({len(colours)} colours)"
        assert inked > 0.01 * width * height, f"plot {name} has almost nothing drawn"
        # Data is drawn in colour (bars, lines); axes and text are grey.
        data = sum(n for n, rgb in colours if max(rgb) - min(rgb) > 80)
        assert data > 100, f"plot {name} draws no data"
