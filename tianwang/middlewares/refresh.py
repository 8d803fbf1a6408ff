"""A `<meta http-equiv="refresh">` to a url no request can be made of is ignored, not an error.

Scrapy's MetaRefreshMiddleware means to pass a page on as it is when its refresh leads to a
scheme it cannot fetch, but `url=javascript:alert(1)` fails before that check (no request
can be built of it) and a port out of range or `http://[bad/` fails in the refresh parser:
each an ERROR traceback, the page lost. This middleware takes its place (580) and does
what a browser does with such a refresh: nothing. The page goes on to the spider as a
page, counted as tianwang/urls/bad_refresh and logged once per host; any other refresh is
Scrapy's (METAREFRESH_* settings).
"""

from __future__ import annotations

import logging
from typing import Any

from scrapy import Request
from scrapy.downloadermiddlewares.redirect import MetaRefreshMiddleware
from scrapy.http import HtmlResponse, Response
from scrapy.settings import BaseSettings
from scrapy.utils.httpobj import urlparse_cached
from scrapy.utils.response import get_meta_refresh

from tianwang.markup import may_refresh
from tianwang.middlewares.failures import OncePerHost
from tianwang.middlewares.location import redirect_target

logger = logging.getLogger(__name__)


class CheckedMetaRefreshMiddleware(MetaRefreshMiddleware):
    def __init__(self, settings: BaseSettings) -> None:
        super().__init__(settings)
        self.ignore_tags = settings.getlist("METAREFRESH_IGNORE_TAGS")
        self.stats: Any = None
        self.once = OncePerHost(logger)

    @classmethod
    def from_crawler(cls, crawler: Any) -> CheckedMetaRefreshMiddleware:
        middleware = super().from_crawler(crawler)
        middleware.stats = crawler.stats
        return middleware

    def process_response(self, request: Request, response: Response,
                         spider: Any = None) -> Request | Response:
        if (request.meta.get("dont_redirect") or request.method == "HEAD"
                or not isinstance(response, HtmlResponse)
                or urlparse_cached(request).scheme not in ("http", "https")
                or not may_refresh(response)):
            return response
        try:
            _interval, url = get_meta_refresh(response, ignore_tags=self.ignore_tags)
        except ValueError as error:  # a port out of range, a broken IPv6 host
            return self._ignored(request, response, str(error))
        if not url:
            return response
        if redirect_target(response.url, url.encode("utf-8")) is None:
            return self._ignored(request, response, url[:100])
        return super().process_response(request, response)

    def _ignored(self, request: Request, response: Response, detail: str) -> Response:
        self.stats.inc_value("tianwang/urls/bad_refresh")
        self.once(request, "bad_refresh", f"meta refresh to {detail}; the page kept as it is")
        return response
