from urllib.parse import urlsplit

import pytest
from scrapy import Request

from tianwang import meta
from tianwang.frontier.slots import HostSlots


def slots() -> HostSlots:
    return HostSlots(crawler=None, politeness=None, on_change=lambda host: None)  # type: ignore[arg-type]


@pytest.mark.parametrize("url", [
    "http://www.example.com/a/b.html?x=1",
    "https://Example.COM/",
    "http://example.com:8080/",
    "http://user:pw@example.com/",
    "http://[::1]:8000/x",
    "http://a_b.example.com",
])
def test_a_requests_slot_is_the_downloaders(url: str) -> None:
    # Scrapy's Downloader.get_slot_key without per-IP slots: the parsed url's hostname
    assert slots().key(Request(url)) == urlsplit(url).hostname


def test_a_requests_download_slot_goes_first() -> None:
    request = Request("http://example.com/", meta={meta.DOWNLOAD_SLOT: "shared"})
    assert slots().key(request) == "shared"
