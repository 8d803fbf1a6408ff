"""The change pipeline built directly: visits recorded, content-only changes, 304s, settings;
and the revisit plan's order (pure)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from scrapy.exceptions import DropItem, NotConfigured

from tests.conftest import project_crawler
from tianwang.analysis.revisits import DAY, due, url_rates
from tianwang.config import SettingError
from tianwang.formats.history import HistoryStore, Visit
from tianwang.items import NotModifiedItem, PageItem
from tianwang.pipelines.changes import ChangeStatsPipeline

URL = "http://www.example.com/news/"
TEXT = "<p>" + "content of the page, long enough to be content. " * 4 + "</p>"


def page(body: str, date: str | None = "Thu, 01 Jan 2004 00:00:00 GMT", url: str = URL,
         fetched_at: float = 5.0) -> PageItem:
    headers = [(b"Content-Type", b"text/html; charset=utf-8"), (b"ETag", b'"x"')]
    if date:
        headers.append((b"Date", date.encode()))
    return PageItem(url=url, requested_url=url, status=200, headers=headers,
                    body=body.encode(), ip=None, fetched_at=fetched_at, level=1)


def html(ad: str, text: str = TEXT, links: int = 0) -> str:
    anchors = "".join(f'<li><a href="/news/{k}.html">item {k}</a></li>' for k in range(links))
    return (f'<html><body><div class="ad">{ad}</div>{text}<div id="list"><ul>{anchors}</ul>'
            "</div></body></html>")


@pytest.fixture
def pipeline(tmp_path: Path):
    crawler = project_crawler(TIANWANG_CHANGES=True, TIANWANG_DATA_DIR=str(tmp_path))
    found = ChangeStatsPipeline.from_crawler(crawler)
    found.open_spider()
    yield found
    found.close_spider()


def history(tmp_path: Path) -> list[Visit]:
    with HistoryStore(tmp_path) as store:
        return list(store.visits())


def test_off_by_default() -> None:
    with pytest.raises(NotConfigured):
        ChangeStatsPipeline.from_crawler(project_crawler())


@pytest.mark.parametrize(("name", "value"), [("TIANWANG_ENTRY_NEW_SHARE", 2),
                                             ("TIANWANG_ENTRY_NEW_SHARE", "lots"),
                                             ("TIANWANG_ENTRY_MIN_LINKS", 0)])
def test_bad_settings_are_named(name: str, value: object) -> None:
    with pytest.raises(SettingError, match=name):
        ChangeStatsPipeline.from_crawler(project_crawler(TIANWANG_CHANGES=True, **{name: value}))


def test_ad_change_is_no_change_and_content_change_is(pipeline, tmp_path: Path) -> None:
    first = page(html("buy A"))
    assert pipeline.process_item(first) is first  # first visit: stored
    with pytest.raises(DropItem):  # only the ad differs: not stored again
        pipeline.process_item(page(html("buy B"), "Fri, 02 Jan 2004 00:00:00 GMT"))
    changed = page(html("buy B", TEXT.replace("long", "short")), "Sat, 03 Jan 2004 00:00:00 GMT")
    assert pipeline.process_item(changed) is changed
    pipeline.close_spider()
    visits = history(tmp_path)
    assert [v.changed for v in visits] == [False, False, True]
    assert len({v.md5 for v in visits}) == 3  # every body differs
    assert [v.time for v in visits] == [1072915200 + k * DAY for k in range(3)]  # Date header


def test_304_is_an_unchanged_visit(pipeline, tmp_path: Path) -> None:
    pipeline.process_item(page(html("x")))
    headers = [(b"Date", b"Fri, 02 Jan 2004 00:00:00 GMT"), (b"ETag", b'"y"')]
    with pytest.raises(DropItem):
        pipeline.process_item(NotModifiedItem(URL, headers, 9.0))
    pipeline.close_spider()
    first, second = history(tmp_path)
    assert (second.status, second.changed, second.etag) == (304, False, '"y"')
    assert second.content_hash == first.content_hash and second.time == first.time + DAY


def test_no_date_header_uses_the_local_clock(pipeline, tmp_path: Path) -> None:
    pipeline.process_item(page(html("x"), date=None, fetched_at=1234.5))
    pipeline.close_spider()
    assert history(tmp_path)[0].time == 1234.5


def record(pipeline: ChangeStatsPipeline, item: PageItem) -> None:
    """Process an item; an unchanged page is dropped (not stored), its visit still counts."""
    try:
        pipeline.process_item(item)
    except DropItem:
        pass


def test_entry_page_needs_many_links_and_new_ones(pipeline, tmp_path: Path) -> None:
    record(pipeline, page(html("x", links=30)))
    record(pipeline, page(html("x", links=33), "Fri, 02 Jan 2004 00:00:00 GMT"))  # +3 new
    record(pipeline, page(html("x", links=33), "Sat, 03 Jan 2004 00:00:00 GMT"))  # none
    few = "http://www.example.com/about/"
    record(pipeline, page(html("x", links=5), url=few))
    record(pipeline, page(html("x", links=9), "Fri, 02 Jan 2004 00:00:00 GMT", url=few))
    pipeline.close_spider()
    entries = {(v.url, v.time): v.entry for v in history(tmp_path)}
    start = 1072915200
    assert [entries[(URL, start + k * DAY)] for k in range(3)] == [False, False, False]
    assert [entries[(few, start + k * DAY)] for k in range(2)] == [False, False]
    # 3 new of 33 is below 0.1: add more between two visits
    pipeline.open_spider()
    record(pipeline, page(html("x", links=40), "Sun, 04 Jan 2004 00:00:00 GMT"))
    record(pipeline, page(html("x", links=40), "Sun, 04 Jan 2004 00:00:00 GMT",
                               url="http://www.example.com/"))
    pipeline.close_spider()
    last = {v.url: v.entry for v in history(tmp_path)}
    assert last[URL] is True and last["http://www.example.com/"] is True  # root: always


def test_plan_order_f1_first_then_entry_pages() -> None:
    def visits(url: str, changes: int, entry: bool) -> list[Visit]:
        return [Visit(url, k * DAY, 200, None, None, None, None, 0 < k <= changes, entry, None)
                for k in range(6)]

    history = (visits("http://a/fast-file.html", 5, False) + visits("http://a/fast/", 5, True)
               + visits("http://a/slow/", 1, True) + visits("http://a/slow.html", 1, False))
    rates = url_rates(sorted(history, key=lambda v: (v.url, v.time)))
    plan = due(rates, now=100 * DAY, everything=True)
    assert [d.url for d in plan] == ["http://a/fast/", "http://a/fast-file.html",
                                     "http://a/slow/", "http://a/slow.html"]
    assert [d.cls for d in plan] == [1, 1, 2, 2]
    soon = due(rates, now=5 * DAY + 0.5 * DAY)  # half a day on: only the fast ones are due
    assert {d.url for d in soon} == {"http://a/fast/", "http://a/fast-file.html"}


@pytest.mark.parametrize(("name", "value"), [("TIANWANG_REVISIT_POLICY", "best"),
                                             ("TIANWANG_MIN_REVISIT", 0),
                                             ("TIANWANG_MAX_REVISIT", 60)])
def test_refresh_spider_names_a_bad_setting(name: str, value: object, tmp_path: Path) -> None:
    from tianwang.spiders.refresh import RefreshSpider

    crawler = project_crawler(TIANWANG_DATA_DIR=str(tmp_path), **{name: value})
    with pytest.raises(SettingError, match=name):
        RefreshSpider.from_crawler(crawler)


# --- real pages: Debian's documentation trees, edited by script, served by nginx -----------

def test_real_pages_edited_are_stored_again_and_unchanged_ones_never(tmp_path: Path) -> None:
    """Six packages' html trees (Sphinx, Texinfo, DocBook; tests/realdocs.py), every page
    with a clock, a visitor number and a rotating ad made by nginx at each request; crawled,
    five pages a site edited as a person would (a sentence, a word added or removed,
    anywhere in the body but the footer: link lists and sidebars included), every page
    revisited. Judged from the stored records against the edit script's own list."""
    from tests.realdocs import TEST_PACKAGES, run_change_detection

    run = run_change_detection(tmp_path, TEST_PACKAGES, edits_per_site=5)
    pages = [site.url(path) for site in run.sites for path in site.paths]
    assert len(run.sites) == 6 and len(pages) > 150 and len(run.edited) >= 25
    # every page was served with 200 at both visits (never a 304), so what was stored again
    # is the crawler's call (a pooled connection's resend may log a url once more)
    served = Counter(f"http://{h}{u}" for h, u, status in run.served if status == 200)
    assert all(served[url] >= 2 for url in pages)
    assert not [row for row in run.served if row[2] == 304]
    missed = {u: run.edited[u] for u in run.edited if run.stored.get(u) != 2}
    assert missed == {}
    again = [u for u in pages if u not in run.edited and run.stored.get(u) != 1]
    assert again == []
