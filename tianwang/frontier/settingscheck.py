"""Check the scheduler's settings as the crawl starts (an extension).

Scrapy builds the scheduler only when the engine opens, and an error there is followed by a
second traceback ("Engine slot not assigned") that buries the first. Extensions are built
before the engine, so a bad setting stops the crawl here with one clear message. What is
checked is the SCHEDULER's own business (FrontierSchedulerBase.check_settings: the
frontier's settings, and for the Redis scheduler its Redis).
"""

from __future__ import annotations

from typing import Any

from scrapy.exceptions import NotConfigured
from scrapy.utils.misc import load_object

from tianwang.frontier.scheduler import FrontierSchedulerBase


class FrontierSettingsCheck:
    @classmethod
    def from_crawler(cls, crawler: Any) -> FrontierSettingsCheck:
        scheduler = load_object(crawler.settings["SCHEDULER"])
        # Not issubclass: Scrapy's BaseScheduler metaclass calls any class with a
        # scheduler's methods a subclass, Scrapy's own Scheduler included.
        if FrontierSchedulerBase in getattr(scheduler, "__mro__", ()):
            scheduler.check_settings(crawler.settings, getattr(crawler.spidercls, "name", "") or "")
        # Nothing more to do during the crawl; no message, which Scrapy would log as a warning.
        raise NotConfigured
