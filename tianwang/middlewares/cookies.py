"""Cookies as a browser keeps them: bounded per cookie, per domain, per request and in all.

Scrapy's CookiesMiddleware keeps every cookie a server sets, for the whole crawl: a host that
set 2,000 cookies of 4 KB got an 8 MB Cookie header on each later request, and the jar of a
crawl of many hosts only grows. Its public-suffix check also makes tldextract download the
Public Suffix List from the internet at the first Set-Cookie (around the crawl's proxy).
This middleware takes its place (at the same 700), with the same jar (Scrapy's CookieJar,
http.cookiejar's rules), the list from the bundled snapshot (tianwang/domains.py), and
browsers' limits:

- a cookie whose name and value pass TIANWANG_MAX_COOKIE_SIZE bytes (4096, RFC 6265's
  minimum a browser keeps and the most it is held to) is not kept ("too_big");
- a registered domain keeps at most TIANWANG_COOKIES_PER_DOMAIN cookies (Chrome's 180): a new
  one past it is not kept ("domain_full"), a cookie it replaces always is;
- the Cookie header sent is at most TIANWANG_MAX_COOKIE_HEADER bytes (8190, what Apache and
  nginx accept by default: a longer one would be answered 400): the cookies past it are left
  out of that request ("header_cut");
- the jars hold at most TIANWANG_MAX_COOKIE_BYTES in all: past it, the cookies of the domain
  used longest ago are forgotten ("forgotten").

Each is counted as tianwang/cookies/<kind>. A cookie set for a public suffix (".com") is
kept only for the host that set it, as Scrapy does. `dont_merge_cookies` and the
`cookiejar` meta key work as in Scrapy; cookies given on a request (Request.cookies) too.
"""

from __future__ import annotations

from collections import OrderedDict, defaultdict
from collections.abc import Iterable
from http.cookiejar import Cookie
from typing import Any

from scrapy import Request
from scrapy.exceptions import NotConfigured
from scrapy.http import Response
from scrapy.http.cookies import CookieJar
from scrapy.utils.httpobj import urlparse_cached

from tianwang.config import get_int
from tianwang.domains import is_public_suffix, registered_domain

_Ident = tuple[str, str, str]  # a cookie's domain, path and name: one cookie in a jar


class BoundedCookiesMiddleware:
    def __init__(self, max_size: int, per_domain: int, max_header: int, max_bytes: int,
                 stats: Any) -> None:
        self.max_size, self.per_domain = max_size, per_domain
        self.max_header, self.max_bytes = max_header, max_bytes
        self.stats = stats
        self.jars: defaultdict[Any, CookieJar] = defaultdict(CookieJar)
        # (jar key, registered domain) -> its cookies' sizes, the domain used longest ago
        # first. Cookies the jar drops itself (expired) are forgotten here only with their
        # domain: the counts can only be high, never let a jar grow past its bounds.
        self._held: OrderedDict[tuple[Any, str], dict[_Ident, int]] = OrderedDict()
        self._bytes = 0

    @classmethod
    def from_crawler(cls, crawler: Any) -> BoundedCookiesMiddleware:
        settings = crawler.settings
        if not settings.getbool("COOKIES_ENABLED"):
            raise NotConfigured
        return cls(get_int(settings, "TIANWANG_MAX_COOKIE_SIZE", minimum=1),
                   get_int(settings, "TIANWANG_COOKIES_PER_DOMAIN", minimum=1),
                   get_int(settings, "TIANWANG_MAX_COOKIE_HEADER", minimum=1),
                   get_int(settings, "TIANWANG_MAX_COOKIE_BYTES", minimum=1),
                   crawler.stats)

    def process_request(self, request: Request, spider: Any = None) -> None:
        if request.meta.get("dont_merge_cookies", False):
            return
        key = request.meta.get("cookiejar")
        jar = self.jars[key]
        if request.cookies:
            self._keep(key, jar, jar.make_cookies(_as_response(request), request), request)
        request.headers.pop("Cookie", None)
        jar.add_cookie_header(request)
        header = request.headers.get("Cookie")
        if header is not None and len(header) > self.max_header:
            request.headers["Cookie"] = _cut(header, self.max_header)
            self.stats.inc_value("tianwang/cookies/header_cut")
        owner = (key, registered_domain(_host(request)))
        if owner in self._held:
            self._held.move_to_end(owner)

    def process_response(self, request: Request, response: Response,
                         spider: Any = None) -> Response:
        if request.meta.get("dont_merge_cookies", False):
            return response
        if b"Set-Cookie" in response.headers:
            key = request.meta.get("cookiejar")
            jar = self.jars[key]
            self._keep(key, jar, jar.make_cookies(response, request), request)
        return response

    def _keep(self, key: Any, jar: CookieJar, cookies: Iterable[Cookie],
              request: Request) -> None:
        host = _host(request)
        for cookie in cookies:
            domain = cookie.domain.removeprefix(".")
            if domain and is_public_suffix(domain):
                if domain != host:
                    continue  # a cookie for every site under .com: only for its own host
                cookie.domain = domain = host
            size = len(cookie.name) + len(cookie.value or "")
            if size > self.max_size:
                self.stats.inc_value("tianwang/cookies/too_big")
                continue
            owner = (key, registered_domain(domain or host))
            held = self._held.setdefault(owner, {})
            ident = (cookie.domain, cookie.path, cookie.name)
            if ident not in held and len(held) >= self.per_domain:
                self.stats.inc_value("tianwang/cookies/domain_full")
                continue
            jar.set_cookie_if_ok(cookie, request)
            self._bytes += size - held.get(ident, 0)
            held[ident] = size
            self._held.move_to_end(owner)
        self._forget_oldest()

    def _forget_oldest(self) -> None:
        """Forget the cookies of the domains used longest ago, while the jars are too big."""
        while self._bytes > self.max_bytes and len(self._held) > 1:
            (key, _domain), held = self._held.popitem(last=False)
            for ident in held:
                try:
                    self.jars[key].clear(*ident)
                except KeyError:  # dropped by the jar already (expired)
                    pass
            self._bytes -= sum(held.values())
            self.stats.inc_value("tianwang/cookies/forgotten", len(held))


def _host(request: Request) -> str:
    return (urlparse_cached(request).hostname or "").lower()


def _as_response(request: Request) -> Response:
    """The cookies given on a request, as a response setting them (what the jar reads)."""
    cookies = request.cookies
    pairs = cookies.items() if isinstance(cookies, dict) else (
        (c["name"], c["value"]) for c in cookies)
    return Response(request.url, headers={"Set-Cookie": [f"{n}={v}" for n, v in pairs]})


def _cut(header: bytes, limit: int) -> bytes:
    """The header's first cookies that fit in `limit` bytes."""
    kept, size = [], 0
    for pair in header.split(b"; "):
        size += len(pair) + (2 if kept else 0)
        if size > limit:
            break
        kept.append(pair)
    return b"; ".join(kept)
