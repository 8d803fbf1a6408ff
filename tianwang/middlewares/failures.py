"""Download failures that are the web's fault: counted, one log line per host and reason.

A dead server, a refused connection, a name that does not resolve, a timeout, a connection
cut: Scrapy logs each failed url as an ERROR with its traceback (a dead server gave an 8 MB
log, 4.7 KB a url). Here, after RetryMiddleware has given up, the failure is counted as
tianwang/error/<reason>, logged once per (host, reason) and ends as IgnoreRequest (which
Scrapy does not log). Any other exception is left alone: a bug still shows its traceback.

A host that failed to connect (refused, dns, connect) once is not retried for its other
urls: a retry of a dead host costs the same again. Timeouts are not retried at all (the
project's RETRY_EXCEPTIONS leaves them out): a slow server is as slow the second time.

A host whose downloads time out TIANWANG_MAX_HOST_TIMEOUTS times in a row, no answer between,
is given up: its later requests fail here at once, counted as `timeout_host`, as BUbiNG
purges a host after its socket timeouts. Without it a server that takes connections and
never answers (a tarpit, or a host overloaded for good) holds one of the crawl's
connections for DOWNLOAD_TIMEOUT (180 s) per url, one url after another: days for a host of
a thousand pages, and a handful of such hosts hold most of the crawl's connections. Any
answer of the host, whatever its status, starts its count again.

An answer Twisted's HTTP parser cannot read is `bad_response`, not `connect`: Scrapy wraps
every ResponseFailed in one DownloadFailedError, so the reason is read from what it wraps
(its __cause__): two different Content-Lengths (ValueError), a status line that is not one
(ParseError), a header line of more than 16 KiB (Twisted closes the connection: a clean
close in the middle of a response's head), a continuation line before any header. A
connection cut in the middle of a head is `connection_lost`; a server that closed without
answering at all (ResponseNeverReceived) stays `connect`.
"""

from __future__ import annotations

import logging
from typing import Any

from scrapy import Request
from scrapy.core.downloader.handlers.http11 import TunnelError
from scrapy.exceptions import (
    CannotResolveHostError,
    DownloadConnectionRefusedError,
    DownloadFailedError,
    DownloadTimeoutError,
    IgnoreRequest,
    ResponseDataLossError,
)
from twisted.internet.error import ConnectError, ConnectionDone, ConnectionLost
from twisted.web.client import ResponseFailed, ResponseNeverReceived

from tianwang.config import get_int
from tianwang.recent import HOSTS_NOTED, RecentSet
from tianwang.urls import url_host

logger = logging.getLogger(__name__)

# (exception types, reason), first match wins.
REASONS: tuple[tuple[tuple[type[BaseException], ...], str], ...] = (
    ((DownloadTimeoutError,), "timeout"),
    ((DownloadConnectionRefusedError,), "refused"),
    ((CannotResolveHostError,), "dns"),
    ((ResponseDataLossError, ConnectionLost, ConnectionDone), "connection_lost"),
    ((DownloadFailedError, ConnectError, TunnelError, OSError), "connect"),
)
DEAD = frozenset({"refused", "dns", "connect"})  # a host failing so is not retried again


def failure_reason(exception: BaseException) -> str | None:
    """The reason a download failed when it is the web's doing, None for anything else."""
    if isinstance(exception, DownloadFailedError):
        unread = _unreadable(exception.__cause__)
        if unread is not None:
            return unread
    for types, reason in REASONS:
        if isinstance(exception, types):
            return reason
    return None


def _unreadable(cause: BaseException | None) -> str | None:
    """bad_response or connection_lost for a response whose head could not be read; None
    for any other cause (a server that never answered)."""
    if not isinstance(cause, ResponseFailed) or isinstance(cause, ResponseNeverReceived):
        return None
    reasons = [failure.value for failure in cause.reasons]
    if any(isinstance(r, ConnectionLost) for r in reasons) and \
            all(isinstance(r, (ConnectionLost, ConnectionDone)) for r in reasons):
        return "connection_lost"  # cut, not closed: ConnectionDone is the clean close
    return "bad_response"


class OncePerHost:
    """Logs a condition once per (host, reason): a repeated one is only counted."""

    def __init__(self, log: logging.Logger) -> None:
        self.log, self.seen = log, RecentSet()

    def __call__(self, request: Request, reason: str, detail: str) -> None:
        try:
            host = url_host(request.url)
        except ValueError:
            host = ""
        if (host, reason) in self.seen:
            return
        self.seen.add((host, reason))
        self.log.info("%s: %s on %s (%s; logged once per host)", reason, request, host, detail)


class FailureMiddleware:
    def __init__(self, stats: Any, max_timeouts: int = 0) -> None:
        self.stats = stats
        self.once = OncePerHost(logger)
        # Hosts remembered in passing, the newest HOSTS_NOTED of each (tianwang/recent.py):
        # a forgotten one is tried again, a cost bounded by what made it dead.
        self.dead_hosts = RecentSet()
        self.max_timeouts = max_timeouts  # in a row, before a host is given up; 0: never
        self.timeouts: dict[str, int] = {}  # host -> timeouts since its last answer
        self.given_up = RecentSet()

    @classmethod
    def from_crawler(cls, crawler: Any) -> FailureMiddleware:
        return cls(crawler.stats, get_int(crawler.settings, "TIANWANG_MAX_HOST_TIMEOUTS", 0))

    def process_request(self, request: Request, spider: Any = None) -> None:
        if not (self.dead_hosts or self.given_up):
            return
        host = _host(request)
        if host in self.given_up:
            self.stats.inc_value("tianwang/error/timeout_host")
            self.once(request, "timeout_host",
                      f"given up after {self.max_timeouts} timeouts in a row")
            raise DownloadFailed("timeout_host")
        if host in self.dead_hosts:
            request.meta["dont_retry"] = True

    def process_response(self, request: Request, response: Any, spider: Any = None) -> Any:
        if self.timeouts:
            self.timeouts.pop(_host(request), None)
        return response

    def process_exception(self, request: Request, exception: Exception,
                          spider: Any = None) -> None:
        reason = failure_reason(exception)
        if reason is None:
            return
        if reason in DEAD:
            self.dead_hosts.add(_host(request))
        elif reason == "timeout" and self.max_timeouts:
            self._timed_out(_host(request))
        self.stats.inc_value(f"tianwang/error/{reason}")
        self.once(request, reason, f"{type(exception).__name__}: {exception}"[:200])
        raise DownloadFailed(reason)

    def _timed_out(self, host: str) -> None:
        count = self.timeouts.pop(host, 0) + 1  # re-inserted newest: the oldest go first
        if count < self.max_timeouts:
            self.timeouts[host] = count
            if len(self.timeouts) > HOSTS_NOTED:
                del self.timeouts[next(iter(self.timeouts))]
            return
        self.given_up.add(host)
        self.stats.inc_value("tianwang/hosts/timed_out")  # hosts, not pages: apart from error/


class DownloadFailed(IgnoreRequest):
    """A download the web failed (timeout, refused, DNS...), counted and logged here: still an
    IgnoreRequest for the spider, but a caller that must tell "no answer" from "refused by a
    filter" (robots.txt: unreachable means wait, not allow all) can catch it first."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"download failed: {reason}")
        self.reason = reason


def _host(request: Request) -> str:
    try:
        return url_host(request.url)
    except ValueError:
        return ""
