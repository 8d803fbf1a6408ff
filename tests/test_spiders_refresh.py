"""Revisits on the --changing test web: a crawl, then daily refreshes as the web's clock moves.

Checked against the test web's truth and its access log: unchanged pages answer 304 and the
visit is recorded; a page changed only by its rotating ad is not counted as changed, one
whose content changed is and is stored again; entry pages found by the rule are the truth's
hubs; the hubs' new links are fetched.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from pathlib import Path

import pytest

from tests.conftest import TestWeb, advance_clock, scrapy_crawl
from tianwang.formats import iter_tree
from tianwang.formats.history import HistoryStore, Visit
from tianwang.testweb.changing import DAY
from tianwang.testweb.model import SyntheticWeb
from tianwang.urls import url_type

ROUNDS = 3  # daily refreshes after the first crawl


@pytest.fixture(scope="module")
def refreshed(changing_web: TestWeb, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The first crawl, then ROUNDS refreshes one simulated day apart."""
    work = tmp_path_factory.mktemp("refresh")
    data = work / "data"
    settings = {"TIANWANG_PROXY": changing_web.address, "TIANWANG_DATA_DIR": str(data),
                "TIANWANG_CHANGES": "1"}
    homepages = [url for url, page in changing_web.truth.items() if page["kind"] == "home"]
    first = scrapy_crawl("site", {"seeds": ",".join(homepages)}, settings, cwd=work)
    assert first.returncode == 0, first.stderr[-3000:]
    logs = []
    for _ in range(ROUNDS):
        now = advance_clock(changing_web, DAY)
        result = scrapy_crawl("refresh", {"now": str(now), "all": "1"}, settings, cwd=work)
        assert result.returncode == 0, result.stderr[-3000:]
        logs.append(result.stderr)
    with HistoryStore(data) as store:
        visits: dict[str, list[Visit]] = defaultdict(list)
        for visit in store.visits():
            visits[visit.url].append(visit)
    access = [json.loads(line) for line in changing_web.access_log.read_text().splitlines()]
    return {"data": data, "visits": dict(visits), "access": access, "logs": logs}


@pytest.fixture(scope="module")
def model(changing_web: TestWeb) -> SyntheticWeb:
    """The same web in this process, to ask what each page was at a given time."""
    from tests.conftest import CHANGING_HOSTS, CHANGING_PAGES, CHANGING_SEED

    return SyntheticWeb(CHANGING_SEED, CHANGING_HOSTS, CHANGING_PAGES, changing=True)


def html_visited(refreshed: dict, truth: dict[str, dict]) -> list[str]:
    return [url for url in refreshed["visits"] if (truth.get(url) or {}).get("blocks")]


def test_unchanged_pages_answer_304_and_the_visit_is_recorded(
    refreshed: dict, changing_web: TestWeb
) -> None:
    truth = changing_web.truth
    still = [url for url in html_visited(refreshed, truth)
             if truth[url]["change_rate"] == 0 and not truth[url]["rotating_ad"]]
    assert len(still) >= 10
    served: defaultdict[str, list[int]] = defaultdict(list)
    for line in refreshed["access"]:
        served[line["url"]].append(line["status"])
    stored = Counter(record.url for _path, record in iter_tree(refreshed["data"]))
    for url in still:
        assert served_as(served[url], [200] + [304] * ROUNDS), url  # downloaded once only
        statuses = [visit.status for visit in refreshed["visits"][url]]
        assert statuses == [200] + [304] * ROUNDS
        assert not any(visit.changed for visit in refreshed["visits"][url])
        assert stored[url] == 1


def served_as(served: list[int], sent: list[int]) -> bool:
    """The server's answers to what the crawl sent, one of them perhaps served twice: Twisted's
    connection pool resends a GET whose pooled connection turned out closed (below Scrapy),
    which the server logs twice and the crawl sees once (seen: [200, 200, 304, 304, 304])."""
    if served == sent:
        return True
    return len(served) == len(sent) + 1 and any(
        served[i] == served[i + 1] and served[:i] + served[i + 1:] == sent
        for i in range(len(sent)))


def truth_changed(model: SyntheticWeb, url: str, visits: list[Visit]) -> list[bool]:
    versions = [model.changing.version(url, visit.time) for visit in visits]
    return [a != b for a, b in zip(versions, versions[1:], strict=False)]


