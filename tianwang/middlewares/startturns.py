"""Start requests handed to the engine in turns, the event loop served between them (a spider
middleware).

Once the downloader is full, Scrapy's engine takes the spider's start requests one after the
other without returning to the event loop while the iterator has more without waiting: a
spider reading its seeds from a list never waits, so all of them go to the scheduler in one
turn of the loop. 10,000 seeds held the loop for 0.8 s (no response read, no request sent,
downloads in flight timing out meanwhile); a million would hold it for over a minute. Here
the loop gets a turn after every TURN start requests.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from scrapy.utils.asyncio import sleep

# Start requests between two turns of the event loop (some 8 ms of scheduling each).
TURN = 100


class StartTurnsMiddleware:
    def __init__(self, turn: int = TURN) -> None:
        self.turn = turn

    async def process_start(self, start: AsyncIterator[Any]) -> AsyncIterator[Any]:
        count = 0
        async for item_or_request in start:
            yield item_or_request
            count += 1
            if count % self.turn == 0:
                await sleep(0)
