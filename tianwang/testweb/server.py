"""Serve a SyntheticWeb over HTTP as a forward proxy on 127.0.0.1.

A crawler points its proxy setting here and asks for `GET http://host/path HTTP/1.1`; the
answer is `web.respond(url)`. An origin-form request (`GET /path` + Host) is answered the
same way, so a browser or curl can look at one host directly.
"""

from __future__ import annotations

import gc
import json
import logging
import random
import socket
import sys
import time
from collections.abc import Callable, Iterator
from typing import IO, Any

from twisted.web import resource, server
from twisted.web.server import Request

from tianwang.testweb.floods import Silent
from tianwang.testweb.model import SyntheticWeb

logger = logging.getLogger(__name__)

SEND_BUFFER = 64 * 1024  # socket send buffer of a streamed body


class AccessLog:
    """One JSON line per request served, written and flushed in serving order."""

    def __init__(self, path: str | None) -> None:
        # Open for the server's whole life (not a with block); close() ends it at shutdown.
        self._file: IO[str] | None = open(path, "a", encoding="utf-8") if path else None

    def write(self, method: str, url: str, status: int, size: int, **extra: object) -> None:
        if self._file is None:
            return
        line = {"time": time.time(), "method": method, "url": url, "status": status, "bytes": size}
        line |= extra
        self._file.write(json.dumps(line) + "\n")
        self._file.flush()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


class ProxyResource(resource.Resource):
    """Every request, whatever its path, is answered from the model."""

    isLeaf = True

    def __init__(self, web: SyntheticWeb, log: AccessLog, latency: float = 0.0,
                 spread: float = 0.0) -> None:
        super().__init__()
        self.web, self.log, self.latency = web, log, latency
        self.spread = spread
        self._draws = random.Random(0)  # the same answer times from run to run

    def render(self, request: Request) -> bytes | int:
        if not self.latency:
            return self._render(request)
        # A server's think time, as a real one takes: the answer waits, nothing blocks.
        from twisted.internet import reactor

        wait = self.latency
        if self.spread:  # real servers' times vary: a constant one keeps a crawl in lockstep
            wait *= self._draws.uniform(1 - self.spread, 1 + self.spread)
        call = reactor.callLater(wait, self._answer_late, request)  # type: ignore[attr-defined]
        request.notifyFinish().addErrback(lambda _: call.cancel() if call.active() else None)
        return server.NOT_DONE_YET

    def _answer_late(self, request: Request) -> None:
        body = self._render(request)
        if body is not server.NOT_DONE_YET:  # a streamed body finishes itself
            request.write(body)
            request.finish()

    def _render(self, request: Request) -> bytes | int:
        method = request.method.decode("ascii", "replace")
        url = request_url(request)
        if method not in ("GET", "HEAD"):
            request.setResponseCode(405)
            request.setHeader(b"allow", b"GET, HEAD")
            self.log.write(method, url, 405, 0)
            return b""
        answer = self._answer(request, url)
        cookie = request.getHeader(b"cookie")
        seen = {"cookie_bytes": len(cookie)} if cookie else {}
        if isinstance(answer, Silent):  # logged as it comes: nothing else would say it did
            self.log.write(method, url, 0, 0, silent=True, **seen)
            return server.NOT_DONE_YET
        request.setResponseCode(answer.status)
        for name, value in answer.headers:  # a name given twice (Set-Cookie) is sent twice
            request.responseHeaders.addRawHeader(name.encode("ascii"), value.encode("ascii"))
        if answer.header("Content-Type") is None:
            request.defaultContentType = None  # else twisted sends text/html for it
        if method == "HEAD":
            # twisted sends no body for HEAD; the length is the one GET would send.
            request.setHeader(b"content-length", str(len(answer.body)).encode("ascii"))
            self.log.write(method, url, answer.status, 0)
            return b""
        chunks = getattr(answer, "chunks", None)  # a large body, written as it is taken
        if chunks is not None:
            return stream(request, chunks(), answer.length, lambda **done: self.log.write(
                method, url, answer.status, answer.length, **seen, **done))
        self.log.write(method, url, answer.status, len(answer.body), **seen)
        return answer.body


    def _answer(self, request: Request, url: str):
        """The model's answer; on a --changing web, at its clock, maybe 304 (changing.py)."""
        changing = self.web.changing
        if changing is None:
            return self.web.respond(url)
        from tianwang.testweb.changing import CONTROL_PATH, http_date

        path, _, query = request.uri.decode("latin-1").partition("?")
        if path == CONTROL_PATH:  # origin-form only: no crawled url has this form
            answer = changing.control(query)
        else:
            answer = changing.respond(url, _header(request, b"if-none-match"),
                                      _header(request, b"if-modified-since"))
        request.setHeader(b"date", http_date(changing.now).encode("ascii"))
        return answer


