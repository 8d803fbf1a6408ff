"""The link graph: each stored page's out-links and parent, beside its host's records.

One line per stored page in `<data dir>/data_<k>/<host>/links.tsv` (tianwang/formats/
linkgraph.py): its url, its parent and its out-links as the spider extracted them (absolute,
fragment removed, percent-encoded by safe_url: the canonical form every other part of the
crawl uses). The parent (PageItem.parent) is the page whose link led the crawler here, ""
for a seed: the request's Referer, except after a redirect, where Scrapy sends the redirecting
url as Referer; the spider carries the parent in the request's meta, which survives redirects,
so a redirected page's parent is the page that linked the url that redirected to it.

Runs after the storage pipeline, so a line is written only for a page whose record was
stored: a kill between the two leaves a stored page without a line (its out-links are
missing from the graph), never a line without a record. A page the dedup pipeline dropped
gets no line: its body, hence its out-links, are the kept page's, which has its own line;
links to the duplicate's url still count in other pages' lines, and mirrors.tsv maps the
duplicate to the kept url.

A line that cannot be written (a full disk) is a storage failure: the crawl stops (the
page's record, written before, stays; its line is missing from the graph).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from scrapy.exceptions import NotConfigured

from tianwang import signals as tw_signals
from tianwang.config import get_bool, get_int, get_nonempty_str
from tianwang.formats.diskspace import WriteError, describe, failure
from tianwang.formats.linksfile import LinkGraphWriter
from tianwang.items import PageItem
from tianwang.urls import url_host

logger = logging.getLogger(__name__)


class LinkGraphPipeline:
    def __init__(self, data_dir: str, max_open: int) -> None:
        self.data_dir = Path(data_dir)
        self.max_open = max_open
        self.writer: LinkGraphWriter | None = None
        self.stats: Any = None
        self.signals: Any = None
        self.failed = False

    @classmethod
    def from_crawler(cls, crawler: Any) -> LinkGraphPipeline:
        settings = crawler.settings
        if not get_bool(settings, "TIANWANG_LINK_GRAPH"):
            raise NotConfigured  # switched off on purpose: no warning, absent from "Enabled"
        pipeline = cls(
            data_dir=get_nonempty_str(settings, "TIANWANG_DATA_DIR"),
            max_open=get_int(settings, "TIANWANG_MAX_OPEN_FILES", minimum=1),
        )
        pipeline.stats, pipeline.signals = crawler.stats, crawler.signals
        return pipeline

    def open_spider(self) -> None:
        self.writer = LinkGraphWriter(self.data_dir, self.max_open)

    def close_spider(self) -> None:
        if self.writer is not None:
            try:
                self.writer.close()
            except OSError as error:
                logger.error("%s", describe(error, "link graph"))

    def process_item(self, item: Any) -> Any:
        if isinstance(item, PageItem) and not self.failed:
            assert self.writer is not None
            try:
                self.writer.add(url_host(item.url), item.url, item.parent, item.links)
            except WriteError as error:
                self.failed = True
                self.signals.send_catch_log(tw_signals.storage_failed,
                                            **failure(error, "link graph"))
                return item
            self.stats.inc_value("tianwang/linkgraph/pages")
            self.stats.inc_value("tianwang/linkgraph/links", len(item.links))
        return item
