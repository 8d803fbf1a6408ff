"""Send every request through one HTTP proxy named by a setting.

Scrapy's HttpProxyMiddleware already honours the http_proxy variable; this lets a project
or a command line (-s TIANWANG_PROXY=...) name the proxy instead, e.g. the test web.
"""

from __future__ import annotations

from typing import Any

from scrapy import Request

from tianwang.config import get_proxy_url


class ProxyMiddleware:
    def __init__(self, proxy: str) -> None:
        self.proxy = proxy

    @classmethod
    def from_crawler(cls, crawler: Any) -> ProxyMiddleware:
        return cls(get_proxy_url(crawler.settings, "TIANWANG_PROXY"))

    def process_request(self, request: Request) -> None:
        if self.proxy and "proxy" not in request.meta:
            request.meta["proxy"] = self.proxy
