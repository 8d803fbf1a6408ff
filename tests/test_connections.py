"""Kept-alive connections (tianwang/connections.py) against a real nginx, whose access log
numbers each connection: what was reused is what the server saw."""

from __future__ import annotations

from pathlib import Path

import pytest_twisted
from twisted.internet.defer import Deferred

from tests.docs_web import DocsWeb
from tianwang.connections import KeepAlivePool


def site(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    root.mkdir()
    for n in range(20):
        (root / f"p{n}.html").write_text(f"<html><body>page {n}</body></html>",
                                         encoding="utf-8")
    return root


async def get(agent: object, url: str) -> bytes:
    """The body of a GET (read by a protocol of its own: Twisted's readBody warns on the
    asyncio reactor's transports)."""
    from twisted.internet.protocol import Protocol

    response = await agent.request(b"GET", url.encode())
    done: Deferred[bytes] = Deferred()

    class Body(Protocol):
        parts: list[bytes] = []

        def dataReceived(self, data: bytes) -> None:
            self.parts.append(data)

        def connectionLost(self, reason: object = None) -> None:
            done.callback(b"".join(self.parts))

    response.deliverBody(Body())
    return await done


def agent_of(pool: KeepAlivePool, proxy: str | None = None) -> object:
    from twisted.internet import reactor
    from twisted.internet.endpoints import TCP4ClientEndpoint
    from twisted.web.client import Agent, ProxyAgent

    if proxy is None:
        return Agent(reactor, pool=pool)
    host, port = proxy.rsplit(":", 1)
    return ProxyAgent(TCP4ClientEndpoint(reactor, host.split("//")[-1], int(port)), reactor,
                      pool=pool)


def pool_of(**overrides: object) -> KeepAlivePool:
    from twisted.internet import reactor

    options = {"per_host": 1, "per_proxy": 8, "max_idle": 256, "idle_timeout": 240.0}
    options.update(overrides)
    return KeepAlivePool(reactor, **options)


@pytest_twisted.ensureDeferred
async def test_idle_connections_are_bounded_over_all_hosts(tmp_path: Path) -> None:
    """Eight hosts (here: eight ports of one nginx) fetched in turn, three idle connections
    kept: the three used last are used again, the others were closed and are made anew."""
    with DocsWeb({"pages.test": site(tmp_path)}, tmp_path / "web", ports=8) as web:
        pool = pool_of(max_idle=3)
        agent = agent_of(pool)
        urls = [f"http://127.0.0.1:{port}/p{n}.html" for n, port in enumerate(web.ports)]
        for url in urls:
            await get(agent, url)
        assert len(pool.idle) == 3
        for url in urls[-3:] + urls[:2]:
            await get(agent, url)
        await pool.closeCachedConnections()
    log = web.requests()
    first, second = log[:8], log[8:]
    assert [line["connection"] for line in second[:3]] == [
        line["connection"] for line in first[-3:]]  # the same connections again
    assert not {line["connection"] for line in second[3:]} & {
        line["connection"] for line in first}  # closed when past the bound: new ones


@pytest_twisted.ensureDeferred
async def test_requests_through_a_proxy_keep_their_connections(tmp_path: Path) -> None:
    """Scrapy keys every connection to an HTTP proxy under the proxy's address, and its pool
    kept CONCURRENT_REQUESTS_PER_DOMAIN of them: the rest were made anew for each request."""
    from twisted.internet.defer import gatherResults

    with DocsWeb({"pages.test": site(tmp_path)}, tmp_path / "web") as web:
        pool = pool_of(per_host=1, per_proxy=8)
        agent = agent_of(pool, web.address)
        for _ in range(5):  # five waves of eight requests at once
            await gatherResults([Deferred.fromCoroutine(
                get(agent, f"http://pages.test/p{n}.html")) for n in range(8)])
        await pool.closeCachedConnections()
    log = web.requests()
    assert len(log) == 40 and {line["status"] for line in log} == {200}
    assert len({line["connection"] for line in log}) == 8


@pytest_twisted.ensureDeferred
async def test_an_idle_connection_is_closed_when_its_time_is_up(tmp_path: Path) -> None:
    from twisted.internet import reactor
    from twisted.internet.task import deferLater

    with DocsWeb({"pages.test": site(tmp_path)}, tmp_path / "web") as web:
        pool = pool_of(idle_timeout=0.2)
        agent = agent_of(pool)
        await get(agent, f"{web.address}/p1.html")
        assert len(pool.idle) == 1
        while pool.idle:  # the timeout fires on its own
            await deferLater(reactor, 0.05, lambda: None)
        assert pool._connections == {}  # no empty list kept per host
        await get(agent, f"{web.address}/p2.html")
        await pool.closeCachedConnections()
    first, second = web.requests()
    assert first["connection"] != second["connection"]
