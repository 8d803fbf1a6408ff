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

Cancelling needs the asyncio reactor (Scrapy's default); under another reactor the
downloads are left to their timeout.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from scrapy.core.downloader.handlers.http11 import HTTP11DownloadHandler
from scrapy.exceptions import IgnoreRequest
from scrapy.utils.reactor import is_asyncio_reactor_installed

from tianwang import signals
from tianwang.connections import KeepAlivePool
from tianwang.scrapy_internals import set_connection_pool

logger = logging.getLogger(__name__)


class Abandoned(IgnoreRequest):
    """A request given up because the crawl is closing; fetched again when the job resumes."""

    def __init__(self) -> None:
        super().__init__("given up: the crawl is closing")


class HTTPDownloadHandler(HTTP11DownloadHandler):
    def __init__(self, crawler: Any) -> None:
        super().__init__(crawler)
        from twisted.internet import reactor

        set_connection_pool(self, KeepAlivePool.from_settings(reactor, crawler.settings))
        self._tasks: set[asyncio.Task[Any]] = set()
        self.abandoning = False
        self._cancellable = is_asyncio_reactor_installed()
        crawler.signals.connect(self.abandon, signal=signals.abandon_in_flight)

    async def download_request(self, request: Any) -> Any:
        if self.abandoning:
            raise Abandoned
        if not self._cancellable:
            return await super().download_request(request)
        task = asyncio.ensure_future(super().download_request(request))
        self._tasks.add(task)
        try:
            return await task
        except asyncio.CancelledError:
            if task.cancelled() and self.abandoning:
                raise Abandoned from None
            raise
        finally:
            self._tasks.discard(task)

    def abandon(self) -> None:
        """Cancel every download in flight (their connections are aborted), and any later one."""
        self.abandoning = True
        for task in list(self._tasks):
            task.cancel()
