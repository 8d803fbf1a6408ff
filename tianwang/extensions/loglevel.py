"""Log records no handler would write are not made.

Scrapy sets the root logger to NOTSET and leaves LOG_LEVEL to its handler, so each page's
DEBUG lines ("Crawled (200)", "Scraped from") are made into records and then dropped by the
handler: 2.6% of a crawl's CPU at LOG_LEVEL INFO (py-spy, the test web). While the crawl
runs, this extension sets the root logger's level to the lowest level a handler writes, so
no line any handler would write is lost: a handler of level NOTSET (pytest's capture, a
user's own) keeps every record. The level is put back when the crawl closes.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING

from scrapy import signals

if TYPE_CHECKING:
    from scrapy.crawler import Crawler


def all_loggers() -> list[logging.Logger]:
    return [logging.root, *(item for item in logging.Logger.manager.loggerDict.values()
                            if isinstance(item, logging.Logger))]


def lowest_handler_level(loggers: Iterable[logging.Logger]) -> int:
    """The lowest level any handler of the loggers writes (NOTSET, 0: every record). A
    library's NullHandler (charset_normalizer's) writes nothing."""
    levels = [handler.level for logger in loggers for handler in logger.handlers
              if not isinstance(handler, logging.NullHandler)]
    return min(levels, default=logging.NOTSET)


class RootLogLevel:
    def __init__(self) -> None:
        self.before: int | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> RootLogLevel:
        extension = cls()
        crawler.signals.connect(extension.engine_started, signal=signals.engine_started)
        crawler.signals.connect(extension.engine_stopped, signal=signals.engine_stopped)
        return extension

    def engine_started(self) -> None:
        root = logging.root
        if root.level == logging.NOTSET:
            self.before = root.level
            root.setLevel(lowest_handler_level(all_loggers()))

    def engine_stopped(self) -> None:
        if self.before is not None:
            logging.root.setLevel(self.before)
            self.before = None
