"""The test web's protocol hosts: what real sites say to crawlers (opt-in: `serve --protocols`).

Pure python (no Scrapy, no Twisted). A few fixed hosts beside the synthetic ones, each
showing one thing a crawler must honour:

- www.slowpoke.org: robots.txt `Crawl-delay: 1` (and a disallowed page);
- www.busybee.org: its homepage answers 429 `Retry-After: 2` the first time it is asked
  for, one page 503 with `Retry-After` as an HTTP date; the same url then answers 200;
- www.robots404.org: robots.txt is a 404 whose body reads `Disallow: /` (4xx: allow all);
- www.robots503.org: robots.txt always 503 (unavailable: nothing else fetched);
- www.robotsflaky.org: robots.txt 503 the first time, then a real one;
- www.robotsdown.org: robots.txt 504 from the proxy, as an unreachable server looks;
- www.sitemapped.org: pages reachable only through the sitemap index its robots.txt names
  (a plain urlset and a gzip one, with lastmod);
- www.plainmap.org: pages reachable only through /sitemap.xml (no Sitemap: line);
- www.sitemapbomb.org: an endlessly nested sitemap index, a urlset of 5,000 urls and a small
  gzip file that inflates to 32 MB;
- www.zhongwen.cn: charsets: GB2312 declared but GB18030 used, a charset only in <meta>, a
  UTF-8 BOM under a header that says otherwise;
- www.squeeze.org: bodies sent gzip, deflate, br and zstd encoded.

The server keeps one piece of state: how often each url was asked for (first-time answers).
truth() gives, per url, "fetched": whether a crawl with sitemaps off fetches it, and
"sitemap_only": whether only sitemaps lead to it (fetched with sitemaps on).
"""

from __future__ import annotations

import gzip
import zlib
from collections import Counter
from collections.abc import Iterator
from email.utils import formatdate
from functools import cached_property
from time import time
from typing import Any
from urllib.parse import quote, urlsplit

from tianwang.testweb.response import Response

CRAWL_DELAY_HOST = "www.slowpoke.org"
CRAWL_DELAY = 1  # seconds, in that host's robots.txt
BUSY_HOST = "www.busybee.org"
RETRY_AFTER = 2  # seconds the busy host asks for, as a number (429) and as a date (503)
ROBOTS_404_HOST = "www.robots404.org"
ROBOTS_503_HOST = "www.robots503.org"
ROBOTS_FLAKY_HOST = "www.robotsflaky.org"
ROBOTS_DOWN_HOST = "www.robotsdown.org"
SITEMAP_HOST = "www.sitemapped.org"
PLAIN_SITEMAP_HOST = "www.plainmap.org"
BOMB_HOST = "www.sitemapbomb.org"
CHARSET_HOST = "www.zhongwen.cn"
ENCODING_HOST = "www.squeeze.org"
BOMB_URLS = 5000  # urls in the bomb host's huge urlset
BOMB_INFLATED = 32 * 1024 * 1024  # bytes the bomb host's gzip sitemap inflates to
LASTMOD = "2026-11-01T08:00:00+00:00"  # a sitemapped page's lastmod, before any crawl
# Another's, after any crawl: a refresh at a later `now` must revisit it (and only it).
LATER_LASTMOD = "2099-01-01T00:00:00+00:00"

HTML = "text/html; charset=utf-8"
XML = "application/xml"


def _page(title: str, links: list[str], charset: str = "utf-8", head: str = "") -> bytes:
    anchors = "".join(f'<li><a href="{href}">{href}</a></li>\n' for href in links)
    return (f"<!DOCTYPE html>\n<html><head>{head}<title>{title}</title></head>\n"
            f"<body><h1>{title}</h1>\n<ul>\n{anchors}</ul></body></html>\n").encode(charset)


def _urlset(urls: list[str], lastmods: dict[str, str] | None = None, pad: str = "") -> bytes:
    def mod(url: str) -> str:
        lastmod = (lastmods or {}).get(url)
        return f"<lastmod>{lastmod}</lastmod>" if lastmod else ""

    entries = "".join(f"<url><loc>{url}</loc>{mod(url)}</url>\n" for url in urls)
    return ('<?xml version="1.0" encoding="UTF-8"?>\n'
            '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n'
            f"{entries}{pad}</urlset>\n").encode()


