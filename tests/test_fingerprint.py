"""tianwang.fingerprint: the same bytes as Scrapy's request fingerprint, for any request."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from scrapy import Request
from scrapy.utils.request import fingerprint as scrapy_fingerprint
from scrapy.utils.test import get_crawler

from tianwang.fingerprint import RequestFingerprinter
from tianwang.urls import already_canonical

FINGERPRINTER = RequestFingerprinter(get_crawler())

hosts = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9.\-]{0,20}(:[0-9]{1,6})?", fullmatch=True)
paths = st.text(alphabet="aZ09-._~:/@!$&'()*+,;=%?#[]| \u5929", max_size=20)


@given(scheme=st.sampled_from(["http", "https", "HTTP"]), host=hosts, path=paths)
def test_the_fingerprint_is_scrapys(scheme: str, host: str, path: str) -> None:
    try:
        request = Request(f"{scheme}://{host}/{path}")
        expected = scrapy_fingerprint(request)
    except ValueError:
        return  # Scrapy refuses it (a port out of range): nothing to compare
    assert FINGERPRINTER.fingerprint(request) == expected



@given(host=hosts, pairs=st.lists(st.tuples(st.text(alphabet="aZ09-._~", min_size=1, max_size=3),
                                            st.text(alphabet="aZ09-._~", max_size=3)),
                                  min_size=1, max_size=4), sort=st.booleans())
def test_a_url_with_a_query_has_scrapys_fingerprint(host: str, pairs: list[tuple[str, str]],
                                                     sort: bool) -> None:
    """Queries the short way takes (pairs in w3lib's order) and those it leaves to Scrapy."""
    query = "&".join(f"{key}={value}" for key, value in (sorted(pairs) if sort else pairs))
    try:
        request = Request(f"http://{host}/p.php?{query}")
        expected = scrapy_fingerprint(request)
    except ValueError:
        return
    assert FINGERPRINTER.fingerprint(request) == expected

@pytest.mark.parametrize(
    "request_",
    [
        Request("http://a.com/x", method="POST", body=b"q=1"),
        Request("http://a.com/x", body=b"q=1"),
        Request("http://a.com/x", method="HEAD"),
        Request("http://a.com/x?b=2&a=1"),
        Request("http://a.com/a/../b"),
        Request("http://a.com/x#top", meta={"verbatim_url": True}),
        Request("http://a.com/x", meta={"verbatim_url": True}),
    ],
    ids=["post", "get-with-body", "head", "query", "dot-segments", "verbatim-fragment",
         "verbatim"],
)
def test_requests_off_the_fast_path_get_scrapys_fingerprint(request_: Request) -> None:
    assert FINGERPRINTER.fingerprint(request_) == scrapy_fingerprint(request_)


def test_most_links_take_the_fast_path() -> None:
    assert already_canonical("http://www.ics.uci.edu/~eppstein/pubs/a.html")
    assert already_canonical("http://www.ics.uci.edu/x?id=1&page=2")
    assert not already_canonical("http://www.ics.uci.edu/x?page=2&id=1")  # w3lib sorts them
