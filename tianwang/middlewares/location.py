"""A redirect whose Location no request can be made of is the web's fault, not an error.

`Location: javascript:...`, `http://[bad/` or a port of 99999999 made Scrapy's
RedirectMiddleware raise (an ERROR traceback) or hand a 3xx page on, counted nowhere. This
middleware runs before it (610 > 600), builds the target as it would, and refuses a target
that is not an http(s) url with a host and a valid port: IgnoreRequest, counted as
tianwang/error/bad_location, logged once per host.
"""

from __future__ import annotations

import logging
from typing import Any
from urllib.parse import urljoin, urlsplit

from scrapy import Request
from scrapy.exceptions import IgnoreRequest
from scrapy.http import Response
from w3lib.url import safe_url_string

from tianwang.middlewares.failures import OncePerHost
from tianwang.urls import url_host

logger = logging.getLogger(__name__)
REDIRECTS = frozenset({301, 302, 303, 307, 308})


def redirect_target(source: str, location: bytes) -> str | None:
    """The url a redirect from `source` to `location` leads to; None when there is none."""
    try:
        target = safe_url_string(location)
        if location.startswith(b"//"):
            target = urlsplit(source).scheme + "://" + target.lstrip("/")
        url = urljoin(source, target)
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            return None
        parts.port  # noqa: B018 - raises ValueError for a port out of range
        url_host(url)
    except ValueError:
        return None
    return url


class BadLocationMiddleware:
    def __init__(self, stats: Any) -> None:
        self.stats = stats
        self.once = OncePerHost(logger)

    @classmethod
    def from_crawler(cls, crawler: Any) -> BadLocationMiddleware:
        return cls(crawler.stats)

    def process_response(self, request: Request, response: Response,
                         spider: Any = None) -> Response:
        location = response.headers.get(b"Location")
        if response.status not in REDIRECTS or location is None or _handled(request, response):
            return response
        if redirect_target(request.url, location) is not None:
            return response
        self.stats.inc_value("tianwang/error/bad_location")
        shown = location[:100].decode("latin-1")
        self.once(request, "bad_location", f"Location: {shown}")
        raise IgnoreRequest(f"bad Location: {shown}")


def _handled(request: Request, response: Response) -> bool:
    """Whether RedirectMiddleware would leave this 3xx alone (the request asked for it)."""
    meta = request.meta
    return bool(meta.get("dont_redirect") or meta.get("handle_httpstatus_all")
                or response.status in meta.get("handle_httpstatus_list", ()))