def _index(urls: list[str]) -> bytes:
    entries = "".join(f"<sitemap><loc>{url}</loc></sitemap>\n" for url in urls)
    return ('<?xml version="1.0" encoding="UTF-8"?>\n'
            '<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n'
            f"{entries}</sitemapindex>\n").encode()


def _robots(*lines: str) -> Response:
    body = "".join(f"{line}\n" for line in lines).encode()
    return Response(200, [("Content-Type", "text/plain")], body)


# Charset pages: (path, Content-Type, body charset, <head> extra, BOM, link paths).
# The link paths hold characters that decode differently under the wrong charset.
CHARSET_PAGES = (
    ("/gb18030.html", "text/html; charset=gb2312", "gb18030", "", b"",
     ["/文档/㐀.html", "/文档/€欧元.html"]),  # U+3400 and the euro sign: GB18030, not GB2312
    ("/meta.html", "text/html", "gbk", '<meta charset="gbk">', b"", ["/新闻/体育.html"]),
    ("/bom.html", "text/html; charset=iso-8859-1", "utf-8", "", b"\xef\xbb\xbf",
     ["/简体/中文.html"]),
)
ENCODED_PAGES = {"/": "gzip", "/deflate.html": "deflate", "/br.html": "br",
                 "/zstd.html": "zstd"}


