"""The root logger's level while a crawl runs: the lowest level a handler writes (unit), and
a real crawl's log at DEBUG and at INFO (nothing a handler writes is lost)."""

from __future__ import annotations

import io
import logging
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.conftest import TestWeb, scrapy_crawl
from tianwang.extensions.loglevel import LogLevels, lowest_handler_level, raise_levels
from tianwang.formats.store import iter_tree


def _logger(name: str, *levels: int) -> logging.Logger:
    logger = logging.Logger(name)  # not registered: the test's own
    for level in levels:
        handler = logging.StreamHandler(io.StringIO())
        handler.setLevel(level)
        logger.addHandler(handler)
    return logger


def test_the_lowest_level_of_any_handler_of_any_logger() -> None:
    root, child = _logger("root", logging.INFO), _logger("child", logging.DEBUG)
    assert lowest_handler_level([root]) == logging.INFO
    assert lowest_handler_level([root, child]) == logging.DEBUG  # a logger's own counts too


def test_a_handler_of_no_level_keeps_every_record() -> None:
    root = _logger("root", logging.WARNING, logging.NOTSET)
    assert lowest_handler_level([root]) == logging.NOTSET


def test_a_null_handler_writes_nothing_and_does_not_count() -> None:
    library = logging.Logger("library")
    library.addHandler(logging.NullHandler())
    assert lowest_handler_level([_logger("root", logging.WARNING), library]) == logging.WARNING


@contextmanager
def root_handled_at(level: int) -> Iterator[None]:
    """The root logger with one handler, of `level` (pytest's own taken off meanwhile)."""
    root = logging.root
    saved, saved_level = root.handlers[:], root.level
    root.handlers[:] = _logger("root", level).handlers
    try:
        yield
    finally:
        root.handlers[:] = saved
        root.setLevel(saved_level)


def test_loggers_below_the_lowest_handler_level_are_raised_to_it() -> None:
    scrapy, quiet, plain = (_logger("scrapy"), _logger("quiet"), _logger("plain"))
    scrapy.setLevel(logging.DEBUG)  # as Scrapy sets its own
    quiet.setLevel(logging.ERROR)
    with root_handled_at(logging.INFO):
        root = logging.root
        root.setLevel(logging.NOTSET)
        before = raise_levels([root, scrapy, quiet, plain])
        assert before == {root: logging.NOTSET, scrapy: logging.DEBUG}
        assert (root.level, scrapy.level, quiet.level, plain.level) == (
            logging.INFO, logging.INFO, logging.ERROR, logging.NOTSET)


def test_the_root_level_is_set_while_the_crawl_runs_and_put_back() -> None:
    scrapy_level = logging.getLogger("scrapy").level
    with root_handled_at(logging.INFO):
        logging.root.setLevel(logging.NOTSET)
        extension = LogLevels()
        extension.engine_started()
        assert logging.root.level == logging.INFO
        engine = logging.getLogger("scrapy.core.engine")
        assert not engine.isEnabledFor(logging.DEBUG)
        assert engine.isEnabledFor(logging.INFO)
        extension.engine_stopped()
        assert logging.root.level == logging.NOTSET
        assert logging.getLogger("scrapy").level == scrapy_level


def test_a_level_above_the_handlers_is_left_alone() -> None:
    with root_handled_at(logging.INFO):
        logging.root.setLevel(logging.ERROR)
        extension = LogLevels()
        extension.engine_started()
        assert logging.root.level == logging.ERROR
        extension.engine_stopped()
        assert logging.root.level == logging.ERROR


def _crawl(testweb: TestWeb, tmp_path: Path, level: str) -> tuple[str, int]:
    homes = sorted(url for url, page in testweb.truth.items() if page["kind"] == "home")[:4]
    data = tmp_path / level / "data"
    result = scrapy_crawl("site", {"seeds": ",".join(homes)},
                          {"TIANWANG_DATA_DIR": str(data), "TIANWANG_PROXY": testweb.address,
                           "TIANWANG_MAX_LEVELS": "2", "LOG_LEVEL": level,
                           "DOWNLOAD_DELAY": "0"},
                          cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stderr, sum(1 for _ in iter_tree(data))


def test_a_crawl_writes_its_debug_lines_at_debug_and_its_info_lines_at_info(
        testweb: TestWeb, tmp_path: Path) -> None:
    debug, stored = _crawl(testweb, tmp_path, "DEBUG")
    crawled = re.findall(r"\[scrapy\.core\.engine\] DEBUG: Crawled \(200\)", debug)
    assert stored > 4 and len(crawled) >= stored  # a line for every page (and robots.txt)
    info, stored_at_info = _crawl(testweb, tmp_path, "INFO")
    assert stored_at_info == stored
    assert " DEBUG: " not in info
    assert "[scrapy.core.engine] INFO: Spider opened" in info
    assert "[scrapy.statscollectors] INFO: Dumping Scrapy stats" in info
