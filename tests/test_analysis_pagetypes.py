"""Seed 001's page types from visit histories made by hand, and the typed revisit classes."""

from __future__ import annotations

import pytest

from tianwang.analysis.pagetypes import (
    page_type,
    page_types,
    typed_classes,
    typed_two_class_allocation,
    typed_two_class_frequencies,
)
from tianwang.analysis.revisits import DAY, UrlRate, due
from tianwang.formats.history import Visit


def visit(url: str, time: float, entry: bool = False, changed: bool = False) -> Visit:
    return Visit(url, time, 200, "m", "c", None, None, changed, entry, None)


@pytest.mark.parametrize(("entries", "links", "expected"), [
    ([False, True, False], 3, "entry"),  # an entry page at one visit: new links showed there
    ([False, False], 25, "link"),  # many links, never new ones
    ([False, False], 10, "link"),  # the threshold itself
    ([False, False], 9, "stable"),
    ([False], 0, "stable"),
])
def test_page_type(entries: list[bool], links: int, expected: str) -> None:
    visits = [visit("http://a.cn/x/", t, e) for t, e in enumerate(entries)]
    assert page_type(visits, links, 10) == expected


def test_page_types_of_a_history() -> None:
    visits = [visit("http://a.cn/", 0, True), visit("http://a.cn/", 1, True),
              visit("http://a.cn/l.html", 0), visit("http://a.cn/s.html", 0),
              visit("http://a.cn/s.html", 1)]
    links = {"http://a.cn/": 30, "http://a.cn/l.html": 12, "http://a.cn/s.html": 2}
    assert page_types(visits, links, 10) == {
        "http://a.cn/": "entry", "http://a.cn/l.html": "link", "http://a.cn/s.html": "stable"}
    assert page_types([], {}, 10) == {}


def test_typed_classes_override_the_rate_for_entry_and_stable() -> None:
    rates = [4.0, 0.1, 4.0, 0.1, 4.0, 0.1]  # mean 2.05
    types = ["entry", "entry", "stable", "stable", "link", "link"]
    assert typed_classes(rates, types) == [1, 1, 2, 2, 1, 2]


def test_typed_two_class_frequencies_and_allocation() -> None:
    rates, types = [4.0, 0.1, 4.0, 0.1], ["entry", "entry", "stable", "link"]
    # F1: 4.0, 0.1 (mean 2.05); F2: 4.0, 0.1 (mean 2.05): a busy stable page is F2's
    assert typed_two_class_frequencies(rates, types, 0.5, 10) == [2.05] * 4
    rates = [4.0, 2.0, 1.0, 0.0]
    types = ["entry", "entry", "stable", "stable"]  # F1 mean 3, F2 mean 0.5
    assert typed_two_class_allocation(rates, types, 14.0) == pytest.approx([6, 6, 1, 1])
    assert typed_two_class_allocation([0.0, 0.0], ["stable", "link"], 2.0) == [1.0, 1.0]


def test_due_with_types_keeps_a_busy_stable_page_out_of_f1() -> None:
    def rate(url: str, per_day: float) -> UrlRate:
        from tianwang.analysis.changerates import Estimate

        return UrlRate(url, 0.0, False, Estimate(per_day, per_day, per_day, 5, 2), None,
                       None)

    urls = [rate("http://a.cn/", 4.0), rate("http://a.cn/s.html", 3.0),
            rate("http://a.cn/t.html", 0.1), rate("http://a.cn/u.html", 0.1)]
    plain = {d.url: d.cls for d in due(urls, 10 * DAY, everything=True)}
    assert plain["http://a.cn/s.html"] == 1
    types = {"http://a.cn/": "entry", "http://a.cn/s.html": "stable"}  # the rest: stable too
    typed = {d.url: d for d in due(urls, 10 * DAY, everything=True, types=types)}
    assert typed["http://a.cn/s.html"].cls == 2
    assert typed["http://a.cn/s.html"].page_type == "stable"
    # F2 at its mean rate (3.2 / 3 a day): the stable page waits longer than the hub
    assert typed["http://a.cn/s.html"].interval > typed["http://a.cn/"].interval
