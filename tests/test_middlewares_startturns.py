"""Start requests in turns: the event loop runs between them (unit, counted in loop turns),
and a crawl of many seeds gets every seed, with downloads going on while they are fed."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

from tests.aio import aio
from tests.conftest import TestWeb, scrapy_crawl
from tianwang.formats.store import iter_tree
from tianwang.middlewares.startturns import StartTurnsMiddleware


async def _seeds(count: int) -> AsyncIterator[int]:
    for n in range(count):  # a seed list: never waits
        yield n


async def _loop_turns_while(consume) -> tuple[list[int], int]:
    """What consume() returned, and how many turns the event loop made meanwhile."""
    turns = 0
    done = False

    async def tick() -> None:
        nonlocal turns
        while not done:
            await asyncio.sleep(0)
            turns += 1

    ticker = asyncio.ensure_future(tick())
    await asyncio.sleep(0)  # the ticker starts
    start = turns
    got = await consume()
    done = True
    await ticker
    return got, turns - start


@aio
async def test_the_loop_turns_between_every_hundred_start_requests() -> None:
    middleware = StartTurnsMiddleware()

    async def through_middleware() -> list[int]:
        return [n async for n in middleware.process_start(_seeds(1000))]

    got, turns = await _loop_turns_while(through_middleware)
    assert got == list(range(1000))  # all of them, in order
    assert turns >= 9


@aio
async def test_without_it_a_seed_list_takes_one_turn() -> None:
    async def directly() -> list[int]:
        return [n async for n in _seeds(1000)]

    got, turns = await _loop_turns_while(directly)
    assert len(got) == 1000 and turns <= 1  # what the middleware is for


def test_a_crawl_of_many_seeds_fetches_every_seed(testweb: TestWeb, tmp_path: Path) -> None:
    seeds = sorted(testweb.truth)[:250]  # more than two turns
    seed_file = tmp_path / "seeds.txt"
    seed_file.write_text("\n".join(seeds) + "\n")
    data = tmp_path / "data"
    result = scrapy_crawl("site", {"seeds": str(seed_file)},
                          {"TIANWANG_DATA_DIR": str(data), "TIANWANG_PROXY": testweb.address,
                           "TIANWANG_MAX_LEVELS": "1", "DOWNLOAD_DELAY": "0",
                           "CONCURRENT_REQUESTS": "4"},
                          cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    stored = {record.url for _path, record in iter_tree(data)}
    live = {url for url in seeds if testweb.truth[url]["status"] == 200
            and testweb.truth[url]["content_type"] == "text/html"}
    assert len(live) > 100 and live <= stored
