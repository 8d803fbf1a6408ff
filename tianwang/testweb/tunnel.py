"""The proxy's CONNECT: a tunnel to a virtual host of the https test web, over TLS.

A connection's first bytes decide: `CONNECT host:443` is answered `200 Connection
established`, TLS starts on the same connection with that host's certificate (tls.py), and
the decrypted stream goes to a fresh HTTP channel of the same site, which then sees
https urls. Anything else goes to the HTTP channel as it came.
"""

from __future__ import annotations

from typing import Any

from twisted.internet.protocol import Factory, Protocol

from tianwang.testweb.tls import TestCA

MAX_HEAD = 8192  # bytes of a CONNECT request's head before the connection is dropped
ESTABLISHED = b"HTTP/1.1 200 Connection established\r\n\r\n"
REFUSED = b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"


class TunnelFactory(Factory):
    """Wraps the twisted.web Site: each connection first meets a FrontProtocol."""

    def __init__(self, site: Any, ca: TestCA | None, https: Any, log: Any) -> None:
        self.site, self.ca, self.https, self.log = site, ca, https, log

    def startFactory(self) -> None:
        self.site.doStart()

    def stopFactory(self) -> None:
        self.site.doStop()

    def buildProtocol(self, addr: Any) -> FrontProtocol:
        protocol = FrontProtocol(self, addr)
        protocol.factory = self
        return protocol


class FrontProtocol(Protocol):
    def __init__(self, factory: TunnelFactory, addr: Any) -> None:
        self.tunnels, self.addr = factory, addr
        self._head = b""
        self._inner: Any = None

    def dataReceived(self, data: bytes) -> None:
        if self._inner is not None:
            self._inner.dataReceived(data)
            return
        self._head += data
        if self.tunnels.ca is None or not b"CONNECT ".startswith(self._head[:8]):
            self._hand_over(self._head)  # a plain request (or CONNECT without --https: 405)
        elif len(self._head) >= 8:
            head, found, rest = self._head.partition(b"\r\n\r\n")
            if found:
                self._connect(head.split(b"\r\n", 1)[0], rest)
            elif len(self._head) > MAX_HEAD:
                self.transport.loseConnection()

    def _connect(self, line: bytes, rest: bytes) -> None:
        target = line.split(b" ")[1].decode("latin-1") if line.count(b" ") >= 1 else ""
        host, _, port = target.rpartition(":")
        https = self.tunnels.https
        case = https.tls(host) if host in https.kinds and port == "443" else None
        if case is None:  # no https there: as a closed port 443
            self.tunnels.log.write("CONNECT", target, 502, 0)
            self.transport.write(REFUSED)
            self.transport.loseConnection()
            return
        self.tunnels.log.write("CONNECT", target, 200, 0)
        raw = self.transport
        raw.write(ESTABLISHED)
        raw.startTLS(self.tunnels.ca.options(host, case))
        self._hand_over(b"")  # self.transport is now the TLS layer
        if rest:  # a client that did not wait for the 200: its first TLS bytes
            raw.protocol.dataReceived(rest)

    def _hand_over(self, data: bytes) -> None:
        self._inner = self.tunnels.site.buildProtocol(self.addr)
        self._inner.makeConnection(self.transport)
        if data:
            self._inner.dataReceived(data)

    def connectionLost(self, reason: Any = None) -> None:
        if self._inner is not None:
            self._inner.connectionLost(reason)
