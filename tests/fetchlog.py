"""What a crawl sent to the web, written by the crawl itself, beside what the web served.

The test web's access log counts what reached the server; FetchLog counts what the crawl
sent. They differ by one kind of request: Twisted's connection pool resends a GET once when
the kept-alive connection it went out on turns out closed before any answer (retryAutomatically,
below Scrapy, RFC 9112 9.3.1), so the server may log a url twice for the crawl's one request.
Tests that count fetches count the crawl's own log and check the server's against it.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

from scrapy import signals

import tianwang.default_settings as defaults


class FetchLog:
    """Writes each url this crawl sends to the web, one a line, to the FETCH_LOG file."""

    def __init__(self, path: str) -> None:
        self.file = open(path, "a", encoding="utf-8")  # noqa: SIM115 - closed at spider close

    @classmethod
    def from_crawler(cls, crawler):
        extension = cls(crawler.settings["FETCH_LOG"])
        crawler.signals.connect(extension.reached, signal=signals.request_reached_downloader)
        crawler.signals.connect(extension.closed, signal=signals.spider_closed)
        return extension

    def reached(self, request) -> None:
        self.file.write(request.url + "\n")
        self.file.flush()

    def closed(self) -> None:
        self.file.close()


def fetch_log_settings(path: Path) -> dict[str, str]:
    """The settings that make a crawl write the urls it sends to `path`: the stack's own
    extensions and FetchLog (EXTENSIONS on the command line replaces the stack's dict)."""
    extensions = {**defaults.EXTENSIONS, f"{__name__}.FetchLog": 0}
    return {"EXTENSIONS": json.dumps(extensions), "FETCH_LOG": str(path)}


def read_fetch_log(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").split()


def served_beyond_sent(served: Iterable[str], sent: Iterable[str]) -> dict[str, int]:
    """url -> times the web served it beyond the crawl's sending, where that is more than one
    resend or the url was never sent: empty when the server served each url the crawl sent at
    most once more (a pooled connection's resend). Served fewer times is not counted: a
    request sent by a crawl killed meanwhile may never reach the server."""
    served_count, sent_count = Counter(served), Counter(sent)
    beyond = {}
    for url, n in served_count.items():
        times = sent_count[url]
        if not times or n > times + 1:
            beyond[url] = n - times
    return beyond