def test_changes_are_counted_from_content_blocks(
    refreshed: dict, changing_web: TestWeb, model: SyntheticWeb
) -> None:
    truth = changing_web.truth
    ad_only = changed_pages = 0
    stored = Counter(record.url for _path, record in iter_tree(refreshed["data"]))
    for url in html_visited(refreshed, truth):
        visits = refreshed["visits"][url]
        assert len({visit.time for visit in visits}) == len(visits)  # none recorded twice
        expected = truth_changed(model, url, visits)
        assert [visit.changed for visit in visits[1:]] == expected, url
        if truth[url]["rotating_ad"] and truth[url]["change_rate"] == 0:
            ad_only += 1
            assert len({visit.md5 for visit in visits}) > 1  # the bytes did change
        changed_pages += any(expected)
        assert stored[url] == 1 + sum(expected), url  # a changed page is a new record
    assert ad_only >= 5 and changed_pages >= 20


def test_entry_pages_are_the_truths_hubs(refreshed: dict, changing_web: TestWeb) -> None:
    truth = changing_web.truth
    visited = html_visited(refreshed, truth)
    hubs = [url for url in visited if truth[url]["hub"]]
    entries = {url for url in refreshed["visits"] if refreshed["visits"][url][-1].entry}
    assert len(hubs) >= 20
    # The truth's hubs list 3 to 40 newest pages, drawn without regard to the entry rule's
    # 20 links and 10% new: a short list is missed (measured on this web: 15 of 20 found);
    # no other page is ever taken for one.
    found = sum(url in entries for url in hubs)
    assert found >= 0.7 * len(hubs), (found, len(hubs))
    assert entries <= set(hubs), sorted(entries - set(hubs))
    assert all(url_type(url) in ("root", "subroot", "path") for url in entries)


def test_new_links_of_entry_pages_are_fetched(refreshed: dict, changing_web: TestWeb) -> None:
    truth = changing_web.truth
    new_pages = [url for url in refreshed["visits"] if url not in truth]
    assert len(new_pages) >= 50
    assert all("/new" in url for url in new_pages)
    fetched = {line["url"] for line in refreshed["access"] if line["status"] == 200}
    assert set(new_pages) <= fetched
    stored = {record.url for _path, record in iter_tree(refreshed["data"])}
    assert set(new_pages) <= stored


def test_refresh_without_history_stops_with_a_clear_error(tmp_path: Path) -> None:
    settings = {"TIANWANG_DATA_DIR": str(tmp_path / "none")}
    result = scrapy_crawl("refresh", {}, settings, cwd=tmp_path)
    assert result.returncode != 0
    assert "TIANWANG_DATA_DIR" in result.stderr and "TIANWANG_CHANGES=1" in result.stderr


@pytest.mark.parametrize("spider", ["refresh", "site"])
def test_a_damaged_history_is_refused_in_one_line_and_left_as_it_is(tmp_path: Path,
                                                                     spider: str) -> None:
    data = tmp_path / "data"
    data.mkdir()
    damaged = b"SQLite format 3\x00" + bytes(range(256)) * 16
    (data / "changes.sqlite").write_bytes(damaged)
    settings = {"TIANWANG_DATA_DIR": str(data), "TIANWANG_CHANGES": "1"}
    args = {"seeds": "http://127.0.0.1:9/"} if spider == "site" else {}
    result = scrapy_crawl(spider, args, settings, cwd=tmp_path)
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr[-3000:]
    last = result.stderr.rstrip().splitlines()[-1]
    assert last.startswith("tianwang: error: the visit history") and "damaged" in last, last
    assert (data / "changes.sqlite").read_bytes() == damaged  # never replaced


def test_the_changes_report_names_a_damaged_history_without_a_traceback(tmp_path: Path) -> None:
    from tests.conftest import tianwang_cli

    (tmp_path / "changes.sqlite").write_bytes(b"SQLite format 3\x00" + bytes(range(256)) * 16)
    result = tianwang_cli("changes", "report", str(tmp_path))
    assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr
    assert "changes.sqlite" in result.stderr and "damaged" in result.stderr


def test_changes_report(refreshed: dict, changing_web: TestWeb, tmp_path: Path) -> None:
    from tests.conftest import tianwang_cli

    png = tmp_path / "rates.png"
    urls = tmp_path / "rates.tsv"
    result = tianwang_cli("changes", "report", str(refreshed["data"]), "--png", str(png),
                          "--urls", str(urls))
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert png.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    entries = {url for url, visits in refreshed["visits"].items() if visits[-1].entry}
    listed = {line.strip() for line in out.split("entry pages at their last visit:")[1]
              .splitlines()[1:] if line.startswith("  ")}
    assert listed == entries
    rated = [url for url, visits in refreshed["visits"].items() if len(visits) >= 2]
    classes = {line.split()[0]: int(line.split()[1]) for line in out.splitlines()
               if line.startswith(("F1 ", "F2 "))}
    assert sum(classes.values()) == len(rated)
    table = out.split("rate/day        urls\n")[1].split("\n\n")[0]
    assert sum(int(line.split()[-1]) for line in table.splitlines()) == len(rated)
    never = [url for url in rated if changing_web.truth.get(url, {}).get("change_rate") == 0]
    assert int(table.splitlines()[0].split()[-1]) >= len(never)  # truth's never-changing: 0
    rows = [line.split("\t") for line in urls.read_text().splitlines()[1:]]
    assert {row[0] for row in rows} == set(refreshed["visits"])
    for row in rows:
        if row[3]:
            assert float(row[4]) <= float(row[3]) <= float(row[5])
            if changing_web.truth.get(row[0], {}).get("change_rate") == 0:
                assert float(row[3]) == 0.0  # never changed in truth, never seen to change
    missing = tianwang_cli("changes", "report", str(tmp_path / "nothing"))
    assert missing.returncode == 2 and "TIANWANG_CHANGES=1" in missing.stderr


