"""Every private Scrapy and Twisted attribute tianwang relies on, in one place, checked at start.

Scrapy 2.19 has no public hook for these things the crawl needs:
- when the engine has finished with a request (its response parsed by the spider, the items
  through the pipelines, the new requests scheduled): no signal fires then (item_scraped is
  per item, request_left_downloader and response_received fire before the spider has
  seen the response). The engine keeps those requests in ``engine._slot.inprogress``; the
  frontier marks a request done (request log, Redis ack) once it has left that set, so a
  kill never loses the links of a page.
- asking the engine to pull requests now: requests arriving from Redis would otherwise wait
  for the engine's 5 s heartbeat. The engine's own ``engine._slot.nextcall.schedule()``.
- knowing that a close has begun (CLOSESPIDER_*, Ctrl-C, SIGTERM): no signal fires until
  every request in flight has finished, which a server that never answers can put off for
  minutes. The engine's ``engine._slot.closing`` (a Deferred once the close began), which the
  closing extension watches to give up what is still in flight after a grace period.

- giving Scrapy's HTTP/1.1 download handler a TLS policy that checks certificates and still
  fetches (tianwang/tlshandler.py): DOWNLOADER_CLIENTCONTEXTFACTORY is deprecated in 2.19
  and no public policy verifies without refusing. The handler's ``_contextFactory``, set
  by ``set_tls_policy``, which refuses a handler without one.

- giving that handler a pool of kept-alive connections bounded over all hosts, with more
  connections to an HTTP proxy (tianwang/connections.py): the handler's ``_pool``, set by
  ``set_connection_pool``, which keeps the handler's own HTTP/1.1 client factory. The pool
  overrides Twisted's private ``HTTPConnectionPool._putConnection`` and
  ``_removeConnection`` and keeps its ``_connections`` and ``_timeouts``:
  ``set_connection_pool`` refuses a Twisted without them.
- bounding a response's head (tianwang/responsehead.py): Twisted's HTTP/1.1 client protocol
  reads a head through its private ``_parser`` (whose ``state`` is STATUS or HEADER until
  the headers end, twisted.web._newclient) and gives a response up with ``_giveUp``. The
  pool's client factory (Twisted's ``HTTPConnectionPool._factory``) builds that protocol;
  ``set_connection_pool`` refuses a Twisted without these.

``check(engine)`` runs when a scheduler opens: a Scrapy without one of these attributes
stops the crawl at once with a message naming it, rather than losing work silently.
tests/test_scrapy_internals.py pins each one against the installed Scrapy.
"""

from __future__ import annotations

from collections.abc import Set as AbstractSet
from typing import Any

import scrapy
from twisted.python.failure import Failure
from twisted.web import _newclient

# (path from the engine, what tianwang uses it for): the whole list of private attributes.
REQUIRED = (
    ("_slot.inprogress", "to know when a request is finished (request log, Redis ack)"),
    ("_slot.nextcall.schedule", "to wake the engine when requests arrive from Redis"),
    ("_slot.closing", "to know that a close began, and end it on time"),
)


class ScrapyInternalsError(RuntimeError):
    """The installed Scrapy lacks a private attribute tianwang relies on."""


def _lookup(engine: Any, path: str) -> Any:
    value = engine
    for name in path.split("."):
        value = getattr(value, name)
    return value


def check(engine: Any) -> None:
    """Every attribute of REQUIRED is there on an open engine, or ScrapyInternalsError."""
    for path, why in REQUIRED:
        try:
            _lookup(engine, path)
        except AttributeError:
            raise ScrapyInternalsError(
                f"Scrapy {scrapy.__version__} has no engine.{path}, which tianwang uses {why}; "
                "install the Scrapy version pyproject.toml pins"
            ) from None


def in_progress(engine: Any) -> AbstractSet[Any]:
    """The requests the engine has not finished with (empty before the engine opens)."""
    slot = engine._slot
    return slot.inprogress if slot is not None else frozenset()


def closing(engine: Any) -> bool:
    """Whether the engine has begun to close the spider (False once it has closed)."""
    slot = engine._slot
    return slot is not None and slot.closing is not None


def wake(engine: Any) -> None:
    """Have the engine ask the scheduler for requests on its next loop turn."""
    slot = engine._slot
    if slot is not None:
        slot.nextcall.schedule()


def set_tls_policy(handler: Any, policy: Any) -> None:
    """Make `policy` the TLS context factory of an HTTP/1.1 download handler."""
    if not hasattr(handler, "_contextFactory"):
        raise ScrapyInternalsError(
            f"Scrapy {scrapy.__version__}'s {type(handler).__mro__[1].__name__} has no "
            "_contextFactory, which tianwang sets to check certificates; install the Scrapy "
            "version pyproject.toml pins"
        )
    handler._contextFactory = policy


# Twisted's HTTPConnectionPool internals tianwang.connections.KeepAlivePool works with.
POOL_INTERNALS = ("_putConnection", "_removeConnection", "_connections", "_timeouts")
# Twisted's HTTP/1.1 client protocol internals tianwang.responsehead works with.
PROTOCOL_INTERNALS = ("_parser", "_giveUp", "request", "dataReceived")
HEAD_STATES = frozenset({getattr(_newclient, "STATUS", None), getattr(_newclient, "HEADER", None)})


def set_connection_pool(handler: Any, pool: Any, wrap_factory: Any = None) -> None:
    """Make `pool` (made before any download) the connection pool of an HTTP/1.1 download
    handler, with the handler's own client factory, or `wrap_factory(that factory)`."""
    old = getattr(handler, "_pool", None)
    if old is None or not hasattr(old, "_factory"):
        raise ScrapyInternalsError(
            f"Scrapy {scrapy.__version__}'s {type(handler).__mro__[1].__name__} has no "
            "_pool, which tianwang replaces to bound kept-alive connections; install the "
            "Scrapy version pyproject.toml pins"
        )
    missing = [name for name in POOL_INTERNALS if not hasattr(old, name)]
    if missing:
        raise ScrapyInternalsError(
            f"Twisted's HTTPConnectionPool has no {', '.join(missing)}, which tianwang's "
            "connection pool relies on; install the Twisted version pyproject.toml pins"
        )
    protocol = _newclient.HTTP11ClientProtocol
    missing = [name for name in PROTOCOL_INTERNALS if not hasattr(protocol, name)]
    if missing or None in HEAD_STATES:
        raise ScrapyInternalsError(
            f"Twisted's HTTP11ClientProtocol has no {', '.join(missing) or 'STATUS, HEADER'}, "
            "which tianwang uses to bound a response's head; install the Twisted version "
            "pyproject.toml pins"
        )
    pool._factory = old._factory if wrap_factory is None else wrap_factory(old._factory)
    handler._pool = pool


def in_head(protocol: Any) -> bool:
    """Whether an HTTP/1.1 client protocol is reading a response's status line or headers."""
    parser = protocol._parser
    return parser is not None and parser.state in HEAD_STATES


def give_up(protocol: Any, error: Exception) -> None:
    """Close the protocol's connection; its response in flight fails with `error`."""
    protocol._giveUp(Failure(error))
