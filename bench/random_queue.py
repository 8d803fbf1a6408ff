"""A memory queue that pops a uniformly random element: the "random order" baseline.

    SCHEDULER_PRIORITY_QUEUE = "scrapy.pqueues.ScrapyPriorityQueue"
    SCHEDULER_MEMORY_QUEUE = "bench.random_queue.RandomMemoryQueue"
    SCHEDULER_START_MEMORY_QUEUE = ""        # start requests in the same queue
    DEPTH_PRIORITY = 0                       # and every request at one priority

With all priorities equal, ScrapyPriorityQueue holds one such queue, so each request Scrapy's
scheduler hands out is drawn uniformly from everything pending.
"""

from __future__ import annotations

import random
from typing import Any


class RandomMemoryQueue:
    """push, pop, peek, close, len: the queue interface Scrapy's priority queues use."""

    def __init__(self, seed: int | None = None) -> None:
        self._items: list[Any] = []
        self._random = random.Random(seed)
        self._next: int | None = None  # the index peek chose, so pop returns the same one

    @classmethod
    def from_crawler(cls, crawler: Any, key: str = "") -> RandomMemoryQueue:
        seed = crawler.settings.get("BENCH_RANDOM_SEED")
        return cls(None if seed in (None, "") else int(seed))

    def push(self, item: Any) -> None:
        self._items.append(item)

    def peek(self) -> Any | None:
        if not self._items:
            return None
        if self._next is None:
            self._next = self._random.randrange(len(self._items))
        return self._items[self._next]

    def pop(self) -> Any | None:
        if not self._items:
            return None
        index = self._random.randrange(len(self._items)) if self._next is None else self._next
        self._next = None
        # Swap with the last element: O(1), and order within the list does not matter.
        items = self._items
        items[index], items[-1] = items[-1], items[index]
        return items.pop()

    def close(self) -> None:
        self._items.clear()

    def __len__(self) -> int:
        return len(self._items)
