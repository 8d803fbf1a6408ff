"""Online MD5 dedup: a body already stored in the tree is not stored again (docs/design.md 7).

Runs before the storage pipeline. The md5 is of the body as stored (the undecoded bytes of
PageItem.body, which the record's DATA ends with), so it equals what `tianwang dedup` and
the test web's truth compute. A page whose body another url already has is dropped (stats
`tianwang/dedup/duplicates`, logged at DEBUG only) and (md5, its url, the kept url) goes to
`<data dir>/mirrors.tsv`, once per duplicate url. A page fetched again with the body its own
url already has (a rerun into the same tree) is dropped without a mirror line
(`tianwang/dedup/refetched`). Only 2xx pages reach here (Scrapy's HttpErrorMiddleware keeps
404s and 500s from the spider, and the spider stores only TIANWANG_STORE_TYPES), so error
pages, all alike, are never stored nor deduped.

Order against kill -9: a body's md5 enters the index (tianwang/formats/md5store.py) only
after the storage pipeline has written its record, on Scrapy's item_scraped signal: a crash
in between leaves a stored record the index lacks, never an indexed body whose record is
missing (that would drop the page for good on resume). The index catches up on open by
reading the tree past the offsets it has indexed, so the stored-but-not-indexed record is
indexed then, and no later copy of its body is stored. Between the check and the commit, the
md5 waits in memory, so an identical body close behind is dropped too. The offset indexed for
a host's file is its size when the item_scraped signal comes: right as long as items go
through the pipelines one at a time, which they do while every pipeline is synchronous.

An index or mirror table that cannot be written (a full disk) is a storage failure
(tianwang.signals.storage_failed: the crawl stops): the records stay as they are, and the
index catches up with them on the next open.
"""

from __future__ import annotations

import hashlib
import logging
from pathlib import Path
from typing import Any

from scrapy import signals
from scrapy.exceptions import DropItem, NotConfigured

from tianwang import signals as tw_signals
from tianwang.config import SettingError, get_bool, get_nonempty_str
from tianwang.formats.diskspace import WriteError, describe, failure
from tianwang.formats.md5store import MD5Store
from tianwang.formats.store import page_path
from tianwang.items import PageItem
from tianwang.recent import HOSTS_NOTED
from tianwang.urls import url_host

logger = logging.getLogger(__name__)


class MD5DedupPipeline:
    def __init__(self, data_dir: str) -> None:
        self.data_dir = Path(data_dir)
        self.store: MD5Store | None = None
        self.stats: Any = None
        self.signals: Any = None
        self.failed = False  # the index could not be written: it is left as it is
        self._pending: dict[bytes, str] = {}  # md5 -> url: passed the check, not yet stored
        self._inflight: dict[int, bytes] = {}  # id(item) -> md5, for the signals
        self._files: dict[str, tuple[str, Path]] = {}  # host -> its page.dat, named and path

    @classmethod
    def from_crawler(cls, crawler: Any) -> MD5DedupPipeline:
        settings = crawler.settings
        if not get_bool(settings, "TIANWANG_DEDUP"):
            raise NotConfigured  # switched off on purpose: no warning, absent from "Enabled"
        pipeline = cls(get_nonempty_str(settings, "TIANWANG_DATA_DIR"))
        pipeline.stats = crawler.stats
        pipeline.signals = crawler.signals
        crawler.signals.connect(pipeline.item_scraped, signal=signals.item_scraped)
        crawler.signals.connect(pipeline.item_failed, signal=signals.item_error)
        crawler.signals.connect(pipeline.item_failed, signal=signals.item_dropped)
        return pipeline

    def open_spider(self) -> None:
        try:
            self.store = MD5Store(self.data_dir)
        except OSError as exc:
            raise SettingError(
                "TIANWANG_DATA_DIR", str(self.data_dir), f"a writable directory ({exc.strerror})"
            ) from None
        if self.store.caught_up:
            self.stats.set_value("tianwang/dedup/caught_up", self.store.caught_up)

    def close_spider(self) -> None:
        if self.store is not None:
            try:
                self.store.close()
            except WriteError as error:  # caught up with the records on the next open
                logger.error("%s", describe(error, "MD5 index"))

    def process_item(self, item: Any) -> Any:
        if not isinstance(item, PageItem):
            return item
        assert self.store is not None
        md5 = hashlib.md5(item.body).digest()
        kept = self._pending.get(md5) or self.store.kept(md5)
        if kept is None:
            self._pending[md5] = item.url
            self._inflight[id(item)] = md5
            return item
        if kept == item.url:
            self.stats.inc_value("tianwang/dedup/refetched")
        else:
            self.stats.inc_value("tianwang/dedup/duplicates")
            self._write(self.store.add_mirror, md5, item.url, kept)
        # DEBUG, not Scrapy's default WARNING: a mirror is normal, not a problem per page.
        raise DropItem(f"same body as {kept}", log_level="DEBUG")

    def item_scraped(self, item: Any, **_: Any) -> None:
        """The item passed every pipeline: its record is stored, its md5 can be indexed."""
        md5 = self._inflight.pop(id(item), None)
        if md5 is not None:
            self._commit(item, md5)

    def item_failed(self, item: Any, **_: Any) -> None:
        """A later pipeline failed or dropped the item: index it only if its record is there."""
        md5 = self._inflight.pop(id(item), None)
        if md5 is None:
            return  # not ours, or dropped here as a duplicate
        name, path = self._file(item.url)
        assert self.store is not None
        if _stat(path)[0] > self.store.indexed_end(name):
            self._commit(item, md5)
        else:
            self._pending.pop(md5, None)

    def _commit(self, item: PageItem, md5: bytes) -> None:
        assert self.store is not None
        self._pending.pop(md5, None)
        name, path = self._file(item.url)
        # The mtime comes with the size from one stat: the index tells by it, on open, a
        # file changed since (by a crash or in place) from one it knows.
        self._write(self.store.add, md5, item.url, name, *_stat(path))

    def _write(self, write: Any, *args: Any) -> None:
        """An index write; a failure stops the crawl (once) and the index is left alone."""
        if self.failed:
            return
        try:
            write(*args)
        except WriteError as error:
            self.failed = True
            self.signals.send_catch_log(tw_signals.storage_failed,
                                        **failure(error, "MD5 index"))

    def _file(self, url: str) -> tuple[str, Path]:
        host = url_host(url)
        found = self._files.get(host)
        if found is None:
            if len(self._files) >= HOSTS_NOTED:  # a cache, not a record: a month meets millions
                self._files.clear()
            path = page_path(self.data_dir, host)
            found = self._files[host] = (path.relative_to(self.data_dir).as_posix(), path)
        return found


def _stat(path: Path) -> tuple[int, int]:
    """The file's size and mtime in ns; (0, -1) if there is no file."""
    try:
        stat = path.stat()
    except FileNotFoundError:
        return 0, -1
    return stat.st_size, stat.st_mtime_ns
