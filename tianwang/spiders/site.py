"""The `site` spider: per-host breadth-first crawl of a seed list, CWT200g style.

    scrapy crawl site -a seeds=seeds.txt
    scrapy crawl site -a seeds=http://www.example.com/,www.example.org
    scrapy crawl site -a partition=plan.json -a share=0 [-a seeds=...]

Each seed page is level 1; links are followed up to TIANWANG_MAX_LEVELS, within the page's
own host unless TIANWANG_STAY_IN_HOST is off. Pages of TIANWANG_STORE_TYPES become items.

Topical crawling (seed 000): with TIANWANG_KEYWORDS set, every request made from a page whose
text holds a keyword carries meta["tianwang_boost"] = TIANWANG_KEYWORD_BOOST, which the
frontier adds to the url's weight.

Site partition (seed 002): with -a partition=PLAN -a share=i the crawl also starts at every
planned site's homepage and share i's supplementary seeds, and PartitionMiddleware keeps it
out of the key paths of other shares (tianwang/share.py); -a seeds is then optional.

Sitemaps (TIANWANG_SITEMAPS): each host's sitemaps are a source of urls too, each url a
level-1 entry point as a seed is (tianwang/spiders/sitemaps.py).
"""

from __future__ import annotations

import re
import time
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any
from urllib.parse import urljoin, urlparse, urlsplit

from lxml import etree
from scrapy import Request, Spider
from scrapy import signals as scrapy_signals
from scrapy.http import HtmlResponse, Response, TextResponse
from scrapy.linkextractors import IGNORED_EXTENSIONS
from selectolax.lexbor import LexborHTMLParser

from tianwang import meta, signals
from tianwang.config import SettingError, get_bool, get_int, get_media_types, get_proxy_url
from tianwang.config.shared_crawl import is_shared
from tianwang.distributed.processes import own_redis
from tianwang.items import PageItem
from tianwang.markup import page_base
from tianwang.seeds import SeedError, check_reachable, load_seeds
from tianwang.share import Share, load_share
from tianwang.spiders.sitemaps import SitemapConfig, SitemapReader
from tianwang.urls import (
    SessionIds,
    canonical_url,
    path_extension,
    session_id_pattern,
    strip_session_ids,
    url_host,
)

_SKIPPED_EXTENSIONS = frozenset(f".{ext}" for ext in IGNORED_EXTENSIONS)
_LINK_TAGS = ("a", "area")  # the elements whose href is a link
# What a reader sees of a page: its text nodes, not markup, attribute values or scripts.
_TEXT_XPATH = "//text()[not(ancestor::script or ancestor::style)]"
_DOMAIN = re.compile(r"[a-z0-9-]+(\.[a-z0-9-]+)*\Z")
# The version of a status line as Twisted read it: any name ("http/1.1 200 ok" is read).
_VERSION = re.compile(r"[^/]*/([0-9]+)\.([0-9]+)\Z")