def _header(request: Request, name: bytes) -> str | None:
    value = request.getHeader(name)
    return value.decode("latin-1") if value is not None else None


def stream(request: Request, chunks: Iterator[bytes], length: int, log: Callable) -> int:
    """Write a body chunk by chunk, each only when the socket took the last one.

    So when the client hangs up early, `sent` (logged with "complete": false) tells how much
    of the body ever left this server: at most what the kernel's socket buffers held.
    """
    request.setHeader(b"content-length", str(length).encode("ascii"))
    # A small send buffer, so the kernel holds little the client never asked to read.
    handle = getattr(request.channel.transport, "socket", None)
    if handle is not None:
        handle.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SEND_BUFFER)
    sent = [0]

    class Producer:  # a pull producer: twisted asks for the next chunk when it has room
        def resumeProducing(self) -> None:
            chunk = next(chunks, None)
            if chunk is None:
                request.unregisterProducer()
                request.finish()
                return
            sent[0] += len(chunk)
            request.write(chunk)

        def stopProducing(self) -> None:
            pass

    finished = request.notifyFinish()
    finished.addCallback(lambda _: log(sent=sent[0], complete=True))
    finished.addErrback(lambda _: log(sent=sent[0], complete=False))
    request.registerProducer(Producer(), False)
    return server.NOT_DONE_YET


def request_url(request: Request) -> str:
    """The absolute url asked for: the request target itself, or Host + path."""
    target = request.uri.decode("latin-1")
    if target.startswith(("http://", "https://")):
        return target.split("#", 1)[0]
    host = (request.getHeader(b"host") or b"").decode("latin-1")
    scheme = "https" if request.isSecure() else "http"  # inside a CONNECT tunnel (tunnel.py)
    return f"{scheme}://{host}{target}"


class QuietSite(server.Site):
    """A Site without twisted's own access log: ours is AccessLog, in JSON."""

    def log(self, request: Request) -> None:
        return None


def serve(web: SyntheticWeb, port: int = 0, access_log: str | None = None,
          ca_file: str | None = None, latency: float = 0.0, spread: float = 0.0,
          listening: Callable[[str], None] | None = None) -> int:
    """Listen on 127.0.0.1:port, print the address first on stdout (or hand it to
    `listening`), serve until a signal.

    On an https web (web.https) the proxy also answers CONNECT (tunnel.py); the test CA's
    certificate is written to ca_file first, if given. Every answer waits `latency` seconds
    before it is sent (a real server's response time), without holding up the others; with
    `spread`, a time drawn uniformly within latency x (1 +- spread).
    """
    from twisted.internet import reactor

    log = AccessLog(access_log)
    site: Any = QuietSite(ProxyResource(web, log, latency, spread))
    site.displayTracebacks = False
    https = getattr(web, "https", None)
    if https is not None:
        from tianwang.testweb.tls import TestCA
        from tianwang.testweb.tunnel import TunnelFactory

        ca = TestCA()
        if ca_file:
            ca.write(ca_file)
        site = TunnelFactory(site, ca, https, log)
    listener = reactor.listenTCP(port, site, interface="127.0.0.1")  # type: ignore[attr-defined]
    address = f"http://127.0.0.1:{listener.getHost().port}"
    (listening or print)(address)
    sys.stdout.flush()
    logger.info("serving %d hosts (seed %d) at %s", len(web.hosts), web.seed, address)
    gc.callbacks.append(_freeze_survivors)
    try:
        reactor.run()  # type: ignore[attr-defined]  # SIGTERM and SIGINT stop it cleanly
    finally:
        gc.callbacks.remove(_freeze_survivors)
        log.close()
        sys.stdout.flush()
    return 0


def _freeze_survivors(phase: str, info: dict[str, int]) -> None:
    """After a full collection, leave what survived it out of the next ones.

    The web's caches of built sites (acyclic: freed by their counts when dropped) grow to
    over a million objects on a web of 10,000 hosts, and each full collection scanned them
    all: pauses of up to 0.6 s that every answer in flight waited out, counted against the
    crawler being measured. Only objects alive at a full collection that later die in a
    cycle are never freed (a few per request in flight at that moment): a server for
    tests and benchmarks can afford that."""
    if phase == "stop" and info["generation"] == 2:
        gc.freeze()
