"""Check the download handlers' settings as the crawl starts (an extension).

Scrapy builds a download handler at the first request of its scheme, and an error there is
logged as a traceback while the crawl goes on without the handler: every url of the scheme
then fails as NotSupported, and the crawl ends without naming the setting (status 1 when
nothing was stored, 0 when the other scheme's pages were). Extensions are built before the
engine, so a bad setting of a handler stops the crawl here with one clear message. What is
checked is each handler's own business (its `check_settings`, for the handlers that have
one).
"""

from __future__ import annotations

from typing import Any

from scrapy.exceptions import NotConfigured
from scrapy.utils.misc import load_object


class DownloadSettingsCheck:
    @classmethod
    def from_crawler(cls, crawler: Any) -> DownloadSettingsCheck:
        for path in crawler.settings.getwithbase("DOWNLOAD_HANDLERS").values():
            if not path:
                continue  # a scheme switched off
            handler = load_object(path)
            check = getattr(handler, "check_settings", None)
            if check is not None:
                check(crawler.settings)
        # Nothing more to do during the crawl; no message, which Scrapy would log as a warning.
        raise NotConfigured
