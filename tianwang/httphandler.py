"""The http download handler: Scrapy's HTTP/1.1 handler whose downloads a close can end.

A server that accepts a connection and never answers holds its request for DOWNLOAD_TIMEOUT
(180 s by default) and Scrapy's close waits for it, however the close was asked for
(CLOSESPIDER_TIMEOUT, Ctrl-C, SIGTERM). This handler runs each download as a task of its
own and, on tianwang.signals.abandon_in_flight (sent by the closing extension once a close
has waited TIANWANG_CLOSE_GRACE seconds), cancels them all: each connection is aborted and
its request ends in Abandoned, an IgnoreRequest nobody logs or counts as the web's failure.
The schedulers mark nothing done from that signal on, so the job fetches them again when it
resumes. Its kept-alive connections are bounded over all hosts (tianwang/connections.py).
The https handler (tlshandler.py) is this one with its TLS policy.

The same cancel gives an idle timeout, wget's `-T` (its read timeout): with
TIANWANG_IDLE_TIMEOUT > 0, a download that receives no byte for that many seconds ends in
DownloadTimeoutError, however long it has run, while one that keeps trickling goes on until
DOWNLOAD_TIMEOUT (the bound on the whole download). The clock starts with the download (so
it covers the connect and the wait for the status line, as one span where wget allows -T for
each) and restarts at the headers and at every chunk of the body (Scrapy's headers_received
and bytes_received signals).

Cancelling needs the asyncio reactor (Scrapy's default); under another reactor the
downloads are left to their timeout.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from scrapy import signals as scrapy_signals
from scrapy.core.downloader.handlers.http11 import HTTP11DownloadHandler
from scrapy.exceptions import DownloadTimeoutError, IgnoreRequest
from scrapy.utils.reactor import is_asyncio_reactor_installed

from tianwang import signals
from tianwang.config import get_int, get_seconds
from tianwang.connections import KeepAlivePool
from tianwang.responsehead import bounded_factory
from tianwang.scrapy_internals import set_connection_pool

# A head's bound: at least one header line of Twisted's longest (16 KiB); at most what a
# record keeps for the status line and headers (tianwang/formats/record.py).
MIN_HEAD, MAX_HEAD = 16 * 1024, 1024 * 1024

logger = logging.getLogger(__name__)


class Abandoned(IgnoreRequest):
    """A request given up because the crawl is closing; fetched again when the job resumes."""

    def __init__(self) -> None:
        super().__init__("given up: the crawl is closing")


class IdleWatch:
    """Cancels a download's task once `seconds` pass without `touch`: the timer is not moved
    at each chunk, it looks at the last touch when it fires and sleeps for the rest."""

    def __init__(self, task: asyncio.Task[Any], seconds: float) -> None:
        self.task, self.seconds = task, seconds
        self.loop = asyncio.get_running_loop()
        self.last = self.loop.time()
        self.fired = False
        self.handle = self.loop.call_later(seconds, self._check)

    def touch(self) -> None:
        self.last = self.loop.time()

    def _check(self) -> None:
        left = self.last + self.seconds - self.loop.time()
        if left > 0:
            self.handle = self.loop.call_later(left, self._check)
            return
        self.fired = True
        self.task.cancel()

    def stop(self) -> None:
        self.handle.cancel()


def max_head(settings: Any) -> int:
    return get_int(settings, "TIANWANG_MAX_HEAD_BYTES", MIN_HEAD, MAX_HEAD)


def idle_timeout(settings: Any) -> float:
    # None: the handler named in a project's DOWNLOAD_HANDLERS without the stack's settings
    if settings.get("TIANWANG_IDLE_TIMEOUT") is None:
        return 0.0
    return get_seconds(settings, "TIANWANG_IDLE_TIMEOUT")


class HTTPDownloadHandler(HTTP11DownloadHandler):
    def __init__(self, crawler: Any) -> None:
        super().__init__(crawler)
        from twisted.internet import reactor

        head = max_head(crawler.settings)
        set_connection_pool(self, KeepAlivePool.from_settings(reactor, crawler.settings),
                            lambda factory: bounded_factory(factory, head))
        self._tasks: set[asyncio.Task[Any]] = set()
        self.abandoning = False
        self._cancellable = is_asyncio_reactor_installed()
        self.idle_timeout = idle_timeout(crawler.settings)
        self._watches: dict[Any, IdleWatch] = {}  # request -> its download's idle watch
        crawler.signals.connect(self.abandon, signal=signals.abandon_in_flight)
        if self.idle_timeout and self._cancellable:
            crawler.signals.connect(self._received, signal=scrapy_signals.headers_received)
            crawler.signals.connect(self._received, signal=scrapy_signals.bytes_received)

    @classmethod
    def check_settings(cls, settings: Any) -> None:
        """SettingError for a bad setting of this handler: Scrapy builds a handler at its
        first request and logs an error there as a traceback, the crawl going on without
        it (tianwang.extensions.handlercheck calls this as the crawl starts)."""
        max_head(settings)
        idle_timeout(settings)
        KeepAlivePool.from_settings(None, settings)

    async def download_request(self, request: Any) -> Any:
        if self.abandoning:
            raise Abandoned
        if not self._cancellable:
            return await super().download_request(request)
        task = asyncio.ensure_future(super().download_request(request))
        self._tasks.add(task)
        watch = IdleWatch(task, self.idle_timeout) if self.idle_timeout else None
        if watch is not None:
            self._watches[request] = watch
        try:
            return await task
        except asyncio.CancelledError:
            if task.cancelled() and self.abandoning:
                raise Abandoned from None
            if task.cancelled() and watch is not None and watch.fired:
                raise DownloadTimeoutError(f"Getting {request.url} received no byte for "
                                           f"{self.idle_timeout:g} seconds.") from None
            raise
        finally:
            self._tasks.discard(task)
            if watch is not None:
                watch.stop()
                self._watches.pop(request, None)

    def _received(self, request: Any, **_kwargs: Any) -> None:
        watch = self._watches.get(request)
        if watch is not None:
            watch.touch()

    def abandon(self) -> None:
        """Cancel every download in flight (their connections are aborted), and any later one."""
        self.abandoning = True
        for task in list(self._tasks):
            task.cancel()
