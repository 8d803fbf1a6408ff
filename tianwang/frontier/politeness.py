"""When each host may be sent its next request: the one owner of per-host politeness.

Per host (a downloader slot key): how many requests it may have at once (its concurrency),
the delay between two of them (DOWNLOAD_DELAY with Scrapy's jitter, a robots.txt
Crawl-delay), and whether it must wait (its robots.txt being fetched or unavailable, a 429
or 503 Retry-After). The frontier hands a host a request only when ``ready_at`` has come, so
no request waits out a delay, a pause or a robots.txt in the downloader, holding one of the
crawl's CONCURRENT_REQUESTS slots.

The delay counts from the start of the host's last request (Scrapy's DOWNLOAD_DELAY), or,
for a Crawl-delay, from the end of its last answer: the server then sees its requests at
least that far apart however long each answer took.

Pure python (no Scrapy): the schedulers hold one and tell it what happens (a request handed
out, started, ended; a host told to wait or to go, given a Crawl-delay).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from typing import Any

from tianwang.config.frontier import HostRules


@dataclass(slots=True)
class Host:
    rules: HostRules
    in_flight: int = 0  # handed out and not ended
    next_start: float = 0.0  # no request starts before (monotonic seconds)
    # Why it waits -> until when: its robots.txt ("robots"; math.inf: until go), a
    # Retry-After ("retry_after"). None: no wait.
    waits: dict[str, float] | None = None
    crawl_delay: float | None = None  # a robots.txt Crawl-delay: one at a time, from the end

    def waits_until(self) -> float:
        return max(self.waits.values()) if self.waits else 0.0


@dataclass
class Politeness:
    default: HostRules
    per_host: dict[str, HostRules] = field(default_factory=dict)  # DOWNLOAD_SLOTS
    rng: random.Random = field(default_factory=random.Random)
    hosts: dict[str, Host] = field(default_factory=dict)

    @classmethod
    def from_slots(cls, default: HostRules, slots: dict[str, dict[str, Any]],
                   rng: random.Random | None = None) -> Politeness:
        """With Scrapy's DOWNLOAD_SLOTS entries (concurrency, delay, jitter) per host."""
        per_host = {name: HostRules(int(entry.get("concurrency", default.concurrency)),
                                    float(entry.get("delay", default.delay)),
                                    float(entry.get("jitter", default.jitter)))
                    for name, entry in slots.items()}
        return cls(default, per_host, rng or random.Random())

    def host(self, key: str) -> Host:
        host = self.hosts.get(key)
        if host is None:
            host = self.hosts[key] = Host(self.per_host.get(key, self.default))
        return host

    def ready_at(self, key: str) -> float:
        """When the host may be handed a request: math.inf while it has all the requests it
        may have at once, or waits for a `go`."""
        host = self.hosts.get(key)
        if host is None:
            return 0.0
        if host.in_flight >= self.concurrency(host):
            return math.inf
        return max(host.next_start, host.waits_until())

    def concurrency(self, host: Host) -> int:
        return 1 if host.crawl_delay is not None else max(1, host.rules.concurrency)

    def handed(self, key: str) -> None:
        """A request of the host left the frontier (or, not the frontier's, reached it)."""
        self.host(key).in_flight += 1

    def started(self, key: str, now: float) -> None:
        """A request of the host began downloading: the next one waits the delay."""
        host = self.host(key)
        if host.crawl_delay is None:
            host.next_start = max(host.next_start, now + self._draw(host.rules))

    def ended(self, key: str, now: float, reached: bool = True) -> None:
        """A request of the host is over (downloaded, failed, or refused before it reached
        the host: reached=False, and it costs the host no delay)."""
        host = self.host(key)
        host.in_flight = max(0, host.in_flight - 1)
        if reached and host.crawl_delay is not None:
            host.next_start = max(host.next_start, now + host.crawl_delay)

    def wait(self, key: str, until: float, reason: str) -> None:
        """No request to the host before `until` (math.inf: until `go`) for this reason; a
        wait for the same reason replaces the one before."""
        host = self.host(key)
        if host.waits is None:
            host.waits = {}
        host.waits[reason] = until

    def go(self, key: str, reason: str) -> None:
        """The host's wait for this reason is over."""
        host = self.hosts.get(key)
        if host is not None and host.waits:
            host.waits.pop(reason, None)

    def set_crawl_delay(self, key: str, seconds: float | None, now: float) -> None:
        """A robots.txt Crawl-delay: one request at a time, `seconds` from the end of each
        answer to the next start. None, or one no longer than the host's own delay: the
        host's own rules again."""
        host = self.host(key)
        host.crawl_delay = None if seconds is None or seconds <= host.rules.delay else seconds
        if host.crawl_delay is not None:  # from now: the end of the answer that gave it
            host.next_start = max(host.next_start, now + host.crawl_delay)

    def start_at(self, key: str) -> float:
        """When the host's next request may start, its concurrency aside."""
        host = self.hosts.get(key)
        return host.next_start if host is not None else 0.0

    def forget_idle(self, now: float) -> int:
        """Drop the hosts that hold nothing a fresh one would not (nothing in flight, no
        wait, delay and Crawl-delay over): a crawl of a million hosts keeps only the busy
        ones. How many were dropped."""
        idle = [key for key, host in self.hosts.items()
                if not host.in_flight and host.crawl_delay is None
                and host.next_start <= now and host.waits_until() <= now]
        for key in idle:
            del self.hosts[key]
        return len(idle)

    def _draw(self, rules: HostRules) -> float:
        if not rules.jitter or not rules.delay:
            return rules.delay
        return max(0.0, rules.delay * (1 + self.rng.uniform(-rules.jitter, rules.jitter)))
