"""Change statistics: every visit of every url goes to the visit history (docs/design.md 8).

Runs before the dedup pipeline, on pages (PageItem) and on revisits answered 304
(NotModifiedItem, which nothing else sees). A visit's time is the response's Date header,
the crawler's clock only when there is none. A page is split into blocks
(tianwang/analysis/blocks.py) and changed when its content blocks' hash differs from the
previous visit's, so a rotating ad is not a change; a 304 is an unchanged visit. Whether the
page is an entry page is decided again at each visit from its in-host content and navigation
links. A page visited before whose content did not change is not stored again (dropped
here, at DEBUG); a changed one goes on to be stored as a new record.
"""

from __future__ import annotations

import hashlib
import logging
from datetime import UTC
from typing import Any

from scrapy.exceptions import DropItem, NotConfigured

from tianwang import signals as tw_signals
from tianwang.analysis.blocks import block_links, content_hash, segment
from tianwang.analysis.entry import in_host_links, is_entry, new_link_share
from tianwang.config import SettingError, get_bool, get_int, get_nonempty_str, get_share
from tianwang.formats.diskspace import WriteError, describe, failure
from tianwang.formats.history import HistoryStore, Visit
from tianwang.httpheaders import charset, header, media_type, visit_time
from tianwang.items import NotModifiedItem, PageItem, SitemapLastmodItem

logger = logging.getLogger(__name__)


class ChangeStatsPipeline:
    def __init__(self, data_dir: str, min_links: int, min_share: float) -> None:
        self.data_dir, self.min_links, self.min_share = data_dir, min_links, min_share
        self.store: HistoryStore | None = None
        self.stats: Any = None
        self.signals: Any = None
        self.failed = False  # the history could not be written: no page is stored since

    @classmethod
    def from_crawler(cls, crawler: Any) -> ChangeStatsPipeline:
        settings = crawler.settings
        if not get_bool(settings, "TIANWANG_CHANGES"):
            raise NotConfigured
        pipeline = cls(get_nonempty_str(settings, "TIANWANG_DATA_DIR"),
                       get_int(settings, "TIANWANG_ENTRY_MIN_LINKS", minimum=1),
                       get_share(settings, "TIANWANG_ENTRY_NEW_SHARE"))
        pipeline.stats, pipeline.signals = crawler.stats, crawler.signals
        # Opened once here, while the crawler is built (as the storage pipeline checks its
        # directory): a refusal in open_spider would come after Scrapy has begun opening
        # the spider, with tracebacks of its own closing steps. A damaged history is refused
        # (HistoryDamaged), never replaced: nothing else holds what it holds.
        pipeline.open_spider()
        pipeline.close_spider()
        return pipeline

    def open_spider(self) -> None:
        try:
            self.store = HistoryStore(self.data_dir)
        except OSError as exc:
            raise SettingError("TIANWANG_DATA_DIR", self.data_dir,
                               f"a writable directory ({exc.strerror})") from None

    def close_spider(self) -> None:
        store, self.store = self.store, None
        if store is not None:
            try:
                store.close()
            except WriteError as error:
                logger.error("%s", describe(error, "visit history"))

    def process_item(self, item: Any) -> Any:
        if self.failed:
            raise DropItem("not stored: the visit history could not be written",
                           log_level="DEBUG")
        try:
            return self._record(item)
        except WriteError as error:  # a full disk: the crawl stops, this page is not stored
            self.failed = True
            self.signals.send_catch_log(tw_signals.storage_failed,
                                        **failure(error, "visit history"))
            raise DropItem("not stored: the visit history could not be written",
                           log_level="DEBUG") from None

    def _record(self, item: Any) -> Any:
        if isinstance(item, NotModifiedItem):
            self._not_modified(item)
            raise DropItem("not modified", log_level="DEBUG")  # nothing to store
        if isinstance(item, PageItem):
            return self._page(item)
        if isinstance(item, SitemapLastmodItem):
            self._lastmod(item)
            raise DropItem("sitemap lastmod recorded", log_level="DEBUG")  # nothing to store
        return item

    def _lastmod(self, item: SitemapLastmodItem) -> None:
        assert self.store is not None
        when = w3c_datetime(item.lastmod)
        if when is None:
            self.stats.inc_value("tianwang/changes/bad_lastmod")
            return
        self.store.set_lastmod(item.url, when)
        self.stats.inc_value("tianwang/changes/sitemap_lastmods")

    def _page(self, item: PageItem) -> PageItem:
        assert self.store is not None
        previous = self.store.page(item.url)
        html = media_type(item.headers) == "text/html"
        if html:
            blocks = segment(item.body, charset(item.headers))
            digest, links = content_hash(blocks), block_links(blocks, item.url)
        else:
            digest, links = hashlib.md5(item.body).hexdigest(), []
        links = in_host_links(item.url, links)
        share = new_link_share(links, previous.links if previous else None)
        changed = previous is not None and previous.content_hash != digest
        visit = Visit(item.url, visit_time(item.headers, item.fetched_at), item.status,
                      hashlib.md5(item.body).hexdigest(), digest,
                      header(item.headers, b"ETag"), header(item.headers, b"Last-Modified"),
                      changed, is_entry(item.url, share, len(links), self.min_links,
                                        self.min_share), share)
        self.store.add(visit, links)
        self.stats.inc_value("tianwang/changes/visits")
        if previous is None:
            return item
        self.stats.inc_value(f"tianwang/changes/{'changed' if changed else 'unchanged'}")
        if not changed:
            raise DropItem("content unchanged since the last visit", log_level="DEBUG")
        return item

    def _not_modified(self, item: NotModifiedItem) -> None:
        assert self.store is not None
        previous = self.store.page(item.url)
        links = previous.links if previous else ()
        share = 0.0 if previous else None
        visit = Visit(item.url, visit_time(item.headers, item.fetched_at), 304,
                      previous.md5 if previous else None,
                      previous.content_hash if previous else None,
                      header(item.headers, b"ETag") or (previous.etag if previous else None),
                      header(item.headers, b"Last-Modified")
                      or (previous.last_modified if previous else None),
                      False, is_entry(item.url, share, len(links), self.min_links,
                                      self.min_share), share)
        self.store.add(visit, None)
        self.stats.inc_value("tianwang/changes/visits")
        self.stats.inc_value("tianwang/changes/not_modified")


def w3c_datetime(value: str) -> float | None:
    """A sitemap's lastmod (W3C datetime: 2026-11-01, or with a time and zone) as epoch
    seconds, UTC when no zone is given; None if it is none of those."""
    from datetime import datetime

    text = value.strip().replace("Z", "+00:00")
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return when.timestamp()
