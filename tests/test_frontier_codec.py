"""Requests to bytes and back: every field a crawl uses survives, callbacks rebind."""

from __future__ import annotations

import pytest
from scrapy import FormRequest, Request, Spider

from tianwang.frontier.codec import decode, encode


class CodecSpider(Spider):
    name = "codec"

    def parse(self, response):
        return None

    def failed(self, failure):
        return None


class Opaque:
    """Something marshal cannot write (pickle can)."""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Opaque)


SPIDER = CodecSpider()
FIELDS = ("url", "method", "body", "cookies", "meta", "encoding", "priority", "dont_filter")


def cases() -> list[Request]:
    return [
        Request("http://www.example.com/"),
        Request("http://www.example.com/a/b.html", callback=SPIDER.parse, meta={"depth": 2}),
        Request(
            "http://www.example.com/q?x=1&y=%E5%A4%A9",
            callback=SPIDER.parse,
            errback=SPIDER.failed,
            method="POST",
            headers={"Referer": "http://www.example.com/", "X-A": ["1", "2"]},
            body=b"k=v",
            cookies={"s": "1"},
            meta={"tianwang_boost": 2, "redirect_urls": ["http://a/"], "download_slot": "a"},
            encoding="gbk",
            priority=-3,
            dont_filter=True,
            flags=["retry"],
            cb_kwargs={"level": 2},
        ),
        Request("http://www.example.com/", meta={"thing": Opaque()}),  # the pickle fallback
        Request("http://www.example.com/", meta={"verbatim_url": False}),
    ]


@pytest.mark.parametrize("request_", cases())
def test_round_trip_keeps_every_field(request_: Request) -> None:
    back = decode(encode(request_, SPIDER), SPIDER)
    assert type(back) is Request
    for name in FIELDS:
        assert getattr(back, name) == getattr(request_, name), name
    assert dict(back.headers) == dict(request_.headers)
    assert back.flags == request_.flags and back.cb_kwargs == request_.cb_kwargs
    assert back.callback == request_.callback and back.errback == request_.errback


def test_request_subclass_keeps_its_class() -> None:
    request = FormRequest("http://www.example.com/f", formdata={"a": "1"}, callback=SPIDER.parse)
    back = decode(encode(request, SPIDER), SPIDER)
    assert type(back) is FormRequest and back.body == request.body


def test_a_callback_that_is_not_a_spider_method_cannot_be_encoded() -> None:
    with pytest.raises(ValueError, match="not a method of the spider"):
        encode(Request("http://www.example.com/", callback=lambda r: None), SPIDER)


def test_the_common_request_is_small() -> None:
    request = Request("http://www.example.com/a/b.html", callback=SPIDER.parse, meta={"depth": 2})
    assert len(encode(request, SPIDER)) < len(request.url) + 60


@pytest.mark.parametrize("blob", [b"", b"m", b"m\xe3\x00\x00", b"p\x80\x05garbage",
                                  b"m" + __import__("marshal").dumps({"url": 3}),
                                  b"m" + __import__("marshal").dumps(
                                      {"url": "http://a.com/", "callback": "gone"})])
def test_bytes_that_make_no_request_raise_one_error(blob: bytes) -> None:
    from tianwang.frontier.codec import UnreadableRequest

    with pytest.raises(UnreadableRequest):
        decode(blob, SPIDER)
