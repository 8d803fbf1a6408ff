"""Store each page as a Tianwang record under TIANWANG_DATA_DIR (docs/design.md section 6).

Once a page's record is written it sends tianwang.signals.page_stored: whoever must know
(the Redis scheduler marks the leased request stored) listens, no component is called.

A record is written only while the data directory's file system keeps TIANWANG_MIN_FREE_DISK
bytes free. Below it, or on any write error (a full disk, EIO, a read-only file system), the
page is not stored, tianwang.signals.storage_failed goes out once (the crawl stops; the
schedulers mark nothing done from then on) and every later page is refused too: a page is
never counted stored, nor its request done, unless its record is on disk.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

from scrapy.exceptions import DropItem

from tianwang import signals
from tianwang.config import SettingError, get_bool, get_int, get_nonempty_str
from tianwang.formats import Record, RecordStore, build_http_response, format_date
from tianwang.formats.diskspace import DiskFull, check_free, failure
from tianwang.formats.record import MAX_DATA
from tianwang.formats.store import check_writable
from tianwang.items import PageItem
from tianwang.urls import url_host

logger = logging.getLogger(__name__)


class TianwangStoragePipeline:
    def __init__(self, data_dir: str, compress: bool, max_open: int, level: int,
                 min_free: int = 0) -> None:
        self.data_dir = Path(data_dir)
        self.compress = compress
        self.level = level
        self.max_open = max_open
        self.min_free = min_free
        self.failed: str | None = None  # the one-line reason storing stopped, once it has
        self.store: RecordStore | None = None
        self.stats: Any = None
        self.signals: Any = None
        self.started = 0.0
        self._warned_too_big = False

    @classmethod
    def from_crawler(cls, crawler: Any) -> TianwangStoragePipeline:
        settings = crawler.settings
        pipeline = cls(
            data_dir=get_nonempty_str(settings, "TIANWANG_DATA_DIR"),
            compress=get_bool(settings, "TIANWANG_COMPRESS"),
            max_open=get_int(settings, "TIANWANG_MAX_OPEN_FILES", minimum=1),
            level=get_int(settings, "TIANWANG_COMPRESS_LEVEL", minimum=1, maximum=9),
            min_free=get_int(settings, "TIANWANG_MIN_FREE_DISK", minimum=0),
        )
        pipeline.stats = crawler.stats
        pipeline.signals = crawler.signals
        # Made here, while the crawler is built: a refusal in open_spider would come after
        # Scrapy has begun opening the spider, with tracebacks of its own closing steps.
        try:
            pipeline.data_dir.mkdir(parents=True, exist_ok=True)
            check_writable(pipeline.data_dir)  # one that exists may still not be writable
        except OSError as exc:
            raise SettingError(
                "TIANWANG_DATA_DIR", str(pipeline.data_dir),
                f"a writable directory ({exc.strerror})"
            ) from None
        try:
            check_free(pipeline.data_dir, pipeline.min_free)
        except DiskFull as full:
            raise SettingError("TIANWANG_DATA_DIR", str(pipeline.data_dir),
                               f"a file system with room ({full.strerror})") from None
        return pipeline

    def open_spider(self) -> None:
        self.store = RecordStore(self.data_dir, compress=self.compress, max_open=self.max_open,
                                 level=self.level, min_free=self.min_free)
        self.started = time.monotonic()

    def process_item(self, item: Any) -> Any:
        if isinstance(item, PageItem):
            self._store(item)
        return item

    def close_spider(self) -> None:
        if self.store is None:
            return
        self.store.close()
        elapsed = max(time.monotonic() - self.started, 1e-9)
        self.stats.set_value("tianwang/storage/hosts", len(self.store.hosts))
        self.stats.set_value("tianwang/storage/bytes_on_disk", self.store.bytes_written)
        logger.info(
            "stored %d pages from %d hosts, %d bytes on disk, %.1f pages/s, in %s",
            self.store.records,
            len(self.store.hosts),
            self.store.bytes_written,
            self.store.records / elapsed,
            self.data_dir,
        )

    def _store(self, item: PageItem) -> None:
        assert self.store is not None
        record = to_record(item)
        if len(record.data) > MAX_DATA:
            # Readers refuse a record over their limit as damage: better not stored at all.
            self.stats.inc_value("tianwang/storage/too_big")
            if not self._warned_too_big:
                self._warned_too_big = True
                logger.warning("%s: %d bytes with its headers, over the %d a record may hold; "
                               "not stored (counted in tianwang/storage/too_big)",
                               item.url, len(record.data), MAX_DATA)
            raise DropItem(f"over the record limit of {MAX_DATA} bytes", log_level="DEBUG")
        if self.failed is not None:
            self.stats.inc_value("tianwang/storage/not_stored")
            raise DropItem(f"not stored: {self.failed}", log_level="DEBUG")
        try:
            self.store.write(url_host(item.url), record)
        except OSError as exc:
            self._failed(exc)
            raise DropItem(f"not stored: {self.failed}", log_level="DEBUG") from None
        self.stats.inc_value("tianwang/storage/records")
        self.stats.inc_value("tianwang/storage/body_bytes", len(item.body))
        self.signals.send_catch_log(signals.page_stored, item=item)


    def _failed(self, error: OSError) -> None:
        """Storing stops for good: counted, said once by signal (the crawl stops)."""
        said = failure(error, "record")
        self.failed = said["message"]
        self.stats.inc_value(f"tianwang/storage/failed/{said['reason']}")
        self.stats.inc_value("tianwang/storage/not_stored")
        self.signals.send_catch_log(signals.storage_failed, **said)


def to_record(item: PageItem) -> Record:
    data = build_http_response(item.status, item.headers, item.body, item.protocol)
    return Record(
        url=item.url,
        data=data,
        date=format_date(item.fetched_at),
        ip=item.ip,
        origin=item.requested_url if item.requested_url != item.url else None,
    )
