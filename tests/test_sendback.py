"""Sent back to wait and taken in again: the request's own dont_filter survives the trip."""

from __future__ import annotations

from scrapy import Request

from tianwang import meta
from tianwang.sendback import restore_dont_filter, send_back


def test_a_request_sent_back_passes_the_filter_and_gets_its_own_flag_back() -> None:
    request = Request("http://a.example.com/")
    again = send_back(request)
    assert again.dont_filter and again.meta[meta.SENT_BACK]
    assert request.dont_filter is False  # the original is left as it was
    restore_dont_filter(again)
    assert again.dont_filter is False and meta.DONT_FILTER not in again.meta


def test_sent_back_twice_it_keeps_the_flag_it_first_had() -> None:
    twice = send_back(send_back(Request("http://a.example.com/")))
    restore_dont_filter(twice)
    assert twice.dont_filter is False


def test_a_request_that_skips_the_filter_keeps_skipping_it() -> None:
    again = send_back(Request("http://a.example.com/", dont_filter=True))
    restore_dont_filter(again)
    assert again.dont_filter is True


def test_a_request_never_sent_back_is_left_alone() -> None:
    request = Request("http://a.example.com/", dont_filter=True)
    restore_dont_filter(request)
    assert request.dont_filter is True
