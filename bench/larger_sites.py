"""Scrapy's per-host priority queue taking the host with the most pending requests first: the
"larger sites first" order of Baeza-Yates, Castillo, Marin and Rodriguez (2005).

    SCHEDULER_PRIORITY_QUEUE = "bench.larger_sites.LargerSitesFirstQueue"

Among the hosts with the fewest downloads in flight (Scrapy's own politeness rule), the one
with the most requests waiting goes next; within a host, the host's own queue (with
DEPTH_PRIORITY=1 and FIFO queues: breadth first).
"""

from __future__ import annotations

from scrapy.pqueues import DownloaderAwarePriorityQueue


class LargerSitesFirstQueue(DownloaderAwarePriorityQueue):
    def _next_slot(self, stats: list[tuple[int, str]], *, update_state: bool) -> str:
        active, _size, slot = min((active, -len(self.pqueues[slot]), slot)
                                  for active, slot in stats)
        return slot
