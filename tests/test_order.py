"""One order (tianwang/order.py): the score layout and the link bonus agree between Python and
the Lua scripts, and a crawl in one process and a crawl shared through Redis pick in the same
order, link cash on, on random link graphs (through the schedulers' public interfaces only)."""

from __future__ import annotations

import asyncio
import itertools
import random
import struct
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from urllib.parse import urlsplit

import pytest
import redis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scrapy import Request

from tests.conftest import project_crawler
from tests.test_distributed_redisscheduler import closed, next_of, scheduler
from tests.test_frontier_scheduler import UnitSpider
from tianwang import meta, order
from tianwang.distributed import scripts
from tianwang.frontier.linkscore import MIN_CASH, as_float32, base_of, link_bonus
from tianwang.frontier.scheduler import FrontierScheduler

_jobs = itertools.count()


def test_a_score_gives_back_its_key_turn_and_id() -> None:
    rng = random.Random(3)
    for _ in range(2000):
        weight = rng.randint(order.WEIGHT_MIN - 10, order.WEIGHT_MAX + 10)
        priority = rng.randint(order.PRIORITY_MIN - 10, order.PRIORITY_MAX + 10)
        ident, turn = rng.randrange(order.ID_SHIFT), rng.randrange(order.MAX_FIRST)
        key = order.key_of(weight, priority)
        first = order.score_of(ident, order.first_rank_of(key, turn))
        assert order.unrank(first) == (*order.clip_key(weight, priority), turn)
        plain = order.score_of(ident, order.rank_of(key, turn))
        assert order.unrank(plain) == (*order.clip_key(weight, priority), None)
        assert order.ident_of(plain) == order.ident_of(first) == ident
        assert first < plain  # a host's first request before any other


def lua(client: redis.Redis, body: str, *args: object) -> object:
    """Run Lua with the scripts' constants and libraries in front."""
    source = scripts.constants() + scripts.text("score") + scripts.text("links") + body
    return client.eval(source, 0, *args)


def test_the_lua_bonus_is_pythons_to_the_last_rounding(redis_server) -> None:
    """Cash at the rounding's edges (64 at 0.75 per doubling is 4.5 exactly: Python's round()
    made it 4, Lua's floor(x + 0.5) 5) and at random, with and without a discount."""
    client = redis.Redis.from_url(redis_server.url)
    rng = random.Random(5)
    cases = [(0.75, 64.0, 0.0, 0), (0.75, 1 / 64, 0.0, 0), (0.5, 2.0, 0.0, 0), (1.0, 0.0, 0, 0)]
    cases += [(rng.choice([0.25, 0.5, 0.75, 1, 1.5, 2, 16]), as_float32(rng.expovariate(0.5)),
               rng.choice([0.0, 0.5, 1.0]), base_of(rng.expovariate(2))) for _ in range(3000)]
    args = [repr(x) for case in cases for x in case]
    got = lua(client, """
        local out = {}
        for i = 1, #ARGV, 4 do
          out[#out + 1] = link_bonus(tonumber(ARGV[i]), tonumber(ARGV[i + 1]),
                                     tonumber(ARGV[i + 2]), tonumber(ARGV[i + 3]))
        end
        return out""", *args)
    assert got == [link_bonus(*case) for case in cases]
    assert link_bonus(0.75, 64.0) == 5 and link_bonus(1.0, 0.0) == -24
    assert MIN_CASH == 2.0**-24


def test_the_lua_key_and_rank_are_pythons(redis_server) -> None:
    client = redis.Redis.from_url(redis_server.url)
    rng = random.Random(6)
    cases = [(rng.randint(-400, 400), rng.randint(-100, 100), rng.randrange(40),
              rng.randrange(order.ID_SHIFT)) for _ in range(500)]
    got = lua(client, """
        local out = {}
        for i = 1, #ARGV, 4 do
          local key = key_of(tonumber(ARGV[i]), tonumber(ARGV[i + 1]))
          local id, turn = tonumber(ARGV[i + 3]), tonumber(ARGV[i + 2])
          out[#out + 1] = score_of(id, rank_of(key, turn))
          out[#out + 1] = score_of(id, first_rank_of(key, turn))
        end
        return out""", *[x for case in cases for x in case])
    expected = []
    for weight, priority, turn, ident in cases:
        key = order.key_of(weight, priority)
        expected += [order.score_of(ident, order.rank_of(key, turn)),
                     order.score_of(ident, order.first_rank_of(key, turn))]
    assert [float(score) for score in got] == expected


def test_a_link_entry_packs_its_cash_as_python_keeps_it(redis_server) -> None:
    client = redis.Redis.from_url(redis_server.url)
    got = lua(client, "return link_entry(f32(tonumber(ARGV[1]) + tonumber(ARGV[2])), 7, 0, 0)",
              repr(as_float32(0.1)), repr(1 / 3))
    assert struct.unpack("<fI", got) == (as_float32(as_float32(0.1) + 1 / 3), 7)


# --- the same order, local and shared -----------------------------------------------------


