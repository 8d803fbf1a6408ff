"""Drop requests to hosts a research crawl should never contact (docs/design.md section 5).

A request is refused, before any connection (it runs before RobotsTxtMiddleware, so not even
robots.txt is fetched), when its url is malformed (a host no DNS name can be included) or its
host is an IP literal, on a port other than the scheme's default, on the spam list, or led by
a digit (tianwang/hosts.py). With TIANWANG_BLOCK_PRIVATE, a page cannot steer the crawler
into the machine's own network: names of this machine or its network (localhost,
*.local, *.internal, metadata.google.internal, single-label names: hosts.is_local_name)
are refused whether a proxy fetches or not, and, fetching without a proxy, hosts that
resolve to a non-public address.

The address check asks the resolver the crawler's connection uses (tianwang/resolver.py,
with its DNS cache) for every request, and keeps no verdict of its own: a verdict lives
exactly as long as the DNS answer it was made from, so the connection goes to the address
that was checked for as long as the resolver keeps it (see `resolve` for what remains open).
"""

from __future__ import annotations

import ipaddress
import logging
from pathlib import Path
from typing import Any, NoReturn
from urllib.request import getproxies, proxy_bypass  # the ones HttpProxyMiddleware reads

from scrapy import Request
from scrapy.exceptions import IgnoreRequest
from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet.defer import Deferred
from twisted.internet.interfaces import IHostResolution, IResolutionReceiver
from zope.interface import implementer

from tianwang import signals as tw_signals
from tianwang.config import SettingError, get_bool, get_proxy_url
from tianwang.hosts import (
    HostRules,
    MalformedURL,
    SpamList,
    SpamListError,
    is_public,
    parse_url_host,
)
from tianwang.recent import RecentSet

logger = logging.getLogger(__name__)


class HostFilterMiddleware:
    def __init__(
        self,
        rules: HostRules,
        block_private: bool,
        stats: Any,
        proxy: str = "",
        env_proxies: dict[str, str] | None = None,
        reactor: Any = None,
    ) -> None:
        self.rules, self.block_private, self.stats = rules, block_private, stats
        self.proxy = proxy  # TIANWANG_PROXY: ProxyMiddleware puts it on every request
        self.env_proxies = env_proxies or {}  # http_proxy etc., as HttpProxyMiddleware
        self.reactor = reactor
        self._logged = RecentSet()  # (host, reason): a spam family names millions
        self.signals: Any = None  # from_crawler's: refusals are told by signal

    @classmethod
    def from_crawler(cls, crawler: Any) -> HostFilterMiddleware:
        settings = crawler.settings
        rules = HostRules(
            spam=load_spam_list(settings.get("TIANWANG_SPAM_LIST") or ""),
            drop_other_ports=get_bool(settings, "TIANWANG_DROP_OTHER_PORTS"),
            drop_digit_hosts=get_bool(settings, "TIANWANG_DROP_DIGIT_HOSTS"),
            drop_local_names=get_bool(settings, "TIANWANG_BLOCK_PRIVATE"),
        )
        env = getproxies() if settings.getbool("HTTPPROXY_ENABLED") else {}
        from twisted.internet import reactor

        middleware = cls(
            rules,
            get_bool(settings, "TIANWANG_BLOCK_PRIVATE"),
            crawler.stats,
            proxy=get_proxy_url(settings, "TIANWANG_PROXY"),
            env_proxies=env,
            reactor=reactor,
        )
        middleware.signals = crawler.signals
        return middleware

    async def process_request(self, request: Request) -> None:
        try:
            parsed = parse_url_host(request.url)
        except MalformedURL:
            return self._drop(request, "malformed")
        reason = self.rules.reason_for(parsed)
        if reason is None and self.block_private and not self._proxied(request, parsed.host):
            if await self._resolves_private(parsed.host, parsed.port):
                reason = "private"
        if reason is not None:
            self._drop(request, reason)

    def _proxied(self, request: Request, host: str) -> bool:
        """Whether the download handler will connect to a proxy rather than to the host."""
        if "proxy" in request.meta:  # set by a spider or an earlier middleware; None = direct
            return request.meta["proxy"] is not None
        if self.proxy:
            return True
        scheme = request.url.partition(":")[0].lower()
        return scheme in self.env_proxies and not proxy_bypass(host)

    async def _resolves_private(self, host: str, port: int) -> bool:
        """Asked again for every request: through the resolver's cache (DNSCACHE_ENABLED) a
        known name costs a lookup in memory, and the verdict expires with the cached answer
        (its TTL, or evicted past DNSCACHE_SIZE names: the next request resolves, and
        checks, afresh)."""
        addresses = await maybe_deferred_to_future(resolve(self.reactor, host, port))
        return any(not is_public(ipaddress.ip_address(a)) for a in addresses)

    def _drop(self, request: Request, reason: str) -> NoReturn:
        self.stats.inc_value(f"tianwang/filter/{reason}")
        if self.signals is not None:
            self.signals.send_catch_log(tw_signals.request_refused, request=request,
                                        reason=reason)
        # The host as written (each spelling of an IP address is its own), port included.
        host = request.url.partition("://")[2].split("/", 1)[0].rpartition("@")[2].lower()
        if (host, reason) not in self._logged:  # a spam family would fill the log otherwise
            self._logged.add((host, reason))
            logger.info("Dropped %s: host filter %r (first for this host)", request, reason)
        raise IgnoreRequest(f"host filter: {reason}")


def load_spam_list(path: str) -> SpamList:
    """The spam list named by TIANWANG_SPAM_LIST ("" for none); SettingError if unusable."""
    if not path:
        return SpamList()
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SettingError("TIANWANG_SPAM_LIST", path, f"a readable UTF-8 file ({exc})") from None
    try:
        return SpamList.from_lines(text.splitlines())
    except SpamListError as exc:
        raise SettingError("TIANWANG_SPAM_LIST", path, f"domains or regexes ({exc})") from None


def resolve(reactor: Any, host: str, port: int) -> Deferred[list[str]]:
    """Every address the crawler's connection to host could use.

    It asks reactor.nameResolver, the resolver Scrapy installs (TWISTED_DNS_RESOLVER: the
    stack's tianwang.resolver.CachingResolver) and its HTTP client connects through; with
    its cache (DNSCACHE_ENABLED, the default) the connection then reuses the very answer
    checked here, and a name expired or evicted from the cache is resolved and checked
    afresh by the next request. DNS rebinding caveat, what Scrapy leaves open:
    with the cache off (each connection resolves again), when a name is evicted between
    this check and the connection, or when this lookup fails and the connection's succeeds,
    a hostile DNS server could answer a public address here and a private one at connect
    time; only pinning the checked address in the connection itself would close that, which
    Scrapy's download handler does not offer. A name that does not resolve yields no
    address: the download then fails as it would.
    """
    done: Deferred[list[str]] = Deferred()
    reactor.nameResolver.resolveHostName(_Receiver(done), host, port)
    return done


@implementer(IResolutionReceiver)
class _Receiver:
    def __init__(self, done: Deferred[list[str]]) -> None:
        self.done, self.addresses = done, []

    def resolutionBegan(self, resolution: IHostResolution) -> None:
        pass

    def addressResolved(self, address: Any) -> None:
        self.addresses.append(address.host)

    def resolutionComplete(self) -> None:
        self.done.callback(self.addresses)
