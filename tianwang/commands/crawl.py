"""`scrapy crawl`, with a start-up refusal as one line and an exit status that says whether
the crawl did its job (tianwang/outcome.py).

Scrapy runs a crawl as an asyncio task nobody awaits: an error raised while the crawler is
built (a bad setting read in a component's from_crawler, a seed file that cannot be read)
is logged by asyncio as "Task exception was never retrieved" with its traceback, and the
command exits 1. Here the task's error is taken: a refusal (StartupError) is one line and
status 2; anything else is a bug, and keeps its traceback.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from typing import Any

from scrapy.commands.crawl import Command as ScrapyCrawl
from scrapy.exceptions import UsageError
from twisted.internet.defer import Deferred
from twisted.python.failure import Failure

import tianwang.default_settings as defaults
from tianwang.config import get_int
from tianwang.distributed import processes
from tianwang.errors import StartupError
from tianwang.outcome import REFUSED, outcome

logger = logging.getLogger(__name__)
STORAGE = "tianwang.pipelines.storage.TianwangStoragePipeline"


class Command(ScrapyCrawl):
    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if len(args) != 1:
            raise UsageError("give one spider: scrapy crawl site -a seeds=FILE")
        assert self.crawler_process
        try:
            count = _process_count(self.settings)
            if count > 1:
                self.exitcode = processes.run(_plan(self.settings, args[0], count))
                return
        except StartupError as error:
            self.exitcode = _report_error(error, to_log=bool(self.settings.get("LOG_FILE")))
            return
        crawler = self._create_crawler(args[0])
        errors: list[BaseException] = []
        _collect_error(self.crawler_process.crawl(crawler, **opts.spargs), errors)
        self.crawler_process.start()
        if errors:
            self.exitcode = _report_error(errors[0], to_log=bool(self.settings.get("LOG_FILE")))
        elif crawler.stats is not None and getattr(crawler, "spider", None) is not None:
            result = outcome(crawler.stats.get_stats(), _storing(crawler.settings))
            if processes.is_child():  # one of N: the supervisor says how the crawl went
                logger.info("this process: %s", result.line)
            else:
                (logger.info if result.status == 0 else logger.error)(result.line)
            self.exitcode = result.status
        elif self.crawler_process.bootstrap_failed:
            self.exitcode = 1


def _process_count(settings: Any) -> int:
    """TIANWANG_PROCESSES, read before any crawler exists (the add-on sets its default then)."""
    if settings.get("TIANWANG_PROCESSES") is None:
        return defaults.TIANWANG_PROCESSES
    count = get_int(settings, "TIANWANG_PROCESSES", minimum=1, maximum=1024)
    if count > 1 and settings.getdict("FEEDS"):
        raise StartupError(f"a feed export (-o, FEEDS) and TIANWANG_PROCESSES={count} do not "
                           "go together: every process would write the same file")
    return count


def _plan(settings: Any, spider: str, count: int) -> processes.Plan:
    return processes.Plan(
        count=count,
        command=_own_command_line(),
        job=settings.get("TIANWANG_REDIS_JOB") or spider,
        redis_url=settings.get("TIANWANG_REDIS_URL") or "",
        jobdir=settings.get("JOBDIR") or "",
        data_dir=settings.get("TIANWANG_DATA_DIR") or defaults.TIANWANG_DATA_DIR,
        log_format=settings.get("LOG_FORMAT"),
        metrics_port=_metrics_port(settings, count),
    )


def _metrics_port(settings: Any, count: int) -> int:
    """TIANWANG_METRICS_PORT, the first of the count processes' ports (0: off)."""
    if settings.get("TIANWANG_METRICS_PORT") is None:
        return defaults.TIANWANG_METRICS_PORT
    return get_int(settings, "TIANWANG_METRICS_PORT", minimum=0, maximum=65536 - count)


def _own_command_line() -> list[str]:
    """This command as it was started (`scrapy crawl`, `python -m scrapy crawl`, scrapyd's
    runner), for each process to run: sys.orig_argv keeps the interpreter's own options."""
    return [sys.executable, *sys.orig_argv[1:]]


def _collect_error(started: Any, errors: list[BaseException]) -> None:
    """Take the crawl's error, so asyncio (or Twisted) does not log it as unhandled."""
    if isinstance(started, asyncio.Future):
        def done(task: asyncio.Future) -> None:
            if not task.cancelled() and task.exception() is not None:
                errors.append(task.exception())
        started.add_done_callback(done)
    elif isinstance(started, Deferred):
        def failed(failure: Failure) -> None:
            errors.append(failure.value)
        started.addErrback(failed)


def _report_error(error: BaseException, to_log: bool) -> int:
    if isinstance(error, StartupError) and not processes.says_refusals():
        return REFUSED  # one of N processes: the first says it
    if isinstance(error, StartupError):
        print(f"tianwang: error: {error}", file=sys.stderr)
        if to_log:  # a scrapyd job: its log file is where its user looks
            logger.error("tianwang: error: %s", error)
        return REFUSED
    logger.error("the crawl stopped on an error", exc_info=(type(error), error,
                                                            error.__traceback__))
    return 1


def _storing(settings: Any) -> bool:
    pipelines = settings.getdict("ITEM_PIPELINES")
    return any(_name(path) == STORAGE and order is not None for path, order in pipelines.items())


def _name(path: Any) -> str:
    return path if isinstance(path, str) else f"{path.__module__}.{path.__qualname__}"
