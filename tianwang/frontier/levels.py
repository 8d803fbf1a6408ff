"""Queue slots: a host's requests, and under a level limit a host's requests of one level.

Why levels: TIANWANG_MAX_LEVELS counts link distance from the seed (CWT200g: the homepage is
level 1, three levels), and a request's level is the depth at which its url was first found.
Breadth first finds every url first by a shortest path; a weight-ordered frontier does not:
it may fetch /a/b.html (weight 8) before /x/y/z/q.html (weight 6) and so first reach a page
one level too deep, cut its links at the limit, and filter out the shorter way to it that
comes later. The pages stored then depend on timing, and some within the limit are missed.

So under a level limit each host is crawled level by level: a request of depth d waits while
its host has requests of a smaller depth outstanding (pending, or fetched and not yet
parsed). The weight still orders the picks within a level and across hosts. Without a level
limit there is nothing to wait for, and a queue slot is just the host.

A queue slot's name is what the request log stores: the host (its downloader slot key), or
the host and the depth joined by SEPARATOR, so a resumed crawl rebuilds the barrier from the
log alone. Whether the host is ready is not this module's business (slots.py says it); this
one says which of a host's queue slots the barrier lets through.
"""

from __future__ import annotations

from collections import Counter
from typing import Protocol

SEPARATOR = "\x00"  # never in a host name or a DOWNLOAD_SLOT worth the name


class Hosts(Protocol):
    def number(self, name: str) -> int: ...


class QueueSlots:
    """Numbers the queue's slots, and keeps each host's level barrier."""

    def __init__(self, hosts: Hosts, levels: bool) -> None:
        self.hosts = hosts
        self.levels = levels
        self.names: list[str] = []
        self._numbers: dict[str, int] = {}
        self._slot_of: list[int] = []  # queue slot -> host number
        self._depth_of: list[int] = []
        self._of_host: dict[int, list[int]] = {}  # host number -> its queue slots
        # Per host: outstanding requests by depth (only under a level limit).
        self._outstanding: dict[int, Counter[int]] = {}

    def name(self, host: str, depth: int) -> str:
        return f"{host}{SEPARATOR}{depth}" if self.levels else host

    def number(self, name: str) -> int:
        number = self._numbers.get(name)
        if number is None:
            host_name, _, depth = name.partition(SEPARATOR)
            number = self._numbers[name] = len(self.names)
            self.names.append(name)
            host = self.hosts.number(host_name)
            self._slot_of.append(host)
            self._depth_of.append(int(depth) if depth else 0)
            self._of_host.setdefault(host, []).append(number)
        return number

    def host(self, number: int) -> int:
        """The host (its number in slots.py) a queue slot holds requests of."""
        return self._slot_of[number]

    def of_host(self, host: int) -> list[int]:
        """The queue slots of a host."""
        return self._of_host.get(host, [])

    def passes(self, number: int) -> bool:
        """Whether the level barrier lets this slot give a request: no request of a smaller
        depth of its host outstanding (always, without a level limit)."""
        if not self.levels:
            return True
        outstanding = self._outstanding.get(self._slot_of[number])
        return not outstanding or min(outstanding) >= self._depth_of[number]

    def added(self, number: int) -> bool:
        """A request of this slot is pending now; whether its host's barrier moved."""
        if not self.levels:
            return False
        outstanding = self._outstanding.setdefault(self._slot_of[number], Counter())
        depth = self._depth_of[number]
        moved = not outstanding or depth < min(outstanding)
        outstanding[depth] += 1
        return moved

    def finished(self, number: int) -> bool:
        """A request of this slot is done with (parsed, or dropped as a stale copy); whether
        its host's barrier moved."""
        if not self.levels:
            return False
        host = self._slot_of[number]
        outstanding = self._outstanding[host]
        depth = self._depth_of[number]
        outstanding[depth] -= 1
        if outstanding[depth] > 0:
            return False
        del outstanding[depth]
        if not outstanding:
            del self._outstanding[host]
            return True
        return depth < min(outstanding)
