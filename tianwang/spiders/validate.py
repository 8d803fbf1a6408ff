"""The `validate` spider: fetch every site's homepage, D1 -> D2 (seed 004 section 3.2, step 2).

    scrapy crawl validate -a sites=D1 -a out=D2 [-a removed=D2.removed]

Reads a site list (`<site>\\t<pages>`, more columns ignored), asks each site's homepage once,
as `wget -T 20 -t 2` did: TIANWANG_VALIDATE_TIMEOUT seconds without a byte, TIANWANG_VALIDATE_TRIES
attempts in all, TIANWANG_VALIDATE_CONCURRENCY at once (tianwang/default_settings.py; they set
TIANWANG_IDLE_TIMEOUT, RETRY_TIMES = tries - 1 and CONCURRENT_REQUESTS at spider priority, so
a setting given with -s still wins).

wget's `-T` is its read timeout (and its connect and DNS timeouts): the time without a byte,
not the time a page may take. A homepage that trickles for a minute a byte a second is live to
wget and is kept here (the download handler's idle timeout, tianwang/httphandler.py); a server
that accepts and says nothing is dropped after -T. wget has no bound on the whole download; a
crawl must have one, so a homepage still trickling after TIANWANG_VALIDATE_MAX_SECONDS ends as
a timeout too (DOWNLOAD_TIMEOUT; Heritrix's default is 20 s idle in 1200 s).

wget does not try again after its fatal errors, "connection refused" and a host name that does
not resolve, and neither does this spider (RETRY_EXCEPTIONS below): a refused connection is
asked once. Timeouts, lost connections and the retried answers (RETRY_HTTP_CODES) get the
second try.

wget's `-t` is "number of tries", the first one included, and seed 004's own arithmetic (a dead
host costs at least 40 s at -T 20) agrees: two attempts in all, one retry. The old
TIANWANG_VALIDATE_RETRIES counted retries after the first and made three; given today it stops
the crawl at start with one line naming TIANWANG_VALIDATE_TRIES, rather than being ignored.

Redirects are followed (as wget does); the row records the url that answered.

A site is reachable when its homepage answers 200 with a non-empty body. At the end, and only
when the crawl finished, it writes D2 whole (tianwang/collection/hosttable.py: site, pages,
status, MD5 of the body, final url, sorted) and the removals file (`<site>\\t<pages>\\t<reason>`):
every other site with why: `http-<status>` (after retries), `timeout`, `dns`, `refused`,
`connection-lost`, `empty` (a 200 without a body) or `error-<exception>`. The homepage url
leaves out the scheme's default port (`http://host:80/` is asked as `http://host/`).

D1 was chosen by the operator, not found on pages: the host filter (ports, IPs, spam names:
D4's work) and robots.txt are off, and so is the filter of private addresses.

On the real web, name lookups run in the reactor's thread pool (10 threads) with a 60 s
timeout; both are set for the whole process, which a spider cannot change, so give them on
the command line to match seed 004's 200 threads: -s REACTOR_THREADPOOL_MAXSIZE=200
-s DNS_TIMEOUT=20.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from scrapy import Request, Spider
from scrapy.exceptions import (
    CannotResolveHostError,
    DownloadConnectionRefusedError,
    DownloadFailedError,
    DownloadTimeoutError,
    ResponseDataLossError,
)
from scrapy.http import Response
from scrapy.spidermiddlewares.httperror import HttpError
from twisted.internet import error
from twisted.python.failure import Failure
from twisted.web.client import ResponseFailed

from tianwang import meta
from tianwang.collection.hosttable import Checked, TableError, read_rows, removal_line
from tianwang.collection.sitelist import split_site, write_lines
from tianwang.config import SettingError, get_int
from tianwang.config.names import RENAMED
from tianwang.errors import StartupError
from tianwang.hosts import DEFAULT_PORTS

# Error answers go to parse (recorded there) rather than to HttpErrorMiddleware, which would
# log a line per unreachable site; 3xx stay out, so redirects are still followed.
ERROR_STATUSES = list(range(400, 600))
# (Scrapy setting, tianwang setting, smallest sensible value, what to add): RETRY_TIMES counts
# retries after the first fetch, TIANWANG_VALIDATE_TRIES all fetches (wget -t).
MAPPED = (
    ("TIANWANG_IDLE_TIMEOUT", "TIANWANG_VALIDATE_TIMEOUT", 1, 0),
    ("DOWNLOAD_TIMEOUT", "TIANWANG_VALIDATE_MAX_SECONDS", 1, 0),
    ("RETRY_TIMES", "TIANWANG_VALIDATE_TRIES", 1, -1),
    ("CONCURRENT_REQUESTS", "TIANWANG_VALIDATE_CONCURRENCY", 1, 0),
)
# What wget tries again: Scrapy's list less what wget takes for fatal, the refused connection
# (ConnectError is its base class, so the other connect errors are named) and the name that
# does not resolve (twisted's DNSLookupError is an OSError, so OSError is left out too).
RETRY_EXCEPTIONS = [
    "scrapy.exceptions.DownloadFailedError",
    "scrapy.exceptions.DownloadTimeoutError",
    "scrapy.exceptions.ResponseDataLossError",
    "twisted.internet.error.ConnectionDone",
    "twisted.internet.error.ConnectionLost",
    "twisted.internet.error.TimeoutError",
    "twisted.internet.error.TCPTimedOutError",
    "twisted.internet.error.NoRouteError",
    "twisted.internet.error.ConnectingCancelledError",
    "scrapy.core.downloader.handlers.http11.TunnelError",
]
# Exceptions a fetch ends with, and the reason written for them (first match wins).
# Scrapy 2.19's download handlers raise its own exceptions; twisted's are kept for others.
ERRORS = (
    ((DownloadTimeoutError, error.TimeoutError, error.TCPTimedOutError), "timeout"),
    ((CannotResolveHostError, error.DNSLookupError), "dns"),
    ((DownloadConnectionRefusedError, error.ConnectionRefusedError), "refused"),
    ((ResponseDataLossError, DownloadFailedError, error.ConnectionLost, error.ConnectionDone,
      ResponseFailed), "connection-lost"),
)


class ValidateError(StartupError):
    """Arguments the spider cannot start with; nothing is fetched."""


class ValidateSpider(Spider):
    name = "validate"
    custom_settings = {
        # One request per site in file order: Scrapy's scheduler, not the url-weight frontier.
        "SCHEDULER": "scrapy.core.scheduler.Scheduler",
        # The proxy only (the test web, or TIANWANG_PROXY): no host or content-type filter.
        "DOWNLOADER_MIDDLEWARES": {"tianwang.middlewares.proxy.ProxyMiddleware": 740},
        "ITEM_PIPELINES": {},
        "ROBOTSTXT_OBEY": False,
        "DOWNLOAD_DELAY": 0,
        "CONCURRENT_REQUESTS_PER_DOMAIN": 8,  # a slot is a host name; sites rarely share one
        "COOKIES_ENABLED": False,
        "HTTPCACHE_ENABLED": False,
        "DOWNLOAD_MAXSIZE": 10 * 1024 * 1024,  # a homepage beyond it counts as an error
        "RETRY_GIVE_UP_LOG_LEVEL": "DEBUG",  # every unreachable site would log one line
        # wget -t 2 tries a timed-out homepage again (the project leaves timeouts out for
        # the site crawl), never a refused connection nor a name that does not resolve.
        "RETRY_EXCEPTIONS": RETRY_EXCEPTIONS,
    }
    sites: dict[str, int]

    def __init__(self, sites: str | None = None, out: str | None = None,
                 removed: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if not sites or not out:
            raise ValidateError("validate needs -a sites=D1 -a out=D2")
        self.sites_path, self.out = sites, Path(out)
        self.removed = Path(removed) if removed else self.out.with_name(self.out.name + ".removed")
        for path in (self.out, self.removed):
            if not path.parent.is_dir():
                raise ValidateError(f"validate: no directory for {path}")
        self.checked: dict[str, Checked] = {}
        self.failed: dict[str, str] = {}

    @classmethod
    def update_settings(cls, settings: Any) -> None:
        super().update_settings(settings)
        for old, new in RENAMED.items():
            if settings.get(old) is not None:
                raise SettingError(old, settings.get(old), f"no such setting; give {new}")
        for scrapy_name, name, minimum, add in MAPPED:
            settings.set(scrapy_name, get_int(settings, name, minimum=minimum) + add, "spider")

    @classmethod
    def from_crawler(cls, crawler: Any, *args: Any, **kwargs: Any) -> ValidateSpider:
        spider = super().from_crawler(crawler, *args, **kwargs)
        spider.load()
        return spider

    def load(self) -> None:
        try:
            self.sites = {parts[0]: int(parts[1]) for parts in read_rows(self.sites_path,
                                                                          ("site", "pages"))}
        except TableError as exc:
            raise ValidateError(f"validate: {exc}") from None
        self.logger.info("validating %d sites from %s", len(self.sites), self.sites_path)

    async def start(self) -> AsyncIterator[Request]:
        for site in self.sites:
            # dont_filter: two sites redirecting to one url are both recorded.
            yield Request(homepage(site), callback=self.parse, errback=self.fail,
                          dont_filter=True,
                          meta={meta.SITE: site, "handle_httpstatus_list": ERROR_STATUSES})

    def parse(self, response: Response) -> None:
        site = response.meta[meta.SITE]
        if response.status != 200:
            self._record_failure(site, f"http-{response.status}")
        elif not response.body:
            self._record_failure(site, "empty")
        else:
            md5 = hashlib.md5(response.body).hexdigest()
            self.checked[site] = Checked(site, self.sites[site], 200, md5, response.url)
            self._progress()

    def fail(self, failure: Failure) -> None:
        self._record_failure(failure.request.meta[meta.SITE], failure_reason(failure))

    def _record_failure(self, site: str, reason: str) -> None:
        self.failed[site] = reason
        self.crawler.stats.inc_value(f"tianwang/validate/{reason}")
        self._progress()

    def _progress(self) -> None:
        done = len(self.checked) + len(self.failed)
        if done % max(1, len(self.sites) // 10) == 0 or done == len(self.sites):
            self.logger.info("validated %d of %d sites", done, len(self.sites))

    def closed(self, reason: str) -> None:
        if reason != "finished":
            self.logger.error("validate: crawl ended (%s); %s not written", reason, self.out)
            return
        for site in self.sites:  # nothing is dropped silently
            if site not in self.checked and site not in self.failed:
                self.failed[site] = "no-answer"
        write_lines(self.out, (self.checked[s].d2_line() for s in sorted(self.checked)))
        write_lines(self.removed, (removal_line(s, self.sites[s], self.failed[s])
                                   for s in sorted(self.failed)))
        self.logger.info("%s", count_line(len(self.sites), len(self.checked), self.failed))


def homepage(site: str) -> str:
    """The url asked for a site: `http://host:80/` -> `http://host/`, other ports kept."""
    scheme, host, port = split_site(site)
    return f"{scheme}://{host}/" if port == DEFAULT_PORTS.get(scheme) else site


def failure_reason(failure: Failure) -> str:
    if failure.check(HttpError):
        return f"http-{failure.value.response.status}"
    for kinds, reason in ERRORS:
        if failure.check(*kinds):
            return reason
    return f"error-{type(failure.value).__name__.lower()}"


def count_line(total: int, reachable: int, failed: dict[str, str]) -> str:
    reasons = Counter(failed.values())
    parts = ", ".join(f"{r} {n}" for r, n in sorted(reasons.items(), key=lambda i: (-i[1], i[0])))
    return (f"D2: {reachable} sites reachable of {total}; {len(failed)} removed"
            + (f": {parts}" if parts else ""))
