"""HeadBound's count, on Twisted's own HTTP/1.1 client protocol fed bytes by hand (the
crawl against a real server that streams heads without end: tests/test_middlewares_failures.py)."""

from __future__ import annotations

from scrapy.core.downloader.handlers.http11 import HTTP11DownloadHandler
from scrapy.utils.test import get_crawler
from twisted.internet.defer import Deferred
from twisted.internet.protocol import Protocol
from twisted.internet.testing import StringTransport
from twisted.web._newclient import Request
from twisted.web.client import ResponseFailed
from twisted.web.http_headers import Headers

from tianwang.responsehead import HeadBound, HeadTooLarge, bounded_factory

LIMIT = 16 * 1024
LINE = b"X-Pad: " + b"p" * 100 + b"\r\n"  # 109 bytes


class Body(Protocol):
    """A response's body, collected: once it ends, the connection takes another request."""

    def __init__(self) -> None:
        self.data, self.done = b"", False

    def dataReceived(self, data: bytes) -> None:  # noqa: N802 - Twisted's name
        self.data += data

    def connectionLost(self, reason: object = None) -> None:  # noqa: N802
        self.done = True


def connection():
    factory_class = HTTP11DownloadHandler(get_crawler())._pool._factory
    protocol = bounded_factory(factory_class, LIMIT)(lambda _: None, "test").buildProtocol(None)
    transport = StringTransport()
    protocol.makeConnection(transport)
    return protocol, transport


def ask(protocol) -> list:
    outcome: list = []
    request = Request(b"GET", b"/", Headers({b"host": [b"a.cn"]}), None, persistent=True)
    deferred: Deferred = protocol.request(request)
    deferred.addBoth(outcome.append)
    return outcome


def test_a_head_under_the_bound_is_read_whole() -> None:
    protocol, _transport = connection()
    assert isinstance(protocol, HeadBound)
    outcome = ask(protocol)
    lines = LINE * (LIMIT // len(LINE) - 2)
    protocol.dataReceived(b"HTTP/1.1 200 OK\r\n" + lines + b"Content-Length: 2\r\n\r\nok")
    assert outcome[0].code == 200 and len(outcome[0].headers.getRawHeaders(b"x-pad")) > 140


def test_header_lines_past_the_bound_fail_the_response_and_close_the_connection() -> None:
    protocol, transport = connection()
    outcome = ask(protocol)
    protocol.dataReceived(b"HTTP/1.1 200 OK\r\n")
    for _ in range(LIMIT // len(LINE) + 1):
        protocol.dataReceived(LINE)
    assert isinstance(outcome[0].value, ResponseFailed)
    assert isinstance(outcome[0].value.reasons[0].value, HeadTooLarge)
    assert transport.disconnecting


def test_interim_answers_count_toward_the_bound_together() -> None:
    protocol, _transport = connection()
    outcome = ask(protocol)
    interim = b"HTTP/1.1 100 Continue\r\n\r\n"  # each a whole head, parsed and skipped
    for _ in range(LIMIT // len(interim) + 1):
        protocol.dataReceived(interim)
    assert isinstance(outcome[0].value.reasons[0].value, HeadTooLarge)


def test_each_request_on_a_kept_alive_connection_counts_its_own_head() -> None:
    protocol, _transport = connection()
    lines = LINE * (LIMIT // len(LINE) - 2)  # nearly the bound, twice: over it in all
    for _ in range(2):
        outcome = ask(protocol)
        protocol.dataReceived(b"HTTP/1.1 200 OK\r\n" + lines + b"Content-Length: 2\r\n\r\nok")
        assert outcome[0].code == 200
        body = Body()
        outcome[0].deliverBody(body)
        assert body.done and body.data == b"ok"
