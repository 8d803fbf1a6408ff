"""A test-only downloader middleware: one JSON line per request sent, with its boost.

The topical boost lives in request.meta, which neither the server nor the records see; this
writes what each request carried (and its Referer: the page it was made from) to the file
named by the BOOST_LOG_FILE setting.
"""

from __future__ import annotations

import json
from typing import IO, Any

from scrapy import Request, signals


class BoostLogMiddleware:
    def __init__(self, path: str) -> None:
        self.file: IO[str] = open(path, "a", encoding="utf-8")  # closed at spider_closed

    @classmethod
    def from_crawler(cls, crawler: Any) -> BoostLogMiddleware:
        middleware = cls(crawler.settings["BOOST_LOG_FILE"])
        crawler.signals.connect(middleware.close, signal=signals.spider_closed)
        return middleware

    def process_request(self, request: Request) -> None:
        referer = request.headers.get(b"Referer")
        line = {
            "url": request.url,
            "referer": referer.decode("latin-1") if referer else None,
            "boost": request.meta.get("tianwang_boost"),
        }
        self.file.write(json.dumps(line) + "\n")

    def close(self) -> None:
        self.file.close()