class ProtocolWeb:
    """The protocol hosts: their responses, some stateful, and their truth."""

    def __init__(self) -> None:
        self.asked: Counter[str] = Counter()  # url -> requests so far (first-time answers)

    hosts = (CRAWL_DELAY_HOST, BUSY_HOST, ROBOTS_404_HOST, ROBOTS_503_HOST, ROBOTS_FLAKY_HOST,
             ROBOTS_DOWN_HOST, SITEMAP_HOST, PLAIN_SITEMAP_HOST, BOMB_HOST, CHARSET_HOST,
             ENCODING_HOST)

    def homepages(self) -> list[str]:
        return [f"http://{host}/" for host in self.hosts]

    def respond(self, url: str) -> Response | None:
        """The answer for a url of a protocol host; None for any other url."""
        parts = urlsplit(url)
        host = parts.hostname or ""
        if host not in self.hosts or parts.port not in (None, 80) or parts.scheme != "http":
            return None
        self.asked[url] += 1
        path = parts.path or "/"
        special = self._special(host, path, self.asked[url])
        if special is not None:
            return special
        page = self.pages.get(url)
        if page is None:
            if host == BOMB_HOST:
                return self._bomb(path)
            return Response(404, [("Content-Type", HTML)], b"<html><body>not found</body></html>")
        return page[0]

    def _special(self, host: str, path: str, count: int) -> Response | None:
        if path != "/robots.txt":
            if host == BUSY_HOST and count == 1 and path == "/":
                return Response(429, [("Content-Type", HTML), ("Retry-After", str(RETRY_AFTER))],
                                b"<html><body>slow down</body></html>")
            if host == BUSY_HOST and count == 1 and path == "/b2.html":
                date = formatdate(time() + RETRY_AFTER + 1, usegmt=True)  # a whole second more
                return Response(503, [("Content-Type", HTML), ("Retry-After", date)],
                                b"<html><body>busy</body></html>")
            return None
        if host == CRAWL_DELAY_HOST:
            return _robots("User-agent: *", f"Crawl-delay: {CRAWL_DELAY}", "Disallow: /private/")
        if host == ROBOTS_404_HOST:  # a 4xx's body is not a robots.txt, whatever it says
            return Response(404, [("Content-Type", "text/plain")], b"User-agent: *\nDisallow: /\n")
        if host == ROBOTS_503_HOST or (host == ROBOTS_FLAKY_HOST and count == 1):
            return Response(503, [("Content-Type", HTML)], b"<html><body>down</body></html>")
        if host == ROBOTS_FLAKY_HOST:
            return _robots("User-agent: *", "Disallow: /nope.html")
        if host == ROBOTS_DOWN_HOST:
            return Response(504, [("Content-Type", HTML)], b"<html><body>timeout</body></html>")
        if host == SITEMAP_HOST:
            return _robots("User-agent: *", "Disallow:",
                           f"Sitemap: http://{SITEMAP_HOST}/maps/index.xml")
        if host == BOMB_HOST:
            return _robots("User-agent: *", "Disallow:",
                           *(f"Sitemap: http://{BOMB_HOST}/bomb/{name}"
                             for name in ("deep-0.xml", "huge.xml", "zip.xml.gz")))
        return Response(404, [("Content-Type", "text/plain")], b"no robots.txt here\n")

    def _bomb(self, path: str) -> Response:
        """The bomb host's endless sitemaps; any other path a small page."""
        base = f"http://{BOMB_HOST}/bomb"
        name = path.rsplit("/", 1)[-1]
        if path.startswith("/bomb/deep-") and name.endswith(".xml"):
            level = name[len("deep-"):-len(".xml")].split("-")[0]
            depth = int(level) if level.isdigit() else 0
            children = [f"{base}/deep-{depth + 1}-{k}.xml" for k in range(3)]
            return Response(200, [("Content-Type", XML)],
                            _index([f"{base}/leaf-{depth}.xml", *children]))
        if path.startswith("/bomb/leaf-"):
            depth = name[len("leaf-"):-len(".xml")]
            return Response(200, [("Content-Type", XML)], _urlset([f"{base}/level-{depth}.html"]))
        if path == "/bomb/huge.xml":
            urls = [f"{base}/u{i}.html" for i in range(BOMB_URLS)]
            return Response(200, [("Content-Type", XML)], _urlset(urls))
        if path == "/bomb/zip.xml.gz":
            return Response(200, [("Content-Type", "application/gzip")], self._zip_bomb)
        return Response(200, [("Content-Type", HTML)], _page(name, []))

    @cached_property
    def _zip_bomb(self) -> bytes:
        head = _urlset([f"http://{BOMB_HOST}/bomb/z{i}.html" for i in range(10)])
        return gzip.compress(head[:-len(b"</urlset>\n")] + b" " * BOMB_INFLATED + b"</urlset>\n",
                             compresslevel=9)

    @cached_property
    def pages(self) -> dict[str, tuple[Response, dict[str, Any]]]:
        """url -> (its response, its truth record), for every url with a fixed answer."""
        pages: dict[str, tuple[Response, dict[str, Any]]] = {}

        def add(host: str, path: str, links: list[str], *, fetched: bool = True,
                sitemap_only: bool = False, response: Response | None = None,
                charset: str = "utf-8", lastmod: str | None = None) -> None:
            url = _absolute(host, path)  # the form a request asks for
            absolute = [_absolute(host, link) for link in links]
            if response is None:
                # The host in the title: no two hosts' pages are copies (dedup would drop one).
                response = Response(200, [("Content-Type", HTML)], _page(url, links))
            mime = (response.header("Content-Type") or "").split(";")[0]
            pages[url] = (response, {
                "url": url, "host": host, "status": response.status, "content_type": mime,
                "links": absolute, "kind": "protocols", "location": None, "charset": charset,
                "robots_allowed": fetched or sitemap_only, "distance": None,
                "fetched": fetched, "sitemap_only": sitemap_only, "lastmod": lastmod,
            })

        def xml(host: str, path: str, body: bytes, mime: str = XML) -> None:
            add(host, path, [], fetched=False, sitemap_only=True,
                response=Response(200, [("Content-Type", mime)], body))

        pages_of = ["/p1.html", "/p2.html", "/p3.html", "/p4.html"]
        add(CRAWL_DELAY_HOST, "/", [*pages_of, "/private/secret.html"])
        for path in pages_of:
            add(CRAWL_DELAY_HOST, path, ["/"])
        add(CRAWL_DELAY_HOST, "/private/secret.html", [], fetched=False)

        add(BUSY_HOST, "/", ["/b1.html", "/b2.html", "/b3.html"])
        for path in ("/b1.html", "/b2.html", "/b3.html"):
            add(BUSY_HOST, path, [])

        add(ROBOTS_404_HOST, "/", ["/r1.html", "/r2.html"])
        add(ROBOTS_404_HOST, "/r1.html", [])
        add(ROBOTS_404_HOST, "/r2.html", [])
        add(ROBOTS_503_HOST, "/", ["/s1.html"], fetched=False)
        add(ROBOTS_503_HOST, "/s1.html", [], fetched=False)
        add(ROBOTS_DOWN_HOST, "/", ["/d1.html"], fetched=False)
        add(ROBOTS_DOWN_HOST, "/d1.html", [], fetched=False)
        add(ROBOTS_FLAKY_HOST, "/", ["/f1.html", "/nope.html"])
        add(ROBOTS_FLAKY_HOST, "/f1.html", [])
        add(ROBOTS_FLAKY_HOST, "/nope.html", [], fetched=False)

        add(SITEMAP_HOST, "/", ["/about.html"])
        add(SITEMAP_HOST, "/about.html", ["/"])
        base = f"http://{SITEMAP_HOST}"
        xml(SITEMAP_HOST, "/maps/index.xml",
            _index([f"{base}/maps/a.xml", f"{base}/maps/b.xml.gz"]))
        xml(SITEMAP_HOST, "/maps/a.xml",
            _urlset([f"{base}/hidden/h1.html", f"{base}/hidden/h2.html", f"{base}/about.html"],
                    {f"{base}/hidden/h1.html": LASTMOD, f"{base}/hidden/h2.html": LATER_LASTMOD}))
        xml(SITEMAP_HOST, "/maps/b.xml.gz", gzip.compress(_urlset([f"{base}/hidden/h3.html"])),
            "application/gzip")
        add(SITEMAP_HOST, "/hidden/h1.html", ["/hidden/h4.html"], fetched=False,
            sitemap_only=True, lastmod=LASTMOD)
        add(SITEMAP_HOST, "/hidden/h2.html", [], fetched=False, sitemap_only=True,
            lastmod=LATER_LASTMOD)
        add(SITEMAP_HOST, "/hidden/h3.html", [], fetched=False, sitemap_only=True)
        add(SITEMAP_HOST, "/hidden/h4.html", [], fetched=False, sitemap_only=True)

        add(PLAIN_SITEMAP_HOST, "/", [])
        plain = f"http://{PLAIN_SITEMAP_HOST}"
        xml(PLAIN_SITEMAP_HOST, "/sitemap.xml",
            _urlset([f"{plain}/only/o1.html", f"{plain}/only/o2.html"]))
        add(PLAIN_SITEMAP_HOST, "/only/o1.html", [], fetched=False, sitemap_only=True)
        add(PLAIN_SITEMAP_HOST, "/only/o2.html", [], fetched=False, sitemap_only=True)

        add(BOMB_HOST, "/", [])

        add(CHARSET_HOST, "/", [path for path, *_ in CHARSET_PAGES])
        for path, content_type, charset, head, bom, links in CHARSET_PAGES:
            body = bom + _page(path, links, charset, head)
            add(CHARSET_HOST, path, links, charset=charset,
                response=Response(200, [("Content-Type", content_type)], body))
            for link in links:
                add(CHARSET_HOST, link, [])

        for path, coding in ENCODED_PAGES.items():
            links = [p for p in ENCODED_PAGES if p != path]
            body = _encode(_page(_absolute(ENCODING_HOST, path), links), coding)
            add(ENCODING_HOST, path, links, response=Response(
                200, [("Content-Type", HTML), ("Content-Encoding", coding)], body))
        return pages

    def plain_body(self, url: str) -> bytes:
        """The decoded body of an encoded page, as a reader must get it back."""
        path = urlsplit(url).path
        return _page(url, [p for p in ENCODED_PAGES if p != path])

    def truth(self) -> Iterator[dict[str, Any]]:
        for _response, record in self.pages.values():
            yield dict(record)


def _absolute(host: str, link: str) -> str:
    """A link as a browser requests it: the path percent-encoded as UTF-8."""
    return f"http://{host}{quote(link, safe='/')}"


def _encode(body: bytes, coding: str) -> bytes:
    if coding == "gzip":
        return gzip.compress(body)
    if coding == "deflate":
        return zlib.compress(body)
    if coding == "zstd":
        return _zstd().compress(body)
    import brotli  # Scrapy's own choice for br; only the test web needs it here

    return brotli.compress(body)


def _zstd():  # type: ignore[no-untyped-def]
    """The zstd module Scrapy decodes with: the standard library's from Python 3.14, else
    backports.zstd (a dependency of Scrapy 2.19)."""
    try:
        from compression import zstd  # type: ignore[import-not-found]
    except ImportError:
        from backports import zstd  # type: ignore[import-not-found,no-redef]
    return zstd
