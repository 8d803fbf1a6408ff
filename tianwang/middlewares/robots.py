"""robots.txt in full (RFC 9309 and Crawl-delay): Scrapy's RobotsTxtMiddleware, completed.

Scrapy's middleware parses whatever body robots.txt came with, whatever its status, and
allows everything when the download fails; it keeps each host's rules for the whole crawl.
This one, by RFC 9309 section 2.3.1:

- 2xx: the rules (Protego). The RFC's minimum is the most read: the first 500 KiB of a
  larger file, however it comes (a Content-Length of 50 MB, chunked, gzip, over
  TIANWANG_MAX_PAGE_BYTES), its last, cut line dropped; a UTF-8 byte order mark is skipped
  and a UTF-16 one decodes the file as UTF-16 (the RFC asks UTF-8; servers send both);
- a body that cannot be read at all (its Content-Encoding does not decode): unavailable;
- 4xx (429 aside) and a redirect chain that never ends: no rules, every url allowed;
- 429, 5xx or no answer at all (a network error): robots.txt is *unavailable*, which means
  complete disallow. The host's requests wait, never dropped at once, and robots.txt is
  asked for again every TIANWANG_ROBOTS_RETRY_DELAY seconds; after TIANWANG_ROBOTS_RETRIES
  further failures a request of the host is dropped (counted), and robots.txt is asked for
  again once the retry delay has passed. A host whose robots.txt was read before keeps
  those rules while it is unavailable (the RFC's "cached copy"). The RFC lets a crawler
  assume "allow all" after a long unavailability (30 days); a crawl never does here: a
  server that keeps failing is left alone.
- Rules are kept TIANWANG_ROBOTS_TTL seconds (the RFC: at most 24 hours), then fetched
  again, so a crawl of days follows a site's changes to its robots.txt.

Waiting costs the crawl nothing. A request of a host whose robots.txt is not read yet (or
is unavailable) goes back to the frontier, which keeps the host's requests until it may be
asked again (tianwang.signals.host_wait, then host_go once robots.txt is read): no request
waits here holding one of the crawl's CONCURRENT_REQUESTS. The fetch runs beside the
crawl, and the host sends nothing else meanwhile, so robots.txt keeps the host's delay too.
With a scheduler other than tianwang's frontier, the request waits here instead.

`Crawl-delay` (for our user agent, else `*`), capped at TIANWANG_MAX_CRAWL_DELAY, goes to
the frontier (tianwang.signals.host_delay), which keeps it: one request at a time, that far
from the end of the host's last answer to its next request.

The parsed rules go out on Scrapy's `robots_parsed` signal as before; the parser sent has
`sitemaps` (the `Sitemap:` lines), which the site spider reads when TIANWANG_SITEMAPS is on.

A close that gives up what is in flight (tianwang.signals.abandon_in_flight) ends every
wait here at once: the waiting requests end in Abandoned, and a resumed job fetches them.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass, field
from typing import Any

from protego import Protego
from scrapy import Request, signals
from scrapy.downloadermiddlewares.robotstxt import RobotsTxtMiddleware
from scrapy.exceptions import IgnoreRequest
from scrapy.http import Response
from scrapy.http.request import NO_CALLBACK
from scrapy.utils.defer import deferred_from_coro, maybe_deferred_to_future
from scrapy.utils.httpobj import urlparse_cached
from twisted.internet import defer

from tianwang import meta
from tianwang import signals as tw_signals
from tianwang.config import get_int, get_seconds
from tianwang.httphandler import Abandoned
from tianwang.middlewares.failures import DownloadFailed
from tianwang.sendback import send_back

logger = logging.getLogger(__name__)

MAX_ROBOTS_BYTES = 500 * 1024  # RFC 9309 2.5: a parser must read at least 500 KiB
HOSTS_KEPT = 100_000  # hosts whose robots.txt is remembered; the oldest are forgotten


@dataclass(frozen=True, slots=True)
class RobotsConfig:
    ttl: float
    retry_delay: float
    retries: int
    max_crawl_delay: float

    @classmethod
    def from_settings(cls, settings: Any) -> RobotsConfig:
        return cls(
            ttl=get_seconds(settings, "TIANWANG_ROBOTS_TTL", minimum=1, maximum=86400),
            retry_delay=get_seconds(settings, "TIANWANG_ROBOTS_RETRY_DELAY", minimum=0),
            retries=get_int(settings, "TIANWANG_ROBOTS_RETRIES", minimum=0),
            max_crawl_delay=get_seconds(settings, "TIANWANG_MAX_CRAWL_DELAY", minimum=0),
        )


class RobotsParser:
    """One host's rules as Scrapy's RobotParser interface has them, plus what Protego adds.

    `cut`: the body is the start of a longer file (its download was stopped)."""

    def __init__(self, body: bytes, cut: bool = False) -> None:
        self.rp = Protego.parse(robots_text(body, cut))

    def allowed(self, url: str, user_agent: str | bytes) -> bool:
        return self.rp.can_fetch(url, _text(user_agent))

    def crawl_delay(self, user_agent: str | bytes) -> float | None:
        return self.rp.crawl_delay(_text(user_agent))

    @property
    def sitemaps(self) -> list[str]:
        return list(self.rp.sitemaps)


def robots_text(body: bytes, cut: bool = False) -> str:
    """The text of a robots.txt body: its first MAX_ROBOTS_BYTES, UTF-8 (a BOM skipped) or
    UTF-16 when a UTF-16 BOM starts it (the BOM gives the byte order), without the last
    line when the file went on past them: a rule cut short ("Disallow: /" of
    "Disallow: /private/") must not stand for the rule."""
    cut = cut or len(body) >= MAX_ROBOTS_BYTES
    body = body[:MAX_ROBOTS_BYTES]
    if body.startswith(_UTF16_BOMS):
        text = body.decode("utf-16", "replace")
    else:
        text = body.decode("utf-8", "replace").removeprefix("\ufeff")
    if cut:
        text = text[: max(text.rfind("\n"), text.rfind("\r")) + 1]
    return text


_UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")


@dataclass(slots=True)
class HostRobots:
    """What is known of one host's robots.txt."""

    parser: RobotsParser | None = None  # None: allow all (4xx), or unavailable, never read
    unavailable: bool = False  # the last fetch failed (429, 5xx, no answer)
    expires: float = 0.0  # monotonic time after which robots.txt is fetched again
    failures: int = 0  # failed fetches in a row
    fetching: bool = False  # a fetch is under way
    fetches: int = 0  # fetches done (read, refused or failed)
    changed: list[defer.Deferred] = field(default_factory=list)  # waiters (another scheduler)

    @property
    def known(self) -> bool:
        """Rules to go by: read (or allow all), or a copy read before it became unavailable."""
        return self.parser is not None or (self.expires > 0 and not self.unavailable)


