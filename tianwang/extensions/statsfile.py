"""The crawl's final stats as JSON in the data directory, for `tianwang report`:
TIANWANG_DATA_DIR/stats/<start time>-<pid>.json, one file a run, written whole or not at all.

Refusals, failures and the status of responses not stored live only in the stats; without a
file they would end with the process. Beside Scrapy's stats, under "tianwang/hosts", each
host's responses, their summed download latency (seconds) and the requests refused
(signals.request_refused), for the report's slowest and most refused hosts. A month's crawl
meets millions of hosts: at most HOST_LIMIT are kept, and past it the hosts least worth
listing (neither among the slowest nor among the most refused) are dropped; a dropped host
met again starts afresh.
"""

from __future__ import annotations

import heapq
import json
import logging
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scrapy import signals
from scrapy.utils.httpobj import urlparse_cached

from tianwang import signals as tw_signals
from tianwang.analysis.crawlreport import HOSTS, stats_path
from tianwang.config import get_nonempty_str
from tianwang.formats.atomic import write_atomic

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)

# Hosts in the per-host figures (about 250 bytes each).
HOST_LIMIT = 100_000


class StatsFile:
    def __init__(self, stats: Any, data_dir: Path, host_limit: int = HOST_LIMIT) -> None:
        self.stats = stats
        self.data_dir = data_dir
        self.host_limit = host_limit
        self.hosts: dict[str, list[float]] = {}  # host -> [responses, latency, refused]
        self.path = stats_path(data_dir, time.strftime("%Y%m%dT%H%M%S"), os.getpid())

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> StatsFile:
        data_dir = Path(get_nonempty_str(crawler.settings, "TIANWANG_DATA_DIR"))
        extension = cls(crawler.stats, data_dir)
        # engine_stopped: after the spider closed, when every component has put its figures.
        crawler.signals.connect(extension.write, signal=signals.engine_stopped)
        crawler.signals.connect(extension.response, signal=signals.response_received)
        crawler.signals.connect(extension.refused, signal=tw_signals.request_refused)
        return extension

    def _host(self, request: Any) -> list[float]:
        host = urlparse_cached(request).hostname or ""
        counts = self.hosts.get(host)
        if counts is None:
            if len(self.hosts) >= self.host_limit:
                self._drop_hosts()
            counts = self.hosts[host] = [0, 0.0, 0]
        return counts

    def _drop_hosts(self) -> None:
        """Keep the quarter of the limit slowest and the quarter most refused."""
        hosts, keep = self.hosts, self.host_limit // 4
        slowest = heapq.nlargest(keep, hosts, key=lambda h: hosts[h][1] / (hosts[h][0] or 1))
        refused = heapq.nlargest(keep, hosts, key=lambda h: hosts[h][2])
        self.hosts = {host: hosts[host] for host in (*slowest, *refused)}
        self.stats.inc_value("tianwang/hosts_dropped", len(hosts) - len(self.hosts))

    def response(self, response: Any, request: Any) -> None:
        counts = self._host(request)
        counts[0] += 1
        counts[1] += float(request.meta.get("download_latency") or 0.0)

    def refused(self, request: Any, reason: str) -> None:
        self._host(request)[2] += 1

    def write(self) -> None:
        if not self.data_dir.is_dir():
            return  # a spider that stores nothing (validate): no data directory to make
        stats = {key: _plain(value) for key, value in self.stats.get_stats().items()}
        stats[HOSTS] = {host: {"responses": n, "latency": round(latency, 3), "refused": r}
                        for host, (n, latency, r) in self.hosts.items()}
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(self.path, json.dumps(stats, indent=1, sort_keys=True).encode())
        except OSError as exc:
            logger.warning("stats not written to %s: %s", self.path, exc)


def _plain(value: Any) -> Any:
    if isinstance(value, (int, float, str, bool)) or value is None:
        return value
    return str(value)  # datetimes