@st.composite
def webs(draw: st.DrawFn) -> tuple[list[str], dict[str, list[str]], list[str], int]:
    """Pages on a few hosts at depths 0-3, each with 1-12 links (shares that are not powers
    of two: the float32 cash rounds), some to other hosts; two or three seeds, all but the
    first pushed after 0 to 3 hand-outs."""
    rng = random.Random(draw(st.integers(0, 2**32)))
    hosts = rng.randint(2, 5)
    urls = [f"http://h{h}.test/" for h in range(hosts)]
    urls += [f"http://h{rng.randrange(hosts)}.test/{'d/' * rng.randrange(4)}p{i}.html"
             for i in range(rng.randint(8, 36))]
    links = {url: rng.sample([u for u in urls if u != url], rng.randint(1, min(12, len(urls) - 1)))
             for url in urls}
    seeds = rng.sample(urls, rng.randint(2, 3))
    return urls, links, seeds, rng.randint(0, 3)


ORDER_SETTINGS = st.fixed_dictionaries({
    "TIANWANG_LINK_WEIGHT": st.sampled_from([0.75, 0.5, 1.0, 2.0]),
    "TIANWANG_LINK_RELATIVE": st.sampled_from([0.0, 0.5, 1.0]),
    "TIANWANG_LINK_OTHER_HOST": st.sampled_from([1, 8]),
    "TIANWANG_HOST_TURNS": st.sampled_from([0, 2, 16]),
    "TIANWANG_HOST_FIRST": st.sampled_from([0, 2]),
    "TIANWANG_SEED_HOST_FIRST": st.sampled_from([0, 3]),
})
# Sorted picks only: the host and random picks are made in a node's local queue, over what it
# holds (design.md section 3); the order is the sorted one, of the score in Redis.
SORTED_ONLY = {"TIANWANG_SORTED_PICKS": 10**6, "TIANWANG_HOST_PICKS": 0,
               "TIANWANG_RANDOM_PICKS": 1, "TIANWANG_MAX_LEVELS": 0,
               "TIANWANG_EXPECTED_URLS": 10_000, "TIANWANG_FRONTIER_SEED": 7}


def run_in_loop(coro: Any) -> Any:
    """Run a coroutine to its end from a plain (hypothesis) test: on a loop of its own, in a
    thread (the reactor's loop is the test's caller here, and cannot be waited on)."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()


def links_of(request: Request, links: dict[str, list[str]], seeds: list[str]) -> list[Request]:
    """A page's links as the site spider requests them (a link to a seed's host says so)."""
    depth = request.meta.get(meta.DEPTH, 0) + 1
    seed_hosts = {urlsplit(seed).netloc for seed in seeds}
    return [Request(link, priority=-depth, meta={
        meta.DEPTH: depth, meta.PARENT: request.url, meta.OUTLINKS: len(links[request.url]),
        **({meta.SEED_HOST: True} if urlsplit(link).netloc in seed_hosts else {})})
        for link in links[request.url]]


def seeds_by_step(seeds: list[str], late: int) -> dict[int, list[str]]:
    """The seeds to push before each hand-out: the first at once, the others after `late`
    hand-outs (Scrapy feeds start requests as the crawl goes: links may come first)."""
    return {0: seeds[:1], late: seeds[1:]} if late else {0: seeds}


def crawl_local(links: dict[str, list[str]], seeds: list[str], late: int, steps: int,
                settings: dict[str, object]) -> list[str]:
    """Hand requests out one at a time, pushing each one's links as the site spider does."""
    frontier = FrontierScheduler.from_crawler(project_crawler(**settings))
    frontier.open(UnitSpider())
    pushes = seeds_by_step(seeds, late)
    fetched: list[str] = []
    while len(fetched) < steps:
        # The seeds due now (all that are left once nothing else is pending).
        for seed in pushes.pop(len(fetched), []):
            frontier.enqueue_request(Request(seed, meta={meta.DEPTH: 0}))
        if (request := frontier.next_request()) is None:
            if not pushes:
                break
            pushes = {len(fetched): [seed for due in pushes.values() for seed in due]}
            continue
        fetched.append(request.url)
        for link in links_of(request, links, seeds):
            frontier.enqueue_request(link)
    frontier.close("finished")
    return fetched


async def crawl_shared(links: dict[str, list[str]], seeds: list[str], late: int, steps: int,
                       settings: dict[str, object]) -> list[str]:
    """The same through a node of a shared crawl (one request held at a time)."""
    frontier = await scheduler(**settings)
    pushes = seeds_by_step(seeds, late)
    fetched: list[str] = []
    while len(fetched) < steps:
        # The seeds due now (all that are left once nothing else is pending).
        for seed in pushes.pop(len(fetched), []):
            frontier.enqueue_request(Request(seed, meta={meta.DEPTH: 0}))
        if (request := await next_of(frontier)) is None:
            if not pushes:
                break
            pushes = {len(fetched): [seed for due in pushes.values() for seed in due]}
            continue
        fetched.append(request.url)
        for link in links_of(request, links, seeds):
            frontier.enqueue_request(link)
    await closed(frontier)
    return fetched


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(web=webs(), values=ORDER_SETTINGS)
def test_the_local_and_the_shared_frontier_pick_in_the_same_order(redis_server, web,
                                                                  values) -> None:
    urls, links, seeds, late = web
    common = {**SORTED_ONLY, **values}
    steps = len(urls) * 2 // 3
    local = crawl_local(links, seeds, late, steps, common)
    shared = run_in_loop(crawl_shared(links, seeds, late, steps, {
        **common, "server": redis_server, "TIANWANG_REDIS_BATCH": 1,
        "CONCURRENT_REQUESTS": 1}))
    assert shared == local