GO, DROP = "go", "drop"


class RobotsMiddleware(RobotsTxtMiddleware):
    """RobotsTxtMiddleware with RFC 9309's statuses, a bounded cache and Crawl-delay."""

    def __init__(self, crawler: Any) -> None:
        super().__init__(crawler)  # NotConfigured unless ROBOTSTXT_OBEY
        self.config = RobotsConfig.from_settings(crawler.settings)
        self.user_agent = crawler.settings.get("ROBOTSTXT_USER_AGENT") or \
            crawler.settings.get("USER_AGENT") or "*"
        self.hosts: dict[str, HostRobots] = {}
        self._logged: set[str] = set()
        self._waits: set[defer.Deferred] = set()  # what requests wait on here, to cancel
        self._fetches: set[defer.Deferred] = set()  # the robots.txt fetches under way
        self.abandoning = False
        # Whether the scheduler keeps the requests of a host that must wait (the frontier:
        # they go back to it); with another scheduler they wait here.
        self.sends_back = False
        crawler.signals.connect(self.abandon, signal=tw_signals.abandon_in_flight)
        crawler.signals.connect(self._opened, signal=signals.spider_opened)

    def _opened(self) -> None:
        scheduler = self.crawler.engine.scheduler
        self.sends_back = bool(getattr(scheduler, "keeps_host_waits", False))

    def abandon(self) -> None:
        """The crawl is closing and gives up what is in flight: end every wait now."""
        self.abandoning = True
        for waiting in list(self._waits):
            waiting.cancel()

    async def _wait(self, waiting: defer.Deferred) -> None:
        """Wait for `waiting`, or end in Abandoned when the crawl gives up what is in flight."""
        self._waits.add(waiting)
        try:
            await maybe_deferred_to_future(waiting)
        except defer.CancelledError:
            if self.abandoning:
                raise Abandoned from None
            raise
        finally:
            self._waits.discard(waiting)
        if self.abandoning:
            raise Abandoned

    async def process_request(self, request: Request) -> Request | None:  # type: ignore[override]
        if request.meta.get("dont_obey_robotstxt") or request.url.startswith(("data:", "file:")):
            return None
        if self.abandoning:
            raise Abandoned
        url = urlparse_cached(request)
        origin = f"{url.scheme}://{url.netloc}"  # RFC 9309: one robots.txt per scheme too
        robots = self._robots(origin)
        while (verdict := self._verdict(request, origin, robots)) is not GO:
            if verdict is DROP:
                self._stats.inc_value("tianwang/robots/unavailable_dropped")
                self._log_once("dropped", "Dropped %s: robots.txt of its host unavailable after "
                               "%d tries (logged once)", request, robots.failures)
                raise IgnoreRequest("robots.txt unavailable")
            if self.sends_back:  # the frontier keeps it while its host waits
                self._stats.inc_value("tianwang/robots/sent_back")
                self._host_wait(request, verdict)
                again = send_back(request)
                again.meta[meta.ROBOTS_FETCHES] = robots.fetches
                return again
            request.meta.setdefault(meta.ROBOTS_FETCHES, robots.fetches)
            await self._wait(_change_or_time(robots, verdict))
        if robots.parser is not None and not robots.parser.allowed(request.url, self.user_agent):
            self._stats.inc_value("robotstxt/forbidden")
            raise IgnoreRequest("Forbidden by robots.txt")
        return None

    def _verdict(self, request: Request, origin: str, robots: HostRobots) -> str | float:
        """GO (the rules are there), DROP (unavailable past its tries), or when the host may
        be asked again: math.inf while its robots.txt is fetched (a fetch is started when
        it is due: the host sends nothing else meanwhile, so the fetch keeps its delay). A
        request sent back to wait for a fetch goes by its outcome once it is done, however
        late it comes back: had the last try's delay passed meanwhile, it would ask again,
        and so for ever with a delay of 0."""
        waited = request.meta.get(meta.ROBOTS_FETCHES)
        settled = (waited is not None and robots.fetches > waited and not robots.fetching
                   and (robots.known or robots.failures > self.config.retries))
        if not settled and time.monotonic() >= robots.expires and not robots.fetching:
            self._start_fetch(request, origin, robots)
        if robots.fetching:
            return math.inf
        if robots.known:  # read, or a copy read before it became unavailable
            return GO
        if robots.failures > self.config.retries:
            return DROP
        return robots.expires

    def _robots(self, origin: str) -> HostRobots:
        robots = self.hosts.get(origin)
        if robots is None:
            robots = self.hosts[origin] = HostRobots()
            self._forget_oldest()
        return robots

    def _start_fetch(self, request: Request, origin: str, robots: HostRobots) -> None:
        """Fetch the host's robots.txt beside the crawl; until it is in, the host waits."""
        robots.fetching = True
        self._host_wait(request, math.inf)
        fetch = deferred_from_coro(self._fetched(request, origin, robots))
        self._fetches.add(fetch)
        fetch.addBoth(lambda _: self._fetches.discard(fetch))

    async def _fetched(self, request: Request, origin: str, robots: HostRobots) -> None:
        try:
            await self._fetch(request, origin, robots)
        except Abandoned:
            return  # the crawl is closing: the host waits, nothing learnt
        except Exception:  # a bug: the host must not wait for ever
            logger.exception("robots.txt of %s: the fetch failed", origin)
            self._failed(robots, origin, "an error")
        finally:
            robots.fetching = False
            robots.fetches += 1
            waiters, robots.changed = robots.changed, []
            for waiter in waiters:
                if not waiter.called:
                    waiter.callback(None)
        if self.abandoning:
            return
        if robots.known or robots.failures > self.config.retries:
            self._host_go(request)  # its requests flow again (or are dropped, quickly)
        else:
            self._host_wait(request, robots.expires)

    def _host_wait(self, request: Request, until: float) -> None:
        self.crawler.signals.send_catch_log(tw_signals.host_wait, key=self._slot_key(request),
                                            until=until, reason="robots")

    def _host_go(self, request: Request) -> None:
        self.crawler.signals.send_catch_log(tw_signals.host_go, key=self._slot_key(request),
                                            reason="robots")

    def _slot_key(self, request: Request) -> str:
        return self.crawler.engine.downloader.get_slot_key(request)

    async def _fetch(self, request: Request, origin: str, robots: HostRobots) -> None:
        robots_request = Request(
            f"{origin}/robots.txt",
            priority=self.DOWNLOAD_PRIORITY,
            # This middleware retries robots.txt itself, after a delay: not Scrapy's retries
            # at once, nor the back-off middleware's pauses.
            # Its first MAX_ROBOTS_BYTES are read and parsed, however long it is: neither
            # TIANWANG_MAX_PAGE_BYTES nor DOWNLOAD_MAXSIZE/WARNSIZE refuse or warn of it.
            meta={"dont_obey_robotstxt": True, "dont_retry": True, meta.ROBOTS: True,
                  meta.KEEP_FIRST: MAX_ROBOTS_BYTES, "download_maxsize": 0,
                  "download_warnsize": 0},
            callback=NO_CALLBACK,
            dont_filter=True,
        )
        self._stats.inc_value("robotstxt/request_count")
        try:
            response = await self.crawler.engine.download_async(robots_request)
        except Abandoned:  # the crawl is closing: nothing learnt of this robots.txt
            raise
        except DownloadFailed as exc:  # no answer, or none that can be read: unavailable
            self._failed(robots, origin, str(exc))
        except IgnoreRequest:  # refused by a filter: as Scrapy does, no rules
            self._read(robots, None)
        except Exception as exc:  # no answer: unavailable
            self._stats.inc_value(f"robotstxt/exception_count/{type(exc)}")
            self._failed(robots, origin, f"{type(exc).__name__}: {exc}")
        else:
            await self._answered(request, response, origin, robots)

    async def _answered(self, request: Request, response: Response, origin: str,
                        robots: HostRobots) -> None:
        status = response.status
        self._stats.inc_value("robotstxt/response_count")
        self._stats.inc_value(f"robotstxt/response_status_count/{status}")
        if status == 429 or status >= 500:
            self._failed(robots, origin, f"status {status}")
            return
        parser = None
        if 200 <= status < 300:
            cut = "download_stopped" in response.flags
            if cut or len(response.body) >= MAX_ROBOTS_BYTES:
                self._stats.inc_value("tianwang/robots/cut")
            parser = RobotsParser(response.body, cut)
        if parser is None:
            self._stats.inc_value("tianwang/robots/allow_all")
        self._read(robots, parser)
        self._apply_crawl_delay(request, parser)
        await self.crawler.signals.send_catch_log_async(
            signal=signals.robots_parsed, robotparser=parser, request=request)

    def _read(self, robots: HostRobots, parser: RobotsParser | None) -> None:
        robots.parser, robots.unavailable, robots.failures = parser, False, 0
        robots.expires = time.monotonic() + self.config.ttl

    def _failed(self, robots: HostRobots, origin: str, why: str) -> None:
        robots.unavailable = True
        robots.failures += 1
        robots.expires = time.monotonic() + self.config.retry_delay
        self._stats.inc_value("tianwang/robots/unavailable")
        kept = " (keeping its earlier rules)" if robots.parser is not None else ""
        level = logging.DEBUG if "unavailable" in self._logged else logging.INFO
        self._logged.add("unavailable")
        logger.log(level, "robots.txt of %s unavailable (%s)%s; asking again in %g s%s",
                   origin, why, kept, self.config.retry_delay,
                   "" if level == logging.DEBUG else " (logged once; more at DEBUG)")

    def _apply_crawl_delay(self, request: Request, parser: RobotsParser | None) -> None:
        """The host's Crawl-delay (capped) to the frontier, which keeps it: one request at a
        time, that far from the end of each answer to the next start. A robots.txt read again
        may lower or drop it."""
        asked = parser.crawl_delay(self.user_agent) if parser is not None else None
        delay = min(float(asked), self.config.max_crawl_delay) if asked and asked > 0 else None
        if asked and delay is not None and asked > delay:
            self._stats.inc_value("tianwang/robots/crawl_delay_capped")
        if delay is not None:
            self._stats.inc_value("tianwang/robots/crawl_delay_hosts")
            self._stats.max_value("tianwang/robots/crawl_delay_max", delay)
        self.crawler.signals.send_catch_log(tw_signals.host_delay, key=self._slot_key(request),
                                            seconds=delay)

    def _forget_oldest(self) -> None:
        """Keep at most HOSTS_KEPT hosts: a forgotten host's robots.txt is fetched again."""
        if len(self.hosts) <= HOSTS_KEPT:
            return
        for origin, robots in self.hosts.items():
            if not robots.fetching:
                del self.hosts[origin]
                return

    def _log_once(self, key: str, message: str, *args: Any) -> None:
        if key not in self._logged:
            self._logged.add(key)
            logger.info(message, *args)


def _text(user_agent: str | bytes) -> str:
    return user_agent.decode("latin-1") if isinstance(user_agent, bytes) else user_agent


def _change_or_time(robots: HostRobots, until: float) -> defer.Deferred:
    """What a request waits on with a scheduler that cannot keep it: the host's robots.txt
    fetched, or the time it may be asked again."""
    from twisted.internet import reactor

    changed: defer.Deferred = defer.Deferred()
    robots.changed.append(changed)
    if until != math.inf:
        later = reactor.callLater(max(0.0, until - time.monotonic()),
                                  lambda: changed.called or changed.callback(None))
        changed.addBoth(lambda result: (later.active() and later.cancel(), result)[1])
    return changed

