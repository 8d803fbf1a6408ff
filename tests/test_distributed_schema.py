"""The shared crawl's request schema (tianwang/distributed/schema.py) and its chunks
(chunks.py): what a request carries through Redis, what is refused, and that bytes written
into Redis by anyone else are data, never code."""

from __future__ import annotations

import os
import pickle
import zlib
from pathlib import Path

import msgpack
import pytest
from scrapy import Request, Spider

from tianwang import meta
from tianwang.distributed.chunks import ChunkError, pack_chunk, unpack_chunk
from tianwang.distributed.schema import SchemaError, decode, encode


class SchemaSpider(Spider):
    name = "schema"

    def parse(self, response):
        return None

    def failed(self, failure):
        return None


SPIDER = SchemaSpider()


class Planted:
    """Unpickled, it would create a file: the proof that a blob ran."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __reduce__(self):
        return (os.system, (f"touch {self.path}",))


def round_trip(request: Request) -> Request:
    return decode(encode(request, SPIDER), SPIDER)


def test_a_site_spider_link_comes_back_as_it_was_less_what_it_spent_at_enqueue() -> None:
    request = Request("http://a.test/x/p.html?q=1", callback=SPIDER.parse, priority=-3,
                      meta={meta.DEPTH: 2, meta.PARENT: "http://a.test/x/", meta.OUTLINKS: 37,
                            meta.BOOST: 4, "download_latency": 0.2, "_tianwang_body": [1]},
                      headers={"Referer": "http://a.test/x/", "User-Agent": "tianwang"})
    again = round_trip(request)
    assert again.url == request.url and again.priority == -3
    assert again.callback == SPIDER.parse and again.errback is None and not again.dont_filter
    assert again.meta == {meta.DEPTH: 2, meta.PARENT: "http://a.test/x/", meta.BOOST: 4}
    assert again.headers.to_unicode_dict() == {"Referer": "http://a.test/x/"}
    # The parent on the url's host goes as its path, and the Referer as a flag saying it is
    # the parent: the host is written once.
    assert encode(request, SPIDER).count(b"a.test") == 1


def test_the_keys_of_redirects_retries_sitemaps_and_revisits_ride_along() -> None:
    request = Request("https://b.test/", errback=SPIDER.failed, dont_filter=True,
                      headers={"If-None-Match": '"x"', "Referer": "http://c.test/"},
                      meta={meta.SITEMAP: ("b.test", 1), meta.REDIRECT_URLS: ["http://b.test/"],
                            "redirect_reasons": [301], "redirect_times": 1, "retry_times": 2,
                            "handle_httpstatus_list": [304], "is_start_request": True,
                            meta.PARENT: "http://c.test/p", meta.DOWNLOAD_SLOT: "b.test"})
    again = round_trip(request)
    assert again.errback == SPIDER.failed and again.callback is None and again.dont_filter
    assert again.meta[meta.SITEMAP] == ("b.test", 1)
    assert {k: again.meta[k] for k in request.meta} == request.meta
    assert again.headers.to_unicode_dict() == {"If-None-Match": '"x"',
                                              "Referer": "http://c.test/"}


@pytest.mark.parametrize(("request_", "said"), [
    (Request("http://a.test/", meta={"my_key": 1}), "meta key 'my_key' is not in the shared"),
    (Request("http://a.test/", meta={meta.BOOST: "high"}), "'tianwang_boost' = 'high' is not"),
    (Request("http://a.test/", method="POST"), "GET requests without body"),
    (Request("http://a.test/", cb_kwargs={"a": 1}), "GET requests without body"),
    (Request("http://a.test/", headers={"X-Token": "t"}), "header 'X-Token' is not"),
    (Request("http://a.test/", callback=print), "is not a method of the spider"),
])
def test_what_the_schema_has_not_is_refused_saying_what(request_: Request, said: str) -> None:
    with pytest.raises(SchemaError, match=said):
        encode(request_, SPIDER)


def test_bytes_that_are_no_request_of_the_schema_are_refused_and_never_run(
        tmp_path: Path) -> None:
    planted = tmp_path / "ran"
    good = encode(Request("http://a.test/", callback=SPIDER.parse), SPIDER)
    fields = msgpack.unpackb(good[1:])
    blobs = [
        b"p" + pickle.dumps(Planted(planted)),  # the old codec's pickle form
        bytes([1]) + pickle.dumps(Planted(planted)),
        b"m" + b"\xe3" * 40,  # the old codec's marshal form, damaged
        b"", b"\x01", b"\x02" + good[1:],  # none; a version of the future
        good[:-3],  # cut short
        b"\x01" + msgpack.packb([*fields[:3], "__init__", *fields[4:]]),  # no such callback
        b"\x01" + msgpack.packb([*fields[:8], {"my_key": 1}]),
        b"\x01" + msgpack.packb([7, *fields[1:]]),  # a url that is no str
    ]
    for blob in blobs:
        with pytest.raises(SchemaError):
            decode(blob, SPIDER)
    assert not planted.exists()


def test_a_chunk_comes_back_whole_and_bytes_that_are_none_are_refused(tmp_path: Path) -> None:
    entries = [(f"req{i}".encode(), f"{i % 7}:{i}", float(i + i % 3 - (2**20 + i // 9) * 2**31))
               for i in range(50)]
    back = unpack_chunk(pack_chunk(entries))
    assert sorted(back) == sorted((member, int(score), blob) for blob, member, score in entries)
    planted = tmp_path / "ran"
    bomb = zlib.compress(b"\x00" * (65 << 20), 9)  # inflates past the bound
    for data in (zlib.compress(pickle.dumps(Planted(planted))), b"not zlib", bomb,
                 zlib.compress(msgpack.packb([2, [], [], [], [], []])),
                 zlib.compress(msgpack.packb([1, [1], [2], [3], [2**32], [b"x"]]))):
        with pytest.raises(ChunkError):
            unpack_chunk(data)
    assert not planted.exists()
