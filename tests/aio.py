"""Tests of asyncio code (the shared crawl's redis.asyncio frontier) on the crawl's own loop.

pytest-twisted runs a test coroutine in Twisted's asyncio reactor, whose loop is asyncio's;
awaiting asyncio's futures needs the coroutine wrapped as a Deferred of the loop's, which
`aio` does: decorate an `async def test_...` with it and await anything asyncio inside.
What a test opens with `opened(...)` (anything with an async close()) is closed after it,
so no connection is left for the garbage collector to complain about.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

import pytest_twisted
from scrapy.utils.defer import deferred_from_coro

T = TypeVar("T")
_OPEN: list[Any] = []


def opened(thing: T) -> T:
    """Close `thing` (its async close()) once the test ends."""
    _OPEN.append(thing)
    return thing


async def _close_all() -> None:
    while _OPEN:
        await _OPEN.pop().close()


def aio(test: Callable[..., Coroutine[Any, Any, None]]) -> Callable[..., Any]:
    @functools.wraps(test)
    async def run(*args: Any, **kwargs: Any) -> None:
        try:
            await deferred_from_coro(test(*args, **kwargs))
        finally:
            await deferred_from_coro(_close_all())

    return pytest_twisted.ensureDeferred(run)
