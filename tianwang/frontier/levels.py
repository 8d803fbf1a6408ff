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

from array import array
from collections import Counter
from typing import Protocol

SEPARATOR = "\x00"  # never in a host name or a DOWNLOAD_SLOT worth the name
NO_SLOT = -1


class Hosts(Protocol):
    names: list[str]

    def number(self, name: str) -> int: ...


def split_name(name: str) -> tuple[str, int]:
    """A queue slot's name (the request log's) as its host and depth."""
    host, _, depth = name.partition(SEPARATOR)
    return host, int(depth) if depth else 0


class QueueSlots:
    """Numbers the queue's slots, and keeps each host's level barrier.

    A month-long crawl meets millions of hosts, each with a slot a level, and never forgets
    one: so a slot is three ints in arrays (its host, its depth, its host's next slot) and a
    host one more (its first slot), not a name and dict entries; its name is made when asked
    for. A host's slots are a chain from its first: a host has a few at most."""

    def __init__(self, hosts: Hosts, levels: bool) -> None:
        self.hosts = hosts
        self.levels = levels
        self._host_of = array("i")  # queue slot -> host number
        self._depth_of = array("i")
        self._next = array("i")  # queue slot -> the next slot of its host, or NO_SLOT
        self._first = array("i")  # host number -> its first queue slot, or NO_SLOT
        # Per host: outstanding requests by depth (only under a level limit).
        self._outstanding: dict[int, Counter[int]] = {}

    def __len__(self) -> int:
        """How many queue slots there are."""
        return len(self._host_of)

    def name(self, host: str, depth: int) -> str:
        return f"{host}{SEPARATOR}{depth}" if self.levels else host

    def name_of(self, number: int) -> str:
        """A queue slot's name (what the request log stores)."""
        return self.name(self.host_name(number), self._depth_of[number])

    def host_name(self, number: int) -> str:
        """The name of the host a queue slot holds requests of."""
        return self.hosts.names[self._host_of[number]]

    def slot(self, host_name: str, depth: int) -> int:
        """The queue slot of a host's requests of this depth (of any depth without a level
        limit), made if new."""
        depth = depth if self.levels else 0
        host = self.hosts.number(host_name)
        first = self._first
        if host >= len(first):
            first.extend([NO_SLOT] * (host + 1 - len(first)))
        last, number = NO_SLOT, first[host]
        while number != NO_SLOT:
            if self._depth_of[number] == depth:
                return number
            last, number = number, self._next[number]
        number = len(self._host_of)
        self._host_of.append(host)
        self._depth_of.append(depth)
        self._next.append(NO_SLOT)
        if last == NO_SLOT:
            first[host] = number
        else:
            self._next[last] = number
        return number

    def host(self, number: int) -> int:
        """The host (its number in slots.py) a queue slot holds requests of."""
        return self._host_of[number]

    def of_host(self, host: int) -> list[int]:
        """The queue slots of a host, in the order they were made."""
        numbers = []
        number = self._first[host] if host < len(self._first) else NO_SLOT
        while number != NO_SLOT:
            numbers.append(number)
            number = self._next[number]
        return numbers

    def passes(self, number: int) -> bool:
        """Whether the level barrier lets this slot give a request: no request of a smaller
        depth of its host outstanding (always, without a level limit)."""
        if not self.levels:
            return True
        outstanding = self._outstanding.get(self._host_of[number])
        return not outstanding or min(outstanding) >= self._depth_of[number]

    def added(self, number: int) -> bool:
        """A request of this slot is pending now; whether its host's barrier moved."""
        if not self.levels:
            return False
        outstanding = self._outstanding.setdefault(self._host_of[number], Counter())
        depth = self._depth_of[number]
        moved = not outstanding or depth < min(outstanding)
        outstanding[depth] += 1
        return moved

    def finished(self, number: int) -> bool:
        """A request of this slot is done with (parsed, or dropped as a stale copy); whether
        its host's barrier moved."""
        if not self.levels:
            return False
        host = self._host_of[number]
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
