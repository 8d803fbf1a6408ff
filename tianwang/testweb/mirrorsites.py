"""The test web's mirrored content (opt-in: SyntheticWeb(mirrors=True), `--mirrors`).

Pure python. The same body under several urls, the three ways seed 004 (section 3.5) met it:
a host's `/` also served as `/default.htm`; a page also served with a query string that does
not change it (`?sessionid=...`); and a page of one host copied whole onto another host, at
the same path. A copy answers exactly what its original answers (status, headers, body).

Each copy is linked from a page of its own host at link distance 0 or 1, so a three-level
in-host crawl reaches it. truth() gives every url a "copy_of": the url it copies (None for the
rest); a copy's links are those of its body read at its own url (relative links of a copy on
another host lead to that host). Each host's copies follow from its own random stream.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from html import unescape
from random import Random
from typing import Any
from urllib.parse import urljoin

from tianwang.testweb.sitebuilder import Entry, Site

DEFAULT_SHARE = 0.5  # hosts whose homepage is also /default.htm
SESSION_SHARE = 0.5  # hosts with pages also served under ?sessionid=
SESSION_COPIES = (1, 3)  # how many such pages, at least and at most
CROSS_SHARE = 0.4  # hosts holding a copy of another host's page
_HREF = re.compile(r"""<(?:a|area)\b[^>]*?\bhref="([^"]*)\"""")


class Mirrors:
    """Adds copies to sites as they are built; knows what each copy copies."""

    def __init__(self, seed: int, hosts: list[str], base_site: Callable[[int], Site]) -> None:
        self.seed, self.hosts, self.base_site = seed, hosts, base_site
        self.copy_of: dict[str, str] = {}  # copy url -> original url

    def add(self, site: Site, index: int) -> None:
        """Put host `index`'s copies into its entries, and links to them into its pages."""
        rng = Random(f"{self.seed}:mirrors:{index}")
        linkers = [e for e in site.entries.values() if e.kind in ("home", "html")
                   and e.distance is not None and e.distance <= 1 and e.robots_allowed]
        if not linkers:
            return
        home = site.entries[f"http://{site.host}/"]
        if rng.random() < DEFAULT_SHARE:
            self._copy(site, rng, linkers, f"http://{site.host}/default.htm", home)
        if rng.random() < SESSION_SHARE:
            pages = [e for e in site.entries.values() if e.kind in ("html", "text")
                     and e.distance is not None and e.distance <= 2]
            for page in rng.sample(pages, min(len(pages), rng.randint(*SESSION_COPIES))):
                joiner = "&" if "?" in page.url else "?"
                url = f"{page.url}{joiner}sessionid={rng.getrandbits(64):016x}"
                self._copy(site, rng, linkers, url, page)
        if len(self.hosts) > 1 and rng.random() < CROSS_SHARE:
            other = rng.choice([i for i in range(len(self.hosts)) if i != index])
            pages = [e for e in self.base_site(other).entries.values()
                     if e.kind in ("html", "text") and e.status == 200]
            if pages:
                page = rng.choice(pages)
                self._copy(site, rng, linkers, f"http://{site.host}{page.path}", page)

    def _copy(self, site: Site, rng: Random, linkers: list[Entry], url: str,
              original: Entry) -> None:
        if url in site.entries:
            return  # the path is taken on this host: no copy there
        linker = rng.choice(linkers)
        path = url[len(f"http://{site.host}"):]
        entry = Entry(url, path, "copy", mime=original.mime, charset=original.charset,
                      distance=linker.distance + 1,  # type: ignore[operator]
                      robots_allowed=_allowed(site.robots, path))
        site.entries[url] = entry
        linker.links.append(url)
        self.copy_of[url] = original.url

    def mark(self, record: dict[str, Any], respond: Callable[[str], Any]) -> dict[str, Any]:
        """A truth record with its copy_of; a copy's body is its original's, its links are
        read from that body at the copy's own url."""
        original = self.copy_of.get(record["url"])
        record["copy_of"] = original
        if original is not None:
            body = respond(record["url"]).body
            record["links"] = links_in(body, record["url"])
            if "md5" in record:
                record["bytes"], record["md5"] = len(body), hashlib.md5(body).hexdigest()
        return record


def links_in(body: bytes, url: str) -> list[str]:
    """The http links of an html body of this web, absolute, without fragments, in order."""
    text = body.decode("latin-1")  # hrefs of this web are ascii; the rest is not looked at
    links: dict[str, None] = {}
    for href in _HREF.findall(text):
        href = unescape(href)
        if href.startswith(("mailto:", "javascript:", "#")):
            continue
        links[urljoin(url, href).split("#", 1)[0]] = None
    return list(links)


def _allowed(robots: str | None, path: str) -> bool:
    """Whether the host's robots.txt lets `*` fetch path (the web writes simple files)."""
    if robots is None:
        return True
    group, disallowed = "", []
    for line in robots.splitlines():
        name, _, value = line.partition(":")
        if name.strip().lower() == "user-agent":
            group = value.strip()
        elif name.strip().lower() == "disallow" and group == "*" and value.strip():
            disallowed.append(value.strip())
    return not path.startswith(tuple(disallowed))
