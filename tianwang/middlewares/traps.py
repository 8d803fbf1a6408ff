"""Bound the crawler traps a level limit would have bounded (issue 16).

A site can make endless urls: a calendar's "next month", a relative link that adds a path
segment on every page (/a/a/a/...), a query that grows. With TIANWANG_MAX_LEVELS=0 nothing
else stops them, so every request is checked before it is sent:

- url_length: the url is longer than TIANWANG_MAX_URL_LENGTH characters;
- repeated_path: a path segment, or a run of up to three, repeats more than
  TIANWANG_MAX_PATH_REPEATS times in a row;
- host_budget: its host has already had TIANWANG_MAX_HOST_PAGES requests (per crawl process;
  a retry, or a request sent back to wait for robots.txt or a Retry-After, counts once).

A refused request ends in IgnoreRequest, counted as tianwang/filter/<reason> and logged once
per reason. Session ids in links are stripped by the spider (tianwang.urls.strip_session_ids).
robots.txt is never refused: it costs one request a host and decides what else may be asked.
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from typing import Any

from scrapy import Request
from scrapy.exceptions import IgnoreRequest

from tianwang import meta
from tianwang import signals as tw_signals
from tianwang.config import get_int
from tianwang.urls import url_host

logger = logging.getLogger(__name__)


def repeated_path(max_repeats: int) -> re.Pattern[str]:
    """What finds a run of one to three path segments repeated more than max_repeats times
    in a row (searched in the path with a "/" added at its end)."""
    return re.compile(rf"/((?:[^/?#]+/){{1,3}}?)\1{{{max_repeats}}}")


class TrapFilterMiddleware:
    def __init__(self, max_length: int, max_repeats: int, max_host_pages: int,
                 stats: Any) -> None:
        self.max_length, self.max_host_pages, self.stats = max_length, max_host_pages, stats
        self.signals: Any = None  # from_crawler's: refusals are told by signal
        self.repeats = repeated_path(max_repeats) if max_repeats else None
        self.pages: Counter[str] = Counter()
        self._logged: set[str] = set()

    @classmethod
    def from_crawler(cls, crawler: Any) -> TrapFilterMiddleware:
        settings = crawler.settings
        middleware = cls(
            get_int(settings, "TIANWANG_MAX_URL_LENGTH", minimum=0),
            get_int(settings, "TIANWANG_MAX_PATH_REPEATS", minimum=0),
            get_int(settings, "TIANWANG_MAX_HOST_PAGES", minimum=0),
            crawler.stats,
        )
        middleware.signals = crawler.signals
        return middleware

    def process_request(self, request: Request, spider: Any = None) -> None:
        if request.meta.get("dont_obey_robotstxt") and request.url.endswith("/robots.txt"):
            return
        url = request.url
        if self.max_length and len(url) > self.max_length:
            self._refuse(request, "url_length")
        if self.repeats is not None and self.repeats.search(_path(url)):
            self._refuse(request, "repeated_path")
        if self.max_host_pages and not (request.meta.get("retry_times")
                                        or request.meta.get(meta.SENT_BACK)):
            try:
                host = url_host(url)
            except ValueError:
                return
            if self.pages[host] >= self.max_host_pages:
                self._refuse(request, "host_budget")
            self.pages[host] += 1

    def _refuse(self, request: Request, reason: str) -> None:
        self.stats.inc_value(f"tianwang/filter/{reason}")
        if self.signals is not None:
            self.signals.send_catch_log(tw_signals.request_refused, request=request,
                                        reason=reason)
        if reason not in self._logged:
            self._logged.add(reason)
            logger.info("Refused %s: crawler trap %r (logged once)", request, reason)
        raise IgnoreRequest(f"crawler trap: {reason}")


def _path(url: str) -> str:
    """The url's path with a "/" at its end, without scheme, host, query and fragment."""
    start = url.find("/", url.find("://") + 3) if "://" in url else 0
    if start < 0:
        return "/"
    end = len(url)
    for mark in "?#":
        at = url.find(mark, start)
        if 0 <= at < end:
            end = at
    path = url[start:end]
    return path if path.endswith("/") else path + "/"
