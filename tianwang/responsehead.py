"""A response's head, bounded: a server that sends header lines without end is cut off.

Twisted's HTTP client bounds each header line (16 KiB) but not how many come, and the
crawl's body bounds (TIANWANG_MAX_PAGE_BYTES, DOWNLOAD_MAXSIZE) count no header. A server
answering `200 OK` and then header lines for as long as a download may last
(DOWNLOAD_TIMEOUT, 180 s) grew a crawl by 140 MB a second: 8.7 GB after a minute, on its
first request (its robots.txt). Browsers bound a head (Chromium at 256 KiB, curl at 300 KB);
so does this.

The bytes a connection receives for a request until its headers end are counted, interim
1xx answers and their heads included (Twisted skips those and parses on, so a server could
send them without end too). Past TIANWANG_MAX_HEAD_BYTES the connection is closed and the
download fails with HeadTooLarge, which the failure middleware counts as bad_response, as
it counts a single header line past Twisted's limit. The count is of whole reads (at most
64 KiB each), so a head may end up to one read past the bound before the bound sees it.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from tianwang.scrapy_internals import give_up, in_head


class HeadTooLarge(Exception):
    """A response's status line and headers ran past the crawl's bound."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"response head over {limit} bytes (TIANWANG_MAX_HEAD_BYTES)")


class HeadBound:
    """Mixed into an HTTP/1.1 client protocol class: its responses' heads are bounded."""

    max_head = 0  # set per protocol by the factory
    head_bytes = 0  # received for the request in flight while its head was being read

    def request(self, request: Any) -> Any:
        self.head_bytes = 0
        return super().request(request)  # type: ignore[misc]

    def dataReceived(self, data: bytes) -> None:  # noqa: N802 - Twisted's name
        if in_head(self):
            self.head_bytes += len(data)
            if self.head_bytes > self.max_head:
                give_up(self, HeadTooLarge(self.max_head))
                return
        super().dataReceived(data)  # type: ignore[misc]


@cache
def _bounded(protocol_class: type) -> type:
    return type(f"HeadBound{protocol_class.__name__}", (HeadBound, protocol_class), {})


def bounded_factory(factory_class: type, max_head: int) -> type:
    """A subclass of `factory_class` (an HTTP/1.1 client factory of a connection pool) whose
    protocols, of the class it builds, read at most `max_head` bytes of a response's head."""

    class HeadBoundFactory(factory_class):  # type: ignore[misc, valid-type]
        def buildProtocol(self, addr: Any) -> Any:  # noqa: N802 - Twisted's name
            protocol = super().buildProtocol(addr)
            protocol.__class__ = _bounded(type(protocol))
            protocol.max_head = max_head
            return protocol

    return HeadBoundFactory
