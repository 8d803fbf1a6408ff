"""Queue slots: which requests a pick may take now, per host and, under a level limit, per level.

Why levels: TIANWANG_MAX_LEVELS counts link distance from the seed (CWT200g: the homepage is
level 1, three levels), and a request's level is the depth at which its url was first found.
Breadth first finds every url first by a shortest path; a weight-ordered frontier does not:
it may fetch /a/b.html (weight 8) before /x/y/z/q.html (weight 6) and so first reach a page
one level too deep, cut its links at the limit, and filter out the shorter way to it that
comes later. The pages stored then depend on timing, and some within the limit are missed.

So under a level limit each host is crawled level by level: a request of depth d waits while
its host has requests of a smaller depth outstanding (pending, or fetched and not yet
parsed). The weight still orders the picks within a level and across hosts, and the N sorted
/ M random alternation, host awareness and persistence are unchanged. Without a level limit
there is nothing to wait for, and a queue slot is just the downloader slot.

A queue slot's name is what the request log stores: the downloader slot, or the slot and the
depth joined by SEPARATOR, so a resumed crawl rebuilds the barrier from the log alone.
"""

from __future__ import annotations

from collections import Counter
from typing import Protocol

SEPARATOR = "\x00"  # never in a host name or a DOWNLOAD_SLOT worth the name


class Downloader(Protocol):
    def number(self, name: str) -> int: ...

    def full(self, number: int) -> bool: ...


class QueueSlots:
    """Numbers the queue's slots and says whether a pick may take from one now."""

    def __init__(self, downloader: Downloader, levels: bool) -> None:
        self.downloader = downloader
        self.levels = levels
        self.names: list[str] = []
        self._numbers: dict[str, int] = {}
        self._slot_of: list[int] = []  # queue slot -> downloader slot number
        self._depth_of: list[int] = []
        # Per downloader slot: outstanding requests by depth (only under a level limit).
        self._outstanding: dict[int, Counter[int]] = {}

    def name(self, downloader_slot: str, depth: int) -> str:
        return f"{downloader_slot}{SEPARATOR}{depth}" if self.levels else downloader_slot

    def number(self, name: str) -> int:
        number = self._numbers.get(name)
        if number is None:
            slot, _, depth = name.partition(SEPARATOR)
            number = self._numbers[name] = len(self.names)
            self.names.append(name)
            self._slot_of.append(self.downloader.number(slot))
            self._depth_of.append(int(depth) if depth else 0)
        return number

    def downloader_slot(self, number: int) -> int:
        return self._slot_of[number]

    def full(self, number: int) -> bool:
        """The host can take no request now, or (under a level limit) not one this deep."""
        slot = self._slot_of[number]
        if self.downloader.full(slot):
            return True
        if not self.levels:
            return False
        outstanding = self._outstanding.get(slot)
        return bool(outstanding) and min(outstanding) < self._depth_of[number]

    def added(self, number: int) -> None:
        """A request of this slot is pending now."""
        if self.levels:
            slot = self._slot_of[number]
            self._outstanding.setdefault(slot, Counter())[self._depth_of[number]] += 1

    def finished(self, number: int) -> None:
        """A request of this slot is done with (parsed, or dropped as a stale copy)."""
        if not self.levels:
            return
        slot = self._slot_of[number]
        outstanding = self._outstanding[slot]
        depth = self._depth_of[number]
        outstanding[depth] -= 1
        if outstanding[depth] <= 0:
            del outstanding[depth]
            if not outstanding:
                del self._outstanding[slot]
