"""The live view: a crawl process's counters in the Prometheus text format, while it runs.

    curl http://127.0.0.1:9410/metrics        (with -s TIANWANG_METRICS_PORT=9410)

Off unless TIANWANG_METRICS_PORT is set; it listens on TIANWANG_METRICS_ADDRESS, 127.0.0.1
(this machine only) unless told otherwise. Every process of a crawl serves its own: a node of
a shared crawl on its machine, each of TIANWANG_PROCESSES on the port plus its number.

What it serves (docs/live-view.md lists every series): pages stored, bytes, responses by
status, pages per second over the last minute, pending requests in all, by weight and by
host (the TIANWANG_METRICS_HOSTS hosts with most), refused and failed requests by reason,
pages kept already stored, Redis round trips in a shared crawl, and whether the crawl runs.
The figures are the crawl's stats, named as the closing line names them
(tianwang/outcome.py), so a scrape taken after the crawl ended equals its stats file. The
pending requests by host are asked of the scheduler when scraped
(tianwang.signals.pending_hosts_wanted): counting them walks its queue, which is done per
scrape, not per second.

At the end the view stays up until it has been scraped once more with the final counters,
at most TIANWANG_METRICS_LINGER seconds: else the last minutes between two scrapes of a
crawl would never reach the monitoring.
"""

from __future__ import annotations

import logging
import math
import time
from collections import Counter, deque
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from scrapy import signals
from scrapy.exceptions import NotConfigured
from scrapy.utils.asyncio import create_looping_call
from twisted.internet import defer
from twisted.internet.error import CannotListenError
from twisted.web import resource, server

from tianwang import signals as tw_signals
from tianwang.config import SettingError, get_int, get_nonempty_str, get_seconds
from tianwang.outcome import failures, kept_before, refusals

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)

CONTENT_TYPE = b"text/plain; version=0.0.4; charset=utf-8"
PATH = b"metrics"
RATE_WINDOW = 60  # seconds of the pages-per-second gauge
STATUS = "downloader/response_status_count/"
PENDING_BY_WEIGHT = "tianwang/frontier/pending/w"
ROUND_TRIPS = "tianwang/redis/round_trips/"
Sample = tuple[dict[str, str], float]


