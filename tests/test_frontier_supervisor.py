"""Supervised periodic tasks (tianwang/frontier/supervisor.py): an error is caught, counted and
tried again after a back-off; past the bound the crawl is stopped with the cause named; a
coroutine task runs one at a time. On a clock the test moves."""

from __future__ import annotations

import asyncio
from collections import Counter

from tests.aio import aio
from tianwang.frontier.supervisor import MAX_FAILURES, Supervisor


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_errors_are_counted_backed_off_and_past_the_bound_stop_the_crawl_naming_them() -> None:
    calls, counts, stops, clock = [], Counter(), [], Clock()

    def failing() -> None:
        calls.append(clock.now)
        raise TypeError("'<' not supported between instances of 'NoneType' and 'bytes'")

    supervisor = Supervisor("poll", failing, counts, stops.append, clock=clock)
    for _ in range(2000):  # the looping call fires every 0.1 s for 200 s
        supervisor()
        clock.now += 0.1
    assert len(calls) == MAX_FAILURES == counts["tianwang/loops/errors/poll"]
    gaps = [round(b - a, 1) for a, b in zip(calls, calls[1:], strict=False)]
    assert gaps == sorted(gaps) and gaps[0] >= 0.5  # backing off, doubling
    assert stops == [f"poll failed {MAX_FAILURES} times in a row: TypeError: "
                     "'<' not supported between instances of 'NoneType' and 'bytes'"]


def test_a_success_resets_the_count() -> None:
    outcomes, counts, stops, clock = [True] * 5 + [False] + [True] * 5, Counter(), [], Clock()

    def flaky() -> None:
        if outcomes.pop(0):
            raise OSError("flaky")

    supervisor = Supervisor("beat", flaky, counts, stops.append, clock=clock)
    while outcomes:
        supervisor()
        clock.now += 60
    assert counts["tianwang/loops/errors/beat"] == 10 and stops == []


@aio
async def test_a_coroutine_task_runs_one_at_a_time_and_its_error_is_caught() -> None:
    started, counts, stops = [], Counter(), []
    release = asyncio.Event()

    async def slow() -> None:
        started.append(1)
        await release.wait()
        raise ValueError("after the wait")

    supervisor = Supervisor("poll", slow, counts, stops.append)
    supervisor()
    supervisor()  # still running: not a second one
    await asyncio.sleep(0)
    assert started == [1]
    release.set()
    await asyncio.sleep(0.01)
    assert counts["tianwang/loops/errors/poll"] == 1 and supervisor.failures == 1