def test_page_types_from_the_history_against_the_truth(refreshed: dict,
                                                       changing_web: TestWeb) -> None:
    """Seed 001's three types classified from the visit history (entry flags, block links)
    against the truth's page_type; each type's accuracy."""
    from tianwang.analysis.pagetypes import page_types

    truth = changing_web.truth
    with HistoryStore(refreshed["data"], readonly=True) as store:
        visits = list(store.visits())
        links = {state.url: len(state.links) for state in store.pages()}
    found = page_types(visits, links, 10)  # TIANWANG_LINK_PAGE_MIN_LINKS's default
    typed = [url for url in found if (truth.get(url) or {}).get("page_type")]
    by_type: defaultdict[str, list[bool]] = defaultdict(list)
    for url in typed:
        by_type[truth[url]["page_type"]].append(found[url] == truth[url]["page_type"])
    accuracy = {kind: sum(hits) / len(hits) for kind, hits in by_type.items()}
    assert sorted(by_type) == ["entry", "link", "stable"]
    assert all(len(hits) >= 10 for hits in by_type.values()), {k: len(v) for k, v in
                                                                by_type.items()}
    # The truth is by role, drawn without the classifier's thresholds (testweb/changing.py):
    # a hub listing fewer than 20 links is no entry page by the rule, a link page of fewer
    # than 10 links is taken for stable, a stable page of 10 or more for a link page.
    # Measured on this web: entry 0.75, link 0.75, stable 0.84 (bench/RESULTS-archive.md, issue 37).
    assert accuracy["entry"] >= 0.7 and accuracy["link"] >= 0.7 and accuracy["stable"] >= 0.8, \
        accuracy
    print("page type accuracy", {k: f"{v:.3f} of {len(by_type[k])}" for k, v in
                                 accuracy.items()})


def test_the_refresh_log_counts_the_page_types(refreshed: dict) -> None:
    assert all("page types: entry " in log for log in refreshed["logs"])


def test_a_stable_page_is_not_revisited_like_a_hub(refreshed: dict, changing_web: TestWeb,
                                                   tmp_path: Path) -> None:
    """Some hours after the last refresh (the first of 12, 18, 24, 36 or 48 at which it
    shows): with the page types the entry pages are due (F1, hours apart) and no page typed
    stable is (F2, days apart), whatever its own rate; the access log shows it. Without the
    types the fastest stable pages would be F1 and due too. Runs last: it adds visits to
    the module's history."""
    from tianwang.analysis.pagetypes import page_types
    from tianwang.analysis.revisits import due, url_rates

    with HistoryStore(refreshed["data"], readonly=True) as store:
        visits = list(store.visits())
        links = {state.url: len(state.links) for state in store.pages()}
    rates = url_rates(visits)
    types = page_types(visits, links, 10)
    stable = {url for url, kind in types.items() if kind == "stable"}
    entries = {url for url, kind in types.items() if kind == "entry"}
    clock = advance_clock(changing_web, 0)
    for hours in (12, 18, 24, 36, 48):
        now = clock + hours * 3600
        untyped = {d.url for d in due(rates, now)}
        typed = {d.url for d in due(rates, now, types=types)}
        if untyped & stable and entries <= typed:
            break
    assert untyped & stable  # the fastest stable pages are F1 by their estimates
    assert typed & stable == set()
    now = advance_clock(changing_web, now - clock)
    start = changing_web.access_log.stat().st_size
    settings = {"TIANWANG_PROXY": changing_web.address,
                "TIANWANG_DATA_DIR": str(refreshed["data"]), "TIANWANG_CHANGES": "1"}
    result = scrapy_crawl("refresh", {"now": str(now)}, settings, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    with open(changing_web.access_log, encoding="utf-8") as log:
        log.seek(start)
        asked = {json.loads(line)["url"] for line in log}
    assert entries <= asked
    assert not asked & stable, sorted(asked & stable)
