"""Every private Scrapy attribute tianwang relies on, pinned against the installed Scrapy.

A Scrapy upgrade that renames one fails here (and at the start of every crawl), not
silently in a crawl that then loses work on a kill.
"""

from __future__ import annotations

import re
from types import SimpleNamespace

import pytest
import pytest_twisted
from scrapy import Request, Spider, signals
from scrapy.utils.test import get_crawler

from tianwang import scrapy_internals
from tianwang.scrapy_internals import REQUIRED, ScrapyInternalsError


class ProbeSpider(Spider):
    """Looks at the engine while it runs: at open, and while a response is parsed."""

    name = "probe"
    seen: dict[str, object]

    async def start(self):
        yield Request("data:,one", callback=self.parse)

    def parse(self, response):
        engine = self.crawler.engine
        self.seen["in_progress_while_parsed"] = response.request in (
            scrapy_internals.in_progress(engine)
        )
        self.seen["closing_while_crawling"] = scrapy_internals.closing(engine)
        return []

    def closed(self, reason):
        self.seen["closing_while_closing"] = scrapy_internals.closing(self.crawler.engine)


@pytest_twisted.ensureDeferred
async def test_every_private_attribute_is_there_on_a_running_engine() -> None:
    seen: dict[str, object] = {}
    crawler = get_crawler(ProbeSpider, {"LOG_LEVEL": "WARNING"})

    def opened(spider: Spider) -> None:
        engine = crawler.engine
        scrapy_internals.check(engine)  # raises if one is gone
        seen["checked"] = [path for path, _why in REQUIRED]
        seen["in_progress_type"] = type(scrapy_internals.in_progress(engine))
        scrapy_internals.wake(engine)
        spider.seen = seen

    crawler.signals.connect(opened, signal=signals.spider_opened)
    await crawler.crawl()  # a Deferred: pytest-twisted runs this test as a Twisted coroutine
    assert seen["checked"] == ["_slot.inprogress", "_slot.nextcall.schedule", "_slot.closing"]
    assert seen["in_progress_type"] is set
    # The meaning the frontier relies on: a request stays in progress while its response is
    # parsed (so it is marked done only after its links are pushed).
    assert seen["in_progress_while_parsed"] is True
    # The closing extension's clue: not closing while the crawl runs, closing once the close
    # has begun (the spider's closed() runs on spider_closed, within the close).
    assert seen["closing_while_crawling"] is False
    assert seen["closing_while_closing"] is True
    assert crawler.stats.get_value("response_received_count") == 1


@pytest.mark.parametrize("missing", [path for path, _why in REQUIRED])
def test_a_missing_attribute_stops_the_start_naming_it(missing: str) -> None:
    slot = SimpleNamespace(inprogress=set(), nextcall=SimpleNamespace(schedule=lambda: None),
                           closing=None)
    engine = SimpleNamespace(_slot=slot)
    owner_path, _, name = missing.rpartition(".")
    owner = engine
    for part in owner_path.split("."):
        owner = getattr(owner, part)
    delattr(owner, name)
    with pytest.raises(ScrapyInternalsError, match=re.escape(f"no engine.{missing},")):
        scrapy_internals.check(engine)


def test_the_https_handler_has_its_context_factory_and_takes_the_policy() -> None:
    """The installed Scrapy's HTTP/1.1 handler holds its TLS policy in _contextFactory, and
    tianwang's handler puts its checking policy there (tianwang/tlshandler.py)."""
    from scrapy.core.downloader.handlers.http11 import HTTP11DownloadHandler

    from tianwang.tlshandler import CheckingPolicy, TLSCheckDownloadHandler

    assert hasattr(HTTP11DownloadHandler(get_crawler()), "_contextFactory")
    handler = TLSCheckDownloadHandler(get_crawler(settings_dict={
        "TIANWANG_TLS_CHECK": True, "TIANWANG_IDLE_CONNECTIONS": 256,
        "TIANWANG_MAX_HEAD_BYTES": 65536}))
    assert isinstance(handler._contextFactory, CheckingPolicy)


def test_the_handler_has_its_pool_and_takes_the_bounded_one() -> None:
    """The installed Scrapy's HTTP/1.1 handler holds its connections in _pool, with its own
    client factory; tianwang's handler puts the bounded pool there (tianwang/connections.py),
    which works with Twisted's pool internals, and has that factory's protocols bound a
    response's head (tianwang/responsehead.py) with Twisted's protocol internals."""
    from scrapy.core.downloader.handlers.http11 import HTTP11DownloadHandler
    from twisted.web._newclient import HEADER, STATUS, HTTP11ClientProtocol
    from twisted.web.client import HTTPConnectionPool

    from tianwang.connections import KeepAlivePool
    from tianwang.httphandler import HTTPDownloadHandler
    from tianwang.responsehead import HeadBound

    scrapys = HTTP11DownloadHandler(get_crawler())
    handler = HTTPDownloadHandler(get_crawler(settings_dict={
        "TIANWANG_IDLE_CONNECTIONS": 7, "TIANWANG_MAX_HEAD_BYTES": 65536}))
    assert isinstance(handler._pool, KeepAlivePool) and handler._pool.max_idle == 7
    assert issubclass(handler._pool._factory, scrapys._pool._factory)
    protocol = handler._pool._factory(lambda _: None, "endpoint").buildProtocol(None)
    expected = type(scrapys._pool._factory(lambda _: None, "endpoint").buildProtocol(None))
    assert isinstance(protocol, expected) and isinstance(protocol, HeadBound)
    assert protocol.max_head == 65536
    pool = HTTPConnectionPool(None)
    assert all(hasattr(pool, name) for name in scrapy_internals.POOL_INTERNALS)
    assert all(hasattr(HTTP11ClientProtocol, name)
               for name in scrapy_internals.PROTOCOL_INTERNALS)
    assert scrapy_internals.HEAD_STATES == {STATUS, HEADER}


def test_a_twisted_protocol_without_its_give_up_is_refused(monkeypatch) -> None:
    from twisted.web._newclient import HTTP11ClientProtocol

    from tianwang.httphandler import HTTPDownloadHandler

    monkeypatch.delattr(HTTP11ClientProtocol, "_giveUp")
    with pytest.raises(ScrapyInternalsError, match="_giveUp"):
        HTTPDownloadHandler(get_crawler(settings_dict={
            "TIANWANG_IDLE_CONNECTIONS": 7, "TIANWANG_MAX_HEAD_BYTES": 65536}))


def test_a_handler_without_the_pool_is_refused() -> None:
    with pytest.raises(ScrapyInternalsError, match="_pool"):
        scrapy_internals.set_connection_pool(SimpleNamespace(), object())


def test_a_handler_without_the_context_factory_is_refused() -> None:
    with pytest.raises(ScrapyInternalsError, match="_contextFactory"):
        scrapy_internals.set_tls_policy(SimpleNamespace(), object())
