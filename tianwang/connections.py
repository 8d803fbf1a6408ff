"""The download handlers' pool of kept-alive connections, bounded for crawls of many hosts.

Scrapy's HTTP/1.1 handler keeps a connection alive after each response (Twisted's
HTTPConnectionPool): up to CONCURRENT_REQUESTS_PER_DOMAIN per host, each for 240 s idle. A
polite crawl fetches a host again one delay later (DOWNLOAD_DELAY, or its Crawl-delay up to
TIANWANG_MAX_CRAWL_DELAY): within those 240 s, so the next request skips the TCP (and TLS)
handshake. Two things go wrong at scale:

- idle connections are not bounded over all hosts: a crawl of 50,000 hosts at 300 requests
  a second holds some 70,000 sockets 240 s after their last use, past the process's file
  limit (EMFILE: every new connection, record file and DNS query then fails). Here at most
  TIANWANG_IDLE_CONNECTIONS are kept; past it the one idle longest is closed;
- all requests through an HTTP proxy share one pool key (the proxy's address), so the
  per-host limit kept one or a few connections to it and opened a new one for nearly every
  request. Connections to a proxy are kept up to CONCURRENT_REQUESTS.

The idle time is Twisted's 240 s, or twice DOWNLOAD_DELAY when that is longer. A server
closes an idle connection sooner if it likes (nginx after 75 s, Apache after 5): a connection
found closed is dropped, and a request sent on one the server closed at that moment is sent
again once on a new one (Twisted's retry of idempotent requests).

It replaces the handler's own pool through tianwang.scrapy_internals (Scrapy's `_pool`), and
overrides Twisted's private `_putConnection` and `_removeConnection` (pinned by
tests/test_scrapy_internals.py).
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from twisted.web.client import HTTPConnectionPool

from tianwang.config import get_int

# The first item of a pool key for an HTTP proxy: Scrapy's (b"http-proxy", host, port) and
# Twisted's ProxyAgent's ("http-proxy", endpoint).
PROXY_KEYS = frozenset({b"http-proxy", "http-proxy"})
TWISTED_IDLE = 240  # HTTPConnectionPool.cachedConnectionTimeout


class KeepAlivePool(HTTPConnectionPool):
    def __init__(self, reactor: Any, per_host: int, per_proxy: int, max_idle: int,
                 idle_timeout: float) -> None:
        super().__init__(reactor, persistent=max_idle > 0)
        self.maxPersistentPerHost = per_host
        self.per_proxy = per_proxy
        self.max_idle = max_idle
        self.cachedConnectionTimeout = idle_timeout
        self.idle: OrderedDict[Any, Any] = OrderedDict()  # connection -> key, oldest first

    @classmethod
    def from_settings(cls, reactor: Any, settings: Any) -> KeepAlivePool:
        delay = settings.getfloat("DOWNLOAD_DELAY")
        return cls(reactor,
                   per_host=settings.getint("CONCURRENT_REQUESTS_PER_DOMAIN"),
                   per_proxy=settings.getint("CONCURRENT_REQUESTS"),
                   max_idle=get_int(settings, "TIANWANG_IDLE_CONNECTIONS", minimum=0),
                   idle_timeout=max(TWISTED_IDLE, 2 * delay))

    def limit(self, key: Any) -> int:
        """Idle connections kept for one pool key."""
        proxied = isinstance(key, tuple) and bool(key) and key[0] in PROXY_KEYS
        return self.per_proxy if proxied else self.maxPersistentPerHost

    def getConnection(self, key: Any, endpoint: Any) -> Any:
        kept = self._connections.get(key)
        if kept:
            before = list(kept)
            found = super().getConnection(key, endpoint)
            for connection in before[: len(before) - len(kept)]:  # taken from the front
                self.idle.pop(connection, None)
            self._forget_empty(key)
            return found
        return super().getConnection(key, endpoint)

    def _putConnection(self, key: Any, connection: Any) -> None:
        if connection.state != "QUIESCENT" or self.max_idle <= 0:
            return super()._putConnection(key, connection)  # Twisted logs the bug
        kept = self._connections.setdefault(key, [])
        while len(kept) >= self.limit(key):
            self._close(key, kept[0])
        while len(self.idle) >= self.max_idle:
            oldest, oldest_key = next(iter(self.idle.items()))
            self._close(oldest_key, oldest)
        kept = self._connections.setdefault(key, [])
        kept.append(connection)
        self.idle[connection] = key
        self._timeouts[connection] = self._reactor.callLater(
            self.cachedConnectionTimeout, self._removeConnection, key, connection)

    def _removeConnection(self, key: Any, connection: Any) -> None:
        """An idle connection's time is up: closed."""
        self._close(key, connection)

    def _close(self, key: Any, connection: Any) -> None:
        connection.transport.loseConnection()
        self._connections[key].remove(connection)
        timeout = self._timeouts.pop(connection)
        if timeout.active():
            timeout.cancel()
        self.idle.pop(connection, None)
        self._forget_empty(key)

    def _forget_empty(self, key: Any) -> None:
        """No empty list left per host: a crawl of millions of hosts would keep them all."""
        if not self._connections.get(key, True):
            del self._connections[key]

    def closeCachedConnections(self) -> Any:
        self.idle.clear()
        return super().closeCachedConnections()
