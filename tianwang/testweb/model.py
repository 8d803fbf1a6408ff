"""A deterministic synthetic web of many hosts and its ground truth.

Pure python (no Scrapy, no Twisted): tests, benchmarks and the server share this one model,
so what is served and what truth() says cannot drift apart. Everything follows from
(seed, hosts, max_pages); each host has its own random stream seeded with "seed:index".
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from functools import cached_property
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from tianwang.testweb import render
from tianwang.testweb.names import host_name
from tianwang.testweb.response import (
    LRU,
    Response,
    entry_response,
    status_response,
    truth_record,
)
from tianwang.testweb.sitebuilder import Site, SiteBuilder

if TYPE_CHECKING:
    from tianwang.testweb.changing import Changes
    from tianwang.testweb.floods import FloodWeb
    from tianwang.testweb.hiddenroot import HiddenRoots
    from tianwang.testweb.https import HttpsWeb
    from tianwang.testweb.junk import JunkWeb
    from tianwang.testweb.mirrorsites import Mirrors
    from tianwang.testweb.protocols import ProtocolWeb


class SyntheticWeb:
    """`hosts` sites, built lazily: constructing even a 5,000-host web builds no site."""

    def __init__(self, seed: int, hosts: int, max_pages: int = 300, *,
                 host_cache: int = 8192, response_cache: int = 4096, junk: bool = False,
                 mirrors: bool = False, changing: bool = False,
                 protocols: bool = False, hidden_roots: bool = False,
                 https: bool | str = False, floods: bool = False, suffix: str = "") -> None:
        if hosts < 1:
            raise ValueError(f"hosts must be >= 1, got {hosts}")
        if max_pages < 1:
            raise ValueError(f"max_pages must be >= 1, got {max_pages}")
        self.seed, self.host_count, self.max_pages = seed, hosts, max_pages
        # Appended to every host name: ".test" (RFC 6761) gives names no DNS resolves, so a
        # crawl of them that forgets the test web's proxy fetches nothing from the internet.
        if suffix and (junk or mirrors or changing or protocols or hidden_roots or https):
            raise ValueError("host names under a suffix (--dot-test) go with none of --junk, "
                             "--mirrors, --changing, --protocols, --hidden-roots, --https")
        self.suffix = suffix
        self._sites: LRU[int, Site] = LRU(host_cache)
        self._responses: LRU[str, Response] = LRU(response_cache)
        # Opt-in hosts a crawl must refuse (tianwang/testweb/junk.py); off, the web is as ever.
        self.junk: JunkWeb | None = None
        if junk:
            from tianwang.testweb.junk import JunkWeb

            self.junk = JunkWeb(seed, self.hosts)
        # Opt-in copies of pages under other urls (tianwang/testweb/mirrors.py).
        self.mirrors: Mirrors | None = None
        if mirrors:
            from tianwang.testweb.mirrorsites import Mirrors

            self.mirrors = Mirrors(seed, self.hosts, self._base_site)
        # Opt-in clock, changing pages and conditional GET (tianwang/testweb/changing.py).
        self.changing: Changes | None = None
        if changing:
            from tianwang.testweb.changing import Changes

            self.changing = Changes(seed, self)
        # Opt-in hosts of robots.txt, sitemaps, back-off and charsets (testweb/protocols.py).
        self.protocols: ProtocolWeb | None = None
        if protocols:
            from tianwang.testweb.protocols import ProtocolWeb

            self.protocols = ProtocolWeb()
        # Opt-in hosts that attack a whole crawl: link bombs, host farms, cookie floods,
        # servers that never answer (tianwang/testweb/floods.py).
        self.floods: FloodWeb | None = None
        if floods:
            from tianwang.testweb.floods import FloodWeb

            self.floods = FloodWeb()
        # Opt-in sites whose `/` fails and whose homepage is elsewhere (testweb/hiddenroot.py).
        self.hidden_roots: HiddenRoots | None = None
        if hidden_roots:
            from tianwang.testweb.hiddenroot import HiddenRoots

            self.hidden_roots = HiddenRoots(seed)
        # Opt-in https: per host its schemes and certificate case (tianwang/testweb/https.py).
        self.https: HttpsWeb | None = None
        if https:
            if junk or mirrors or changing:
                raise ValueError("--https goes with none of --junk, --mirrors, --changing")
            from tianwang.testweb.https import HttpsWeb

            only = "https" if https == "all" else None  # "all": every host https only
            self.https = HttpsWeb(seed, self.hosts, self._base_site, response_cache, only)

    @cached_property
    def hosts(self) -> list[str]:
        return [host_name(self.seed, index) + self.suffix for index in range(self.host_count)]

    @cached_property
    def _index(self) -> dict[str, int]:
        return {host: index for index, host in enumerate(self.hosts)}

    def homepages(self) -> list[str]:
        if self.https is not None:
            return [self.https.homepage(host) for host in self.hosts]
        return [f"http://{host}/" for host in self.hosts]

    def site(self, host: str | int) -> Site:
        """The model of one host (built on first use, then cached)."""
        index = host if isinstance(host, int) else self._index[host]
        site = self._sites.get(index)
        if site is None:
            site = self._sites.put(index, self._build(index))
        return site

    def _build(self, index: int) -> Site:
        site = self._base_site(index)
        if self.hidden_roots is not None:
            site = self.hidden_roots.apply(site, index)
        if self.mirrors is not None:
            self.mirrors.add(site, index)
        return site

    def _base_site(self, index: int) -> Site:
        return SiteBuilder(self.seed, index, self.host_count, self.hosts.__getitem__,
                           self.max_pages).build()

    def respond(self, url: str) -> Response:
        """The response for an absolute url: 502 for unknown hosts, 404 for unknown paths."""
        if self.protocols is not None:  # some answers change with each request: not cached
            answer = self.protocols.respond(url)
            if answer is not None:
                return answer
        if self.floods is not None:  # a 9 MB page is no cache's business
            answer = self.floods.respond(url)
            if answer is not None:
                return answer
        response = self._responses.get(url)
        if response is None:
            response = self._responses.put(url, self._respond(url))
        return response

    def _respond(self, url: str) -> Response:
        if self.https is not None:
            return self.https.respond(url)
        junk = self.junk.respond(url) if self.junk else None
        if junk is not None:
            return junk
        parts = urlsplit(url)
        try:
            port = parts.port
        except ValueError:
            port = -1
        index = self._index.get(parts.hostname or "")
        if parts.scheme != "http" or port not in (None, 80) or index is None:
            return status_response(502, parts.path or "/")
        site = self.site(index)
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        entry = site.entries.get(f"http://{site.host}{path}")
        if entry is None:
            return status_response(404, path)
        if entry.kind == "copy" and self.mirrors is not None:
            return self.respond(self.mirrors.copy_of[entry.url])  # the original's, verbatim
        response = entry_response(site, entry)
        if self.junk and entry.kind == "home":
            response = replace(response, body=self.junk.decorate(index, response.body))
        return response

    def truth(self, bodies: bool = True) -> Iterator[dict[str, Any]]:
        """One record per url: host order, then the homepage, then the rest sorted by url.

        bodies=False leaves out `bytes` and `md5`, which cost most of the time: the url
        graph of a few thousand hosts is then walked in seconds.
        """
        if self.https is not None:
            yield from self.https.truth(bodies)
            return
        for index in range(self.host_count):
            site = self._sites.get(index) or self._build(index)
            home = f"http://{site.host}/"
            for url in [home, *sorted(u for u in site.entries if u != home)]:
                record = truth_record(site, site.entries[url], bodies)
                if self.mirrors is not None:
                    record = self.mirrors.mark(record, self.respond)
                if self.junk:
                    body = render.body(site, site.entries[url]) if bodies else None
                    record = self.junk.mark(index, record, body)
                if self.changing is not None:
                    record = self.changing.mark(record)
                yield record
        if self.junk:
            yield from self.junk.truth(bodies)
        if self.protocols is not None:
            yield from self.protocols.truth()
