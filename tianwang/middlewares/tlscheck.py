"""Count and log the certificate problems the https handler found (tianwang/tlshandler.py).

A page is fetched whatever its host's certificate; its response then carries a flag
`tls:<reason>` (expired, not_yet_valid, self_signed, wrong_name, unknown_ca, invalid) for
each problem. This middleware counts each (host, reason) once in `tianwang/tls/<reason>`
(hosts, not pages) and `tianwang/tls/responses` the responses fetched despite one, and logs a
host's problem once. The handler's settings (TIANWANG_CA_FILE, TIANWANG_TLS_CHECK) are
checked as the crawl starts by tianwang.extensions.handlercheck.
"""

from __future__ import annotations

import logging
from typing import Any
from urllib.parse import urlsplit

from scrapy import Request
from scrapy.http import Response

from tianwang.tlshandler import FLAG, MAX_HOSTS

logger = logging.getLogger(__name__)


class TLSCheckMiddleware:
    def __init__(self, stats: Any) -> None:
        self.stats = stats
        self._seen: set[tuple[str, str]] = set()

    @classmethod
    def from_crawler(cls, crawler: Any) -> TLSCheckMiddleware:
        return cls(crawler.stats)

    def process_response(self, request: Request, response: Response) -> Response:
        reasons = [flag[len(FLAG):] for flag in response.flags if flag.startswith(FLAG)]
        if not reasons:
            return response
        self.stats.inc_value("tianwang/tls/responses")
        host = urlsplit(response.url).hostname or ""
        for reason in reasons:
            if (host, reason) in self._seen:
                continue
            if len(self._seen) >= MAX_HOSTS:
                self._seen.clear()  # rather a second count of a host than unbounded memory
            self._seen.add((host, reason))
            self.stats.inc_value(f"tianwang/tls/{reason}")
            logger.warning("Certificate of %s: %s; fetching its pages anyway (first for this "
                           "host)", host, reason)
        return response
