"""Supervised periodic tasks: a scheduler's loops never die silently.

A looping call that raises stops for good (Twisted's LoopingCall and Scrapy's
AsyncioLoopingCall alike): a node would stop heartbeating and polling while
has_pending_requests stayed true, and the crawl would hang. So each periodic task runs
through a Supervisor: every error is caught, counted (tianwang/loops/errors/<task>), said in
one line (then once a minute while it lasts), and the task tried again after a back-off
(0.5 s doubling to 30 s); after MAX_FAILURES failures in a row it calls give_up with one line
naming the task and the error, and the scheduler stops the crawl (a non-zero exit status).
A task may be a coroutine function: its run is a task of its own, and the next one starts
only once it ended (one in flight at a time). A fault the task handles itself (Redis away or
full: outage.py) is no error here. No Scrapy import here.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

logger = logging.getLogger(__name__)

MAX_FAILURES = 6  # in a row: about 15 s of back-off, then the node stops
FIRST_DELAY, MAX_DELAY = 0.5, 30.0
NOTICE_INTERVAL = 60.0


class Supervisor:
    """Runs `call` when its looping call fires, unless it is backing off or still running."""

    def __init__(self, name: str, call: Callable[[], Any], counts: Counter[str],
                 give_up: Callable[[str], None], clock: Callable[[], float] = time.monotonic,
                 max_failures: int = MAX_FAILURES) -> None:
        self.name = name
        self.call = call
        self.counts = counts
        self.give_up = give_up
        self.clock = clock
        self.max_failures = max_failures
        self.failures = 0  # in a row
        self.stopped = False
        self._next_try = 0.0
        self._noticed = 0.0
        self._running: asyncio.Task | None = None

    def __call__(self) -> None:
        if self.stopped or self.clock() < self._next_try:
            return
        if self._running is not None and not self._running.done():
            return  # the last run is still out (Redis slow): not two at once
        try:
            result = self.call()
        except Exception as error:  # noqa: BLE001 - the point: no error ends the loop
            self.failed(error)
            return
        if inspect.isawaitable(result):
            self._running = asyncio.ensure_future(result)
            self._running.add_done_callback(self._ended)
        else:
            self.succeeded()

    def _ended(self, task: asyncio.Task) -> None:
        if task.cancelled():
            return
        error = task.exception()
        if error is None:
            self.succeeded()
        else:
            self.failed(error)

    def succeeded(self) -> None:
        if self.failures:
            logger.warning("%s works again after %d failures", self.name, self.failures)
        self.failures = 0
        self._next_try = 0.0

    def failed(self, error: BaseException) -> None:
        self.failures += 1
        self.counts[f"tianwang/loops/errors/{self.name}"] += 1
        now = self.clock()
        if self.failures >= self.max_failures:
            self.stopped = True
            self.give_up(f"{self.name} failed {self.failures} times in a row: "
                         f"{type(error).__name__}: {error}")
            return
        delay = min(MAX_DELAY, FIRST_DELAY * 2 ** (self.failures - 1))
        self._next_try = now + delay
        if self.failures == 1 or now - self._noticed >= NOTICE_INTERVAL:
            self._noticed = now
            logger.error("%s failed (%s: %s): tried again in %.1f s", self.name,
                         type(error).__name__, error, delay)

    def cancel(self) -> None:
        self.stopped = True
        if self._running is not None and not self._running.done():
            self._running.cancel()
