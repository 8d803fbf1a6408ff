"""The survivor rule of global dedup, on groups written out by hand."""

from __future__ import annotations

import pytest

from tianwang.analysis.survivor import decide

MD5 = b"\x01" * 16
OLD, NEW = "Sat, 21 Nov 2026 05:00:00 GMT", "Sun, 22 Nov 2026 05:00:00 +0000"


def rec(url: str, file: int = 0, date: str = OLD, crc: int = 1) -> tuple:
    return (MD5, url, file, 100 * file, 50, date, crc)


@pytest.mark.parametrize("urls, kept", [
    (["http://a.cn/default.htm", "http://a.cn/"], "http://a.cn/"),
    (["http://a.cn/p?sid=1", "http://a.cn/p"], "http://a.cn/p"),
    (["http://b.cn/x", "http://a.cn/x"], "http://a.cn/x"),  # same length: code point order
    (["http://a.cn/x", "http://a.cn/X"], "http://a.cn/X"),
])
def test_shortest_url_then_code_point_order(urls: list[str], kept: str) -> None:
    for order in (urls, urls[::-1]):
        outcome = decide([rec(url, i) for i, url in enumerate(order)])
        assert outcome.survivor is not None and outcome.survivor[1] == kept
        assert outcome.lines == [(url, kept) for url in sorted(set(urls) - {kept})]


def test_one_url_twice_keeps_the_later_date_then_the_larger_crc() -> None:
    later = decide([rec("http://a.cn/", 0, NEW), rec("http://a.cn/", 1, OLD)])
    assert later.survivor == rec("http://a.cn/", 0, NEW)
    assert (later.same_url, later.duplicates, later.lines) == (1, 0, [])
    tie = [rec("http://a.cn/", 0, OLD, crc=5), rec("http://a.cn/", 1, OLD, crc=9)]
    assert decide(tie).survivor == decide(tie[::-1]).survivor == tie[1]


def test_mirror_lines_join_the_group_and_point_at_the_survivor() -> None:
    group = [rec("http://a.cn/long.html"), (MD5, "http://c.cn/", "http://a.cn/long.html"),
             rec("http://b.cn/", 1)]
    outcome = decide(group)
    assert outcome.survivor is not None and outcome.survivor[1] == "http://b.cn/"
    assert outcome.lines == [("http://a.cn/long.html", "http://b.cn/"),
                             ("http://c.cn/", "http://b.cn/")]
    assert outcome.duplicates == 1  # one record dropped; c.cn/ had none


def test_lines_with_no_record_anywhere_are_kept_as_they_were() -> None:
    lines = [(MD5, "http://x.cn/2", "http://x.cn/1"), (MD5, "http://x.cn/2", "http://x.cn/1")]
    outcome = decide(lines)
    assert outcome.survivor is None and outcome.lines == [("http://x.cn/2", "http://x.cn/1")]