class SiteSpider(Spider):
    name = "site"
    # Set by from_crawler from the settings (defaults in tianwang/default_settings.py).
    seed_urls: list[str]
    max_levels: int
    max_links: int  # links taken from one page (TIANWANG_MAX_PAGE_LINKS); 0: all
    stay_in_host: bool
    store_types: frozenset[str]
    keywords: tuple[str, ...]
    keyword_boost: int
    session_ids: SessionIds | None  # TIANWANG_SESSION_PARAMS, stripped from links
    partition_share: Share | None  # announced by signals.share_opened as the spider opens
    sitemaps: SitemapReader | None  # None unless TIANWANG_SITEMAPS
    joins: LinkJoins  # hrefs resolved on earlier pages
    parsed: ParsedUrls  # urls of the pages parsed so far (no request is made for them again)
    seed_hosts: frozenset[str]  # the seeds' hosts: a link to one is marked meta.SEED_HOST

    def __init__(
        self,
        seeds: str | None = None,
        partition: str | None = None,
        share: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.seeds_arg = seeds
        self.partition_arg, self.share_arg = partition, share

    @classmethod
    def from_crawler(cls, crawler: Any, *args: Any, **kwargs: Any) -> SiteSpider:
        spider = super().from_crawler(crawler, *args, **kwargs)
        settings = crawler.settings
        if spider.seeds_arg is None:  # -a seeds beats the setting (e.g. a vertical's seeds)
            spider.seeds_arg = settings.get("TIANWANG_SEEDS") or None
        domains = get_domains(settings, "TIANWANG_ALLOWED_DOMAINS")
        if domains:  # Scrapy's offsite filter reads it; none leaves a subclass's own list
            spider.allowed_domains = domains
        spider.max_levels = get_int(settings, "TIANWANG_MAX_LEVELS", minimum=0)
        spider.max_links = get_int(settings, "TIANWANG_MAX_PAGE_LINKS", minimum=0)
        spider.stay_in_host = get_bool(settings, "TIANWANG_STAY_IN_HOST")
        spider.store_types = frozenset(get_media_types(settings, "TIANWANG_STORE_TYPES"))
        spider.keywords = get_keywords(settings, "TIANWANG_KEYWORDS")
        spider.keyword_boost = get_int(settings, "TIANWANG_KEYWORD_BOOST", minimum=0)
        spider.session_ids = get_session_ids(settings, "TIANWANG_SESSION_PARAMS")
        spider.joins = LinkJoins()
        spider.parsed = ParsedUrls()
        # Bad seeds stop the crawl here, before anything is fetched. A node joining a crawl
        # shared through Redis needs none: the crawl was seeded by another node (not so the
        # processes of TIANWANG_PROCESSES on their own redis-server: nobody else can seed it).
        joining = is_shared(settings) and spider.seeds_arg is None and not own_redis()
        spider.partition_share = load_share(spider.partition_arg, spider.share_arg)
        spider.seed_urls = [] if joining else spider.start_seeds()
        spider.seed_hosts = frozenset(seed_hosts(spider.seed_urls))
        check_seeds_allowed(spider.seed_urls, domains)
        check_reachable(spider.seed_urls, get_proxy_url(settings, "TIANWANG_PROXY"))
        crawler.signals.connect(spider.announce_share, signal=scrapy_signals.spider_opened)
        spider.sitemaps = None
        sitemaps = SitemapConfig.from_settings(settings)
        if sitemaps.enabled:
            spider.sitemaps = SitemapReader(sitemaps, crawler, spider.follows,
                                            spider.parse, spider.parse_sitemap)
            crawler.signals.connect(spider.robots_parsed, signal=scrapy_signals.robots_parsed)
        return spider

    def announce_share(self) -> None:
        """Tell the crawl (PartitionMiddleware) which share of a partition this is, if any."""
        self.crawler.signals.send_catch_log(signals.share_opened, share=self.partition_share)

    def start_seeds(self) -> list[str]:
        """The seeds, then a share's homepages and supplementary seeds; SeedError if none."""
        share = self.partition_share
        if share is None or self.seeds_arg is not None:
            seeds = load_seeds(self.seeds_arg)
        else:
            seeds = []
        seeds = list(dict.fromkeys(seeds + (share.start_urls() if share else [])))
        if not seeds:
            raise SeedError(f"no seeds: the partition plan {self.partition_arg} has no sites")
        return seeds

    async def start(self) -> AsyncIterator[Request]:
        for url in self.seed_urls:
            yield Request(url, callback=self.parse)
        if self.sitemaps is not None and not self.settings.getbool("ROBOTSTXT_OBEY"):
            for url in self.seed_urls:  # no robots.txt is read: each seed host's /sitemap.xml
                for request in self.sitemaps.for_robots(urljoin(url, "/robots.txt"), None):
                    yield request

    def robots_parsed(self, robotparser: Any, request: Request) -> None:
        """A host's robots.txt is in: request its sitemaps (TIANWANG_SITEMAPS)."""
        if self.sitemaps is None or request.meta.get(meta.SITEMAP):
            return
        for sitemap in self.sitemaps.for_robots(urljoin(request.url, "/robots.txt"), robotparser):
            self.crawler.engine.crawl(sitemap)

    def parse_sitemap(self, response: Response) -> Iterator[Any]:
        assert self.sitemaps is not None
        yield from self.sitemaps.parse(response)

    def parse(self, response: Response) -> list[PageItem | Request]:
        # A list, not a generator: for a generator callback Scrapy parses the method's
        # source for every response (warn_on_generator_with_return_value; its cache is
        # keyed by the bound method, made anew for each request), 0.14 ms a page.
        self.parsed.add(response.url, response.meta.get(meta.REDIRECT_URLS))
        level = response.meta.get(meta.DEPTH, 0) + 1
        mime = media_type(response)
        links = self.links_of(response) if mime == "text/html" else []
        if links and self.session_ids is not None:
            links = self.without_session_ids(links)
        out: list[PageItem | Request] = []
        if response.meta.get(meta.STORED):
            pass  # stored by a node of a shared crawl that died before saying it was done
        elif mime in self.store_types:
            out.append(page_item(response, level, links))
        else:
            self.crawler.stats.inc_value(f"tianwang/skipped/{mime or 'unknown'}")
        if self.max_levels and level >= self.max_levels:
            return out
        page_host = url_host(response.url)
        follow = [url for url in links if self.follows(page_host, url)]
        boost = self.boost_meta(response, mime) if follow else None
        if boost:
            self.crawler.stats.inc_value("tianwang/topical/boosted_requests", len(follow))
        # The parent survives redirects; Referer doesn't.
        request_meta = {**(boost or {}), meta.PARENT: response.url, meta.OUTLINKS: len(follow)}
        seed_meta = {**request_meta, meta.SEED_HOST: True}
        out += [Request(url, callback=self.parse,
                        meta=seed_meta if self.to_seed_host(page_host, url) else request_meta)
                for url in follow if url not in self.parsed]
        return out

    def to_seed_host(self, page_host: str, url: str) -> bool:
        """Whether a followed link of a page on page_host leads to the host of a seed (the
        frontier gives it a seed's first requests even if the seed itself has not reached it
        yet). Kept in its host, a followed link is on the page's: no host to parse a link."""
        if self.stay_in_host:
            return page_host in self.seed_hosts
        try:
            return url_host(url) in self.seed_hosts
        except ValueError:
            return False

    def links_of(self, response: Response) -> list[str]:
        """The page's links, at most TIANWANG_MAX_PAGE_LINKS (those past it counted)."""
        links, left_out = extract_links(response, self.max_links, self.joins)
        if left_out:
            self.crawler.stats.inc_value("tianwang/links/pages_cut")
            self.crawler.stats.inc_value("tianwang/links/left_out", left_out)
        return links

    def without_session_ids(self, links: list[str]) -> list[str]:
        """The links with session ids stripped (issue 16): one url per page, not one a visit."""
        stripped = [strip_session_ids(url, self.session_ids) for url in links]
        changed = sum(a is not b for a, b in zip(links, stripped, strict=True))
        if changed:
            self.crawler.stats.inc_value("tianwang/urls/session_ids_stripped", changed)
        return list(dict.fromkeys(stripped))

    def boost_meta(self, response: Response, mime: str) -> dict[str, int] | None:
        """The topical boost for the requests made from a page, if its text holds a keyword."""
        if not self.keywords or not self.keyword_boost:
            return None
        text = page_text(response, mime).lower()
        if not any(keyword in text for keyword in self.keywords):
            return None
        self.crawler.stats.inc_value("tianwang/topical/pages")
        return {meta.BOOST: self.keyword_boost}

    def follows(self, page_host: str, link: str) -> bool:
        """Whether a link of a page on page_host is worth a request."""
        if path_extension(link) in _SKIPPED_EXTENSIONS:
            return False  # images, archives, media: never stored, not worth a fetch
        try:
            return not self.stay_in_host or url_host(link) == page_host
        except ValueError:  # a bad port or no host: a broken link, not a reason to stop
            return False


def seed_hosts(urls: list[str]) -> Iterator[str]:
    """The hosts of the seeds (a seed with no host, refused later, has none)."""
    for url in urls:
        try:
            yield url_host(url)
        except ValueError:
            continue


def media_type(response: Response) -> str:
    """The response's media type, lowercase, without parameters ("" if unknown)."""
    header = response.headers.get(b"Content-Type")
    if header:
        return header.split(b";")[0].strip().decode("latin-1").lower()
    if isinstance(response, HtmlResponse):  # Scrapy sniffed the body
        return "text/html"
    return "text/plain" if type(response) is TextResponse else ""


def get_keywords(settings: Any, name: str) -> tuple[str, ...]:
    """A list of non-empty words, lowercase; an empty list (or "") for none."""
    value = settings.get(name)
    try:
        words = [] if value in ("", None) else settings.getlist(name)
    except ValueError:
        raise SettingError(name, value, "a list of words, or empty") from None
    if not all(isinstance(word, str) and word.strip() for word in words):
        raise SettingError(name, value, "a list of non-empty words, or empty")
    return tuple(word.strip().lower() for word in words)


def get_session_ids(settings: Any, name: str) -> SessionIds | None:
    """The session-id rules of a list of `name`, `prefix*` or `name=REGEX` entries (kept as
    written: a REGEX is case-sensitive in its escapes); None for an empty list."""
    value = settings.get(name)
    try:
        entries = [] if value in ("", None) else settings.getlist(name)
        if not all(isinstance(entry, str) and entry.strip() for entry in entries):
            raise ValueError("an empty entry")
        return session_id_pattern(entries)
    except ValueError as exc:
        raise SettingError(name, value, f"parameter names, name* or name=REGEX ({exc})") from None


def get_domains(settings: Any, name: str) -> list[str]:
    """Domain names (lowercase, no scheme, port or path), or [] for none."""
    value = settings.get(name)
    try:
        domains = [] if value in ("", None) else settings.getlist(name)
    except ValueError:
        raise SettingError(name, value, "a list of domain names, or empty") from None
    cleaned = [d.strip().lower() for d in domains if isinstance(d, str)]
    if len(cleaned) != len(domains) or not all(_DOMAIN.match(d) for d in cleaned):
        raise SettingError(name, value, "domain names like example.com (no scheme, port or path)")
    return cleaned


def check_seeds_allowed(seeds: list[str], domains: list[str]) -> None:
    """SettingError when allowed domains hold none of the seeds: the crawl would fetch nothing
    (Scrapy's offsite filter drops every request, without a word)."""
    if not seeds or not domains:
        return
    for url in seeds:
        host = urlsplit(url).hostname or ""
        if any(host == d or host.endswith(f".{d}") for d in domains):
            return
    raise SettingError("TIANWANG_ALLOWED_DOMAINS", domains,
                       f"domains holding at least one seed (none of the {len(seeds)} seeds is in "
                       f"them, e.g. {urlsplit(seeds[0]).hostname})")


def page_text(response: Response, mime: str) -> str:
    """The decoded text a reader sees: an HTML page's text nodes (no markup, attribute values,
    scripts or styles), a plain text page whole; "" for anything else."""
    if not isinstance(response, TextResponse):
        return ""
    if mime == "text/html":
        return "\n".join(response.xpath(_TEXT_XPATH).getall())
    return response.text


def extract_links(response: Response, limit: int = 0,
                  joins: LinkJoins | None = None) -> tuple[list[str], int]:
    """Absolute http(s) out-links of an HTML page (`<a href>`, `<area href>`, in document
    order): fragment removed, duplicates dropped, at most `limit` of them (0: all); and how
    many hrefs were left out past the limit. `joins` remembers hrefs resolved on earlier
    pages (a crawl's spider keeps one); without it, each page starts afresh."""
    if not isinstance(response, TextResponse):
        return [], 0
    absolute = (joins or LinkJoins()).resolver(response)
    links: dict[str, None] = {}
    left_out = 0
    for href in page_hrefs(response.text):
        if limit and len(links) >= limit:
            left_out += 1
            continue
        url = absolute(href.strip())
        if url:
            links[url] = None
    return list(links), left_out


# Pages up to this many characters are parsed by lexbor (selectolax), larger ones by lxml
# into no tree: lexbor takes half lxml's time, but its tree and nodes of a 23 MB page of
# 700,000 links took 450 MB, where lxml's parser target holds only the links.
LEXBOR_MAX_CHARS = 1_000_000


def page_hrefs(text: str, lexbor_max: int = LEXBOR_MAX_CHARS) -> list[str]:
    """The href of every `<a>` and `<area>` that has one, in document order, as Scrapy's
    selectors read them (lxml, recovering, the text stripped and its NULs dropped): lexbor
    finds the same on real pages, the test web's and its junk (a test holds them equal)."""
    if "\x00" in text:
        text = text.replace("\x00", "")
    if len(text) <= lexbor_max:
        tree = LexborHTMLParser(text)
        return [node.attributes["href"] or "" for node in tree.css("a[href], area[href]")]
    collector = _Hrefs()
    body = text.strip().encode("utf-8")
    if body:
        parser = etree.HTMLParser(target=collector, recover=True, encoding="utf-8")
        try:
            etree.fromstring(body, parser)
        except etree.LxmlError:  # past recovery: the links met so far
            pass
    return collector.hrefs


class _Hrefs:
    """An lxml parser target: each `<a>` and `<area>` href as the parser meets it (no tree:
    a page of 700,000 links costs its links, not a tree of 300 MB)."""

    def __init__(self) -> None:
        self.hrefs: list[str] = []

    def start(self, tag: str, attrib: Any) -> None:
        if tag in _LINK_TAGS:
            href = attrib.get("href")
            if href is not None:
                self.hrefs.append(href)

    def close(self) -> None:
        return None


def _absolute(response: TextResponse, href: str) -> str | None:
    """The link an href (stripped) of a page makes: absolute (honouring <base href>), http(s),
    canonical, without its fragment; None for none."""
    if not href or href.startswith(_NOT_LINKS):
        return None
    return _joined(page_base(response), response.encoding, href)


def _joined(base: str, encoding: str, href: str) -> str | None:
    try:
        url = urljoin(base, href)
        if not url.startswith(("http://", "https://")):
            return None
        return canonical_url(url.split("#", 1)[0], encoding=encoding)
    except ValueError:  # "http://[bad", "http://host:port/" from a broken page: no link
        return None


_NOT_LINKS = ("#", "javascript:", "mailto:")
# An href whose link depends on its page only through the page's scheme, host and directory
# (not the file name, query or params of the page's url): an absolute http(s) url with a
# host, or a path (no scheme: no ":"; not "//host") that urlsplit neither strips at its
# start (control characters, space) nor leaves empty (";", "?" first); no tab or line break
# anywhere (urlsplit removes them: "/\t/h" is "//h"). urljoin drops the base's last path
# segment before it resolves such a path, so the pages of one directory make the same link
# of it; most hrefs (navigation, "../other.html") repeat on every page there.
_SHARED_HREF = re.compile(
    r"(?![^\t\n\r]*[\t\n\r])(?:https?://[^/?#\x00-\x20]|(?!//)[^\x00-\x20#;?:\\][^:\\]*\Z)"
)


class ParsedUrls:
    """The urls of the pages this spider parsed (and the urls that redirected to them),
    the last 250,000 to 500,000 of them, as 64-bit hashes (30 MB at most).

    A link to one is a url the frontier has taken: it would drop the request as a
    duplicate, with no effect (link cash is credited to pending urls only), but only after
    Scrapy's spider middlewares, the engine and its signals had handled it; on real pages,
    where most links lead to pages fetched already, that was a sixth of the crawl's CPU.
    The page's out-link count (OUTLINKS, which shares its cash) still counts them. A hash
    shared by two urls (about 1 in 10^13 a lookup) would leave one link of a page out."""

    GENERATION = 250_000

    def __init__(self) -> None:
        self.current: set[int] = set()
        self.previous: set[int] = set()

    def add(self, url: str, redirected_from: list[str] | None = None) -> None:
        if len(self.current) >= self.GENERATION:
            self.previous, self.current = self.current, set()
        self.current.add(hash(url))
        for earlier in redirected_from or ():
            self.current.add(hash(earlier))

    def __contains__(self, url: str) -> bool:
        key = hash(url)
        return key in self.current or key in self.previous


class LinkJoins:
    """Hrefs resolved to links, remembered across pages: a page's link for an href that
    _SHARED_HREF matches is the link any page of the same directory made of it, and for an
    absolute http(s) href the link any page of the same scheme made of it (urljoin, then
    canonical_url, is most of link extraction's cost; urljoin keeps an href of another scheme
    as it is, and rebuilds one of the page's scheme without an empty ";" or "?"). At most
    `size` are kept."""

    def __init__(self, size: int = 200_000) -> None:
        self.size = size
        self.known: dict[tuple[str, str, str, str], dict[str, str]] = {}
        self.count = 0

    def resolver(self, response: TextResponse) -> Callable[[str], str | None]:
        """The page's href -> link function (None: no link)."""
        base, encoding = page_base(response), response.encoding
        scheme, host, path = urlparse(base)[:3]
        if self.count >= self.size:
            self.known.clear()
            self.count = 0
        known = self.known.setdefault((scheme, host, path[: path.rfind("/") + 1], encoding), {})
        anywhere = self.known.setdefault((scheme, "", "", encoding), {})  # no page's directory

        def absolute(href: str) -> str | None:
            if not href or href.startswith(_NOT_LINKS):
                return None
            href = href.split("#", 1)[0]
            table = anywhere if href.startswith(_ABSOLUTE) else known
            link = table.get(href)
            if link is None:
                link = _joined(base, encoding, href) or ""
                if _SHARED_HREF.match(href):
                    table[href] = link
                    self.count += 1
            return link or None

        return absolute


_ABSOLUTE = ("http://", "https://")


def page_item(response: Response, level: int, links: list[str]) -> PageItem:
    redirects = response.meta.get(meta.REDIRECT_URLS) or [response.url]
    return PageItem(
        url=response.url,
        requested_url=redirects[0],
        status=response.status,
        headers=[(name, value) for name, values in response.headers.items() for value in values],
        body=response.body,
        ip=str(response.ip_address) if response.ip_address else None,
        fetched_at=time.time(),
        level=level,
        protocol=record_protocol(response.protocol),
        links=links,
        parent=response.meta.get(meta.PARENT),
    )


def record_protocol(protocol: str | None) -> str:
    """The HTTP version of a record's status line: the answer's, spelt as the record format
    spells it. A server's lowercase `http/1.1 200 ok` is read by Twisted (and by browsers) as
    HTTP/1.1; "h2" is kept for the record writer; anything else unknown is HTTP/1.1."""
    if not protocol or protocol == "h2":
        return protocol or "HTTP/1.1"
    match = _VERSION.match(protocol)
    return f"HTTP/{match.group(1)}.{match.group(2)}" if match else "HTTP/1.1"
