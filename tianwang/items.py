"""The item a crawl produces for each fetched page."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(repr=False)
class PageItem:
    """A fetched page. Its repr names it without its body or headers: Scrapy logs an item
    whenever a pipeline drops or fails it, and a page of megabytes made a log of gigabytes."""

    url: str  # final url, after redirects
    requested_url: str  # the url first requested (differs after a redirect)
    status: int
    headers: list[tuple[bytes, bytes]]  # response headers as received, in order
    body: bytes  # undecoded body bytes (transfer/content coding removed by Scrapy)
    ip: str | None  # address of the server (or proxy) the response came from
    fetched_at: float  # epoch seconds on the crawler's clock
    level: int  # the seed page is level 1
    protocol: str = "HTTP/1.1"
    links: list[str] = field(default_factory=list)  # absolute out-links, no fragment
    parent: str | None = None  # the page whose link led here (through redirects); None: a seed

    def __repr__(self) -> str:
        return (f"<PageItem {self.status} {self.url} ({len(self.body):,} bytes, "
                f"{len(self.links):,} links)>")


@dataclass
class NotModifiedItem:
    """A revisit answered 304 Not Modified: the stored copy is current (issue 6)."""

    url: str
    headers: list[tuple[bytes, bytes]]  # of the 304 (Date, ETag, Last-Modified)
    fetched_at: float  # epoch seconds on the crawler's clock


@dataclass
class SitemapLastmodItem:
    """A sitemap's word that a url changed at `lastmod` (a W3C datetime): goes to the visit
    history (TIANWANG_CHANGES), so the refresh spider revisits the url if it is later than
    the url's last visit (issue 17)."""

    url: str
    lastmod: str
