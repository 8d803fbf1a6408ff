"""How long a node has been without Redis, and when to say so, try again or give up.

A node's calls to Redis each retry for about 30 s (connection.py) and then fail. A node
whose Redis stays away must neither die of the first failure (a Redis restarting with a large
AOF takes minutes) nor wait forever without a word: it goes on with what it holds, probes
Redis every PROBE_INTERVAL seconds, says so every NOTICE_INTERVAL, and stops after the
bound (TIANWANG_REDIS_OUTAGE_SECONDS). The scheduler keeps one, and so do the MD5 claims
(redisdedup.py). Pure logic on a monotonic clock; no Redis, no Scrapy.
"""

from __future__ import annotations

PROBE_INTERVAL = 2.0  # seconds between two probes of a Redis gone
NOTICE_INTERVAL = 60.0  # seconds between two "still unreachable" lines


class Outage:
    """The current outage of one node's Redis, if any."""

    def __init__(self, bound: float) -> None:
        self.bound = bound  # seconds to wait before the node stops; 0: no bound
        self.since: float | None = None
        self._next_probe = self._next_notice = 0.0

    @property
    def down(self) -> bool:
        return self.since is not None

    def begin(self, now: float) -> None:
        """A call failed: the outage starts (counted from the failed call's end)."""
        if self.since is None:
            self.since = now
            self._next_probe, self._next_notice = now + PROBE_INTERVAL, now + NOTICE_INTERVAL

    def lasted(self, now: float) -> float:
        return 0.0 if self.since is None else now - self.since

    def over(self, now: float) -> bool:
        """Past the bound: time for the node to stop."""
        return self.since is not None and self.bound > 0 and now - self.since >= self.bound

    def probe_due(self, now: float) -> bool:
        if self.since is None or now < self._next_probe:
            return False
        self._next_probe = now + PROBE_INTERVAL
        return True

    def notice_due(self, now: float) -> bool:
        if self.since is None or now < self._next_notice:
            return False
        self._next_notice = now + NOTICE_INTERVAL
        return True

    def end(self, now: float) -> float:
        """Redis answers again: how long it was away."""
        lasted = self.lasted(now)
        self.since = None
        return lasted
