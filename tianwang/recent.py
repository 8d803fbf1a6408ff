"""A set of the newest keys only: what a crawl remembers per host, bounded.

A crawl of the open web meets millions of hosts, and a host farm or a spam family can name
millions more in its links. What a component remembers of each host it only noted in
passing (that its refusal was logged, that it refused a connection) must not grow with
them: past `limit` keys the oldest is forgotten. Forgetting costs little by design: a second
log line for a host, or one more try of a dead host.

Pure python (no Scrapy, no Twisted).
"""

from __future__ import annotations

from collections.abc import Hashable

HOSTS_NOTED = 100_000  # keys a component remembers per host in passing (about 15 MB)


class RecentSet:
    """Membership of the `limit` keys added last (first in, first forgotten)."""

    __slots__ = ("_keys", "limit")

    def __init__(self, limit: int = HOSTS_NOTED) -> None:
        if limit < 1:
            raise ValueError("limit must be at least 1")
        self.limit = limit
        self._keys: dict[Hashable, None] = {}

    def add(self, key: Hashable) -> None:
        if key in self._keys:
            return
        self._keys[key] = None
        if len(self._keys) > self.limit:
            del self._keys[next(iter(self._keys))]

    def discard(self, key: Hashable) -> None:
        self._keys.pop(key, None)

    def __contains__(self, key: object) -> bool:
        return key in self._keys

    def __len__(self) -> int:
        return len(self._keys)

    def __bool__(self) -> bool:
        return bool(self._keys)