class LiveView:
    def __init__(self, crawler: Crawler, port: int, address: str, hosts: int,
                 linger: float) -> None:
        self.crawler = crawler
        self.stats = crawler.stats
        self.port, self.address, self.hosts, self.linger = port, address, hosts, linger
        self.started = time.time()
        self.running = False
        self.stored: deque[tuple[float, int]] = deque(maxlen=RATE_WINDOW + 1)
        self.sampler: Any = None
        self.listener: Any = None
        self._final: defer.Deferred[None] | None = None  # fired by a scrape after the end

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> LiveView:
        settings = crawler.settings
        port = get_int(settings, "TIANWANG_METRICS_PORT", minimum=0, maximum=65535)
        if not port:
            raise NotConfigured
        view = cls(crawler, port, get_nonempty_str(settings, "TIANWANG_METRICS_ADDRESS"),
                   get_int(settings, "TIANWANG_METRICS_HOSTS", minimum=0),
                   get_seconds(settings, "TIANWANG_METRICS_LINGER", maximum=3600))
        view.listen()
        crawler.signals.connect(view.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(view.spider_closed, signal=signals.spider_closed)
        crawler.signals.connect(view.engine_stopped, signal=signals.engine_stopped)
        return view

    def listen(self) -> None:
        """Listen now, as the crawl starts: a port taken stops it with one line."""
        from twisted.internet import reactor

        site = _QuietSite(_Metrics(self))
        try:
            self.listener = reactor.listenTCP(  # type: ignore[attr-defined]
                self.port, site, interface=self.address)
        except CannotListenError as exc:
            raise SettingError("TIANWANG_METRICS_PORT", self.port,
                               f"a port free on {self.address} ({exc.socketError})") from None
        logger.info("live view: http://%s:%d/metrics (Prometheus text format)",
                    self.address, self.port)
        self.running = True  # from start-up (a shared crawl may wait for its quorum) to end

    def spider_opened(self) -> None:
        self.sampler = create_looping_call(self._sample)
        self.sampler.start(1.0, now=True)

    def spider_closed(self) -> None:
        if self.sampler is not None and self.sampler.running:
            self.sampler.stop()

    def engine_stopped(self) -> defer.Deferred[None] | None:
        """The counters are final (every component has put its figures, as for the stats
        file): wait, at most TIANWANG_METRICS_LINGER s, for a scrape of them, then stop
        listening."""
        self.running = False
        if not self.linger:
            return self._stop()
        from twisted.internet import reactor

        logger.info("live view: waiting up to %g s for a last scrape of the final counters",
                    self.linger)
        self._final = defer.Deferred()
        timer = reactor.callLater(self.linger, self._finish, False)  # type: ignore[attr-defined]
        self._final.addCallback(self._scraped_or_not, timer)
        return self._final

    def _finish(self, scraped: bool) -> None:
        if self._final is not None and not self._final.called:
            self._final.callback(scraped)

    def _scraped_or_not(self, scraped: bool, timer: Any) -> defer.Deferred[None] | None:
        if scraped:
            timer.cancel()
            logger.info("live view: final counters scraped")
        else:
            logger.warning("live view: no scrape of the final counters within %g s "
                           "(TIANWANG_METRICS_LINGER)", self.linger)
        return self._stop()

    def _stop(self) -> defer.Deferred[None] | None:
        return self.listener.stopListening() if self.listener is not None else None

    def scraped(self, request: server.Request) -> bytes:
        """The page a scrape gets; a scrape of the final counters lets the crawl end, once
        the answer is written out."""
        final = not self.running and self._final is not None
        text = self.page(self.stats.get_stats(), self._pending_hosts(), time.monotonic())
        if final:
            from twisted.internet import reactor

            request.notifyFinish().addCallbacks(  # not if the scraper hung up
                lambda _: reactor.callLater(0, self._finish, True),  # type: ignore[attr-defined]
                lambda _failure: None)
        return text.encode("utf-8")

    def _sample(self) -> None:
        self.stored.append((time.monotonic(), _count(self.stats.get_stats(),
                                                     "tianwang/storage/records")))

    def _pending_hosts(self) -> Counter[str] | None:
        """This process's pending requests by host, as the scheduler answers; None when no
        scheduler answers (not tianwang's, or none open)."""
        answers = self.crawler.signals.send_catch_log(tw_signals.pending_hosts_wanted)
        counts = [answer for _receiver, answer in answers if isinstance(answer, Counter)]
        return sum(counts, Counter()) if counts else None

    def rate(self, now: float) -> float:
        """Pages stored a second over the last minute (or since the crawl began)."""
        if len(self.stored) < 2 or not self.running:  # none yet, or none any more
            return 0.0
        (then, before), (last, stored) = self.stored[0], self.stored[-1]
        return (stored - before) / (last - then) if last > then else 0.0

    def page(self, stats: Mapping[str, Any], pending_hosts: Counter[str] | None,
             now: float) -> str:
        return exposition(stats, pending_hosts, self.hosts, self.rate(now), self.running,
                          self.started)


def exposition(stats: Mapping[str, Any], pending_hosts: Counter[str] | None, top: int,
               rate: float, running: bool, started: float) -> str:
    """The counters in the Prometheus text format (version 0.0.4)."""
    families = [
        ("tianwang_pages_stored_total", "counter", "Pages stored (records written).",
         [({}, _count(stats, "tianwang/storage/records"))]),
        ("tianwang_stored_bytes_total", "counter", "Bytes of the bodies stored.",
         [({}, _count(stats, "tianwang/storage/body_bytes"))]),
        ("tianwang_pages_per_second", "gauge",
         f"Pages stored a second over the last {RATE_WINDOW} s.", [({}, round(rate, 3))]),
        ("tianwang_requests_total", "counter", "Requests sent to servers.",
         [({}, _count(stats, "downloader/request_count"))]),
        ("tianwang_responses_total", "counter", "Responses received.",
         [({}, _count(stats, "response_received_count"))]),
        ("tianwang_responses_by_status_total", "counter", "Responses received, by status.",
         [({"status": key[len(STATUS):]}, value) for key, value in sorted(stats.items())
          if key.startswith(STATUS) and _is_number(value)]),
        ("tianwang_kept_already_stored_total", "counter",
         "Pages found stored already (the closing line's kept N already stored), by how.",
         _by("how", kept_before(stats))),
        ("tianwang_refused_total", "counter",
         "Requests refused, by the reason the closing line gives.", _by("reason",
                                                                        refusals(stats))),
        ("tianwang_failed_total", "counter",
         "Requests failed, by the reason the closing line gives.", _by("reason",
                                                                       failures(stats))),
        ("tianwang_pending_requests", "gauge", "Requests waiting in this process's frontier.",
         [({}, _count(stats, "tianwang/frontier/pending"))]),
        ("tianwang_pending_requests_by_weight", "gauge",
         "Requests waiting in this process's frontier, by url weight.",
         [({"weight": key[len(PENDING_BY_WEIGHT):]}, value) for key, value
          in sorted(stats.items(), key=lambda kv: _weight(kv[0]))
          if key.startswith(PENDING_BY_WEIGHT) and _is_number(value)]),
    ]
    if pending_hosts is not None:
        families += [
            ("tianwang_pending_hosts", "gauge",
             "Hosts with requests waiting in this process's frontier.",
             [({}, len(+pending_hosts))]),
            ("tianwang_pending_requests_by_host", "gauge",
             f"Requests waiting in this process's frontier, for the {top} hosts with most.",
             [({"host": host}, n) for host, n in
              sorted(pending_hosts.items(), key=lambda kv: (-kv[1], kv[0]))[:top] if n > 0]),
        ]
    trips = [({"of": key[len(ROUND_TRIPS):]}, value) for key, value in sorted(stats.items())
             if key.startswith(ROUND_TRIPS) and _is_number(value)]
    if trips:
        families.append(("tianwang_redis_round_trips_total", "counter",
                         "Round trips to the shared crawl's Redis: the frontier's syncs "
                         "(push, ack, take) and the dedup's batches of MD5 claims.", trips))
    families += [
        ("tianwang_crawl_running", "gauge", "1 while the crawl runs, 0 once it has ended.",
         [({}, int(running))]),
        ("tianwang_start_time_seconds", "gauge", "When this crawl process began (Unix time).",
         [({}, round(started, 3))]),
    ]
    return "".join(_family(*family) for family in families)


def _family(name: str, kind: str, text: str, samples: Iterable[Sample]) -> str:
    lines = [f"# HELP {name} {text}", f"# TYPE {name} {kind}"]
    for labels, value in samples:
        tags = ",".join(f'{key}="{_escape(str(val))}"' for key, val in labels.items())
        lines.append(f"{name}{{{tags}}} {_number(value)}" if tags
                     else f"{name} {_number(value)}")
    return "\n".join(lines) + "\n"


def _by(label: str, counts: Mapping[str, int]) -> list[Sample]:
    return [({label: key}, value) for key, value in sorted(counts.items())]


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _number(value: float) -> str:
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN"
    return repr(value) if isinstance(value, float) else str(int(value))


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _count(stats: Mapping[str, Any], key: str) -> int | float:
    value = stats.get(key, 0)
    return value if _is_number(value) else 0


def _weight(key: str) -> int:
    try:
        return -int(key[len(PENDING_BY_WEIGHT):])
    except ValueError:
        return 0


class _Metrics(resource.Resource):
    isLeaf = True

    def __init__(self, view: LiveView) -> None:
        super().__init__()
        self.view = view

    def render_GET(self, request: server.Request) -> bytes:  # noqa: N802 - twisted's name
        if request.postpath not in ([PATH], [PATH, b""]):
            request.setResponseCode(404)
            return b"the counters are at /metrics\n"
        request.setHeader(b"Content-Type", CONTENT_TYPE)
        return self.view.scraped(request)


class _QuietSite(server.Site):
    """Without twisted's access log: a scrape a second would fill the crawl's log."""

    def log(self, request: server.Request) -> None:
        return None
