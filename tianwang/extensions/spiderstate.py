"""Scrapy's SpiderState (spider.state kept under JOBDIR), safe on a full disk.

Scrapy's writes the file in place, so a full disk leaves it cut short: a traceback then, and
another when the job resumes and cannot read it. Here the state is written beside the file
and renamed over it (the last whole state stays), a failed write is one line, and a file
that cannot be read starts the spider with an empty state, saying so.
"""

from __future__ import annotations

import logging
import pickle
from pathlib import Path
from typing import Any

from scrapy.extensions.spiderstate import SpiderState as ScrapySpiderState

from tianwang.formats.atomic import write_atomic
from tianwang.formats.diskspace import describe

logger = logging.getLogger(__name__)


class SpiderState(ScrapySpiderState):
    def spider_closed(self, spider: Any) -> None:
        try:
            write_atomic(Path(self.statefn), pickle.dumps(spider.state, protocol=4))
        except OSError as error:
            logger.error("%s", describe(error, "spider state"))

    def spider_opened(self, spider: Any) -> None:
        try:
            super().spider_opened(spider)
        except (OSError, EOFError, pickle.UnpicklingError) as error:
            logger.warning("spider state %s unreadable (%s): starting with an empty one",
                           self.statefn, error)
            spider.state = {}
