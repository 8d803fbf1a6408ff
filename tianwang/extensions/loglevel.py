"""Log records no handler would write are not made.

Scrapy leaves LOG_LEVEL to its handler and sets its own logger to DEBUG (the root logger to
NOTSET), so each page's DEBUG lines ("Crawled (200)", "Scraped from") are made into records
and then dropped by the handler: 2.6% of a crawl's CPU at LOG_LEVEL INFO (py-spy, the test
web). While the crawl runs, this extension raises the root logger, and any logger whose own
level is lower, to the lowest level a handler writes: no line any handler would write is
lost (a handler of level NOTSET, such as pytest's capture, keeps every record). The levels
are put back when the crawl closes.
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


def raise_levels(loggers: list[logging.Logger]) -> dict[logging.Logger, int]:
    """Raise the root logger and every logger of a level of its own below the lowest level
    a handler writes to that level; their levels before."""
    lowest = lowest_handler_level(loggers)
    before: dict[logging.Logger, int] = {}
    for logger in loggers:
        if logger.level < lowest and (logger.level or logger is logging.root):
            before[logger] = logger.level
            logger.setLevel(lowest)
    return before


class LogLevels:
    def __init__(self) -> None:
        self.before: dict[logging.Logger, int] = {}

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> LogLevels:
        extension = cls()
        crawler.signals.connect(extension.engine_started, signal=signals.engine_started)
        crawler.signals.connect(extension.engine_stopped, signal=signals.engine_stopped)
        return extension

    def engine_started(self) -> None:
        self.before = raise_levels(all_loggers())

    def engine_stopped(self) -> None:
        for logger, level in self.before.items():
            logger.setLevel(level)
        self.before = {}
