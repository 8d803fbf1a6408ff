"""Opt-in https on the test web (`serve --https`): which schemes each host serves.

Pure python (the certificates themselves are made in tls.py, by the server). Each host has
one kind, drawn from the web's seed, so the server and truth() agree:

- http        plain http only, as without --https (a CONNECT to it is refused)
- https       https only; nothing answers plain http (502, as a closed port 80)
- redirect    https, and plain http answers 301 to the same path over https
- both        the same site over http and https; a page's https copy differs from its
              http copy only where it writes a same-host link as an absolute url
- expired, self_signed, wrong_name   https only, with that certificate problem

Links to a host are written with the scheme its pages are reached by: https for https-only
hosts, http for the rest (links to a `redirect` host from other hosts are old http links, so
a crawl meets the redirect). Every truth record carries `scheme` and `tls` (None for http,
else valid, expired, self_signed or wrong_name).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace
from random import Random
from typing import Any
from urllib.parse import urlsplit

from tianwang.testweb import render
from tianwang.testweb.response import (
    LRU,
    Response,
    entry_response,
    status_response,
    truth_record,
)
from tianwang.testweb.sitebuilder import Site

KINDS = ("http", "https", "redirect", "both", "expired", "self_signed", "wrong_name")
WEIGHTS = (0.2, 0.3, 0.25, 0.13, 0.04, 0.04, 0.04)  # most of today's web is https
BAD_CERTS = frozenset(("expired", "self_signed", "wrong_name"))
DEFAULT_PORTS = {"http": 80, "https": 443}


def host_kind(seed: int, index: int) -> str:
    """The first hosts take one kind each, so any web of 7+ hosts has every kind."""
    if index < len(KINDS):
        return KINDS[index]
    return Random(f"{seed}:https:{index}").choices(KINDS, WEIGHTS)[0]


class HttpsWeb:
    """The scheme layer over a SyntheticWeb's sites: rewrites urls, answers, truth."""

    def __init__(self, seed: int, hosts: list[str], base_site: Callable[[int], Site],
                 cache: int = 4096, only: str | None = None) -> None:
        """only="https": every host https only with a valid certificate (bench/https.py)."""

        self.hosts = hosts
        self.kinds = {host: only or host_kind(seed, i) for i, host in enumerate(hosts)}
        self._index = {host: i for i, host in enumerate(hosts)}
        self._base_site = base_site
        self._sites: LRU[tuple[int, str], Site] = LRU(cache)

    def schemes(self, host: str) -> tuple[str, ...]:
        kind = self.kinds[host]
        return {"http": ("http",), "both": ("http", "https")}.get(kind, ("https",))

    def link_scheme(self, host: str) -> str:
        """The scheme other hosts' pages write in a link to this host."""
        return "https" if self.kinds[host] in BAD_CERTS | {"https"} else "http"

    def tls(self, host: str) -> str | None:
        """None when the host has no https; else its certificate's case."""
        kind = self.kinds[host]
        if kind == "http":
            return None
        return kind if kind in BAD_CERTS else "valid"

    def homepage(self, host: str) -> str:
        return f"{self.schemes(host)[0]}://{host}/"

    def site(self, index: int, scheme: str) -> Site:
        """Host `index` as served over `scheme`: its urls and links rewritten."""
        site = self._sites.get((index, scheme))
        if site is None:
            site = self._sites.put((index, scheme), self._rewrite(self._base_site(index), scheme))
        return site

    def _rewrite(self, site: Site, scheme: str) -> Site:
        def move(url: str) -> str:
            if not url.startswith("http://"):
                return url
            host = url[7:].split("/", 1)[0]
            if host == site.host:
                return f"{scheme}{url[4:]}"
            if host in self.kinds:
                return f"{self.link_scheme(host)}{url[4:]}"
            return url

        entries = {}
        for entry in site.entries.values():
            location = move(entry.location) if entry.location else None
            moved = replace(entry, url=move(entry.url), links=[move(u) for u in entry.links],
                            location=location)
            entries[moved.url] = moved
        return Site(site.host, site.robots, entries)

    # -- serving ------------------------------------------------------------------------

    def respond(self, url: str) -> Any:

        parts = urlsplit(url)
        try:
            port = parts.port
        except ValueError:
            port = -1
        host, scheme = parts.hostname or "", parts.scheme
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        if host not in self.kinds or port not in (None, DEFAULT_PORTS.get(scheme)):
            return status_response(502, parts.path or "/")
        if scheme not in self.schemes(host):
            if scheme == "http" and self.kinds[host] == "redirect":
                return redirect_response(f"https://{host}{path}", path)
            return status_response(502, parts.path or "/")  # nothing listens there
        site = self.site(self._index[host], scheme)
        entry = site.entries.get(f"{scheme}://{host}{path}")
        if entry is None:
            return status_response(404, path)
        return entry_response(site, entry)

    # -- truth --------------------------------------------------------------------------

    def truth(self, bodies: bool) -> Iterator[dict[str, Any]]:

        for index, host in enumerate(self.hosts):
            tls = self.tls(host)
            for scheme in self.schemes(host):
                site = self.site(index, scheme)
                home = f"{scheme}://{host}/"
                for url in [home, *sorted(u for u in site.entries if u != home)]:
                    record = truth_record(site, site.entries[url], bodies)
                    yield record | {"scheme": scheme, "tls": tls if scheme == "https" else None}
            if self.kinds[host] == "redirect":
                yield from self._redirects(self.site(index, "https"), bodies)

    def _redirects(self, site: Site, bodies: bool) -> Iterator[dict[str, Any]]:
        """The http url of every page of a `redirect` host: a 301 to its https url."""
        for url in sorted(site.entries):
            entry = site.entries[url]
            record = {
                "url": "http" + url[5:], "host": site.host, "status": 301,
                "content_type": "text/html", "links": [], "kind": "scheme_redirect",
                "location": url, "charset": "utf-8", "robots_allowed": entry.robots_allowed,
                "distance": entry.distance, "scheme": "http", "tls": None,
            }
            if bodies:
                body = redirect_response(url, entry.path).body
                record["bytes"] = len(body)
                record["md5"] = _md5(body)
            yield record


def redirect_response(location: str, path: str) -> Response:
    headers = [("Content-Type", "text/html; charset=utf-8"), ("Location", location)]
    return Response(301, headers, render.status_page(301, path))


def _md5(body: bytes) -> str:
    import hashlib

    return hashlib.md5(body).hexdigest()
