"""The test web's collection host list (issue 9): D0 url lists and the truth of every site.

Pure python. `CollectionWeb(seed, hosts, max_pages)` is the junk-enabled SyntheticWeb plus the
hosts a collection build (seed 004 chapter 3, docs/design.md section 11) must sort out, each class
made by construction, each with the step that removes it:

    class        step reason      what it is
    normal       -    -           a host of the web; url list = its urls (kept if >= 10 pages)
    small        D4   small       a normal host whose url list holds fewer than 10 urls
    malformed    D1   (MALFORMED) a broken name (empty or over-long label, no dot, bad TLD, "!")
    unreachable  D2   http-502    a name the proxy does not know (no DNS, refused: 502)
                      http-504    a name whose origin times out (the proxy's 504)
                      http-404    a server with no homepage
    alias        D3   alias       serves the same homepage bytes as the group's kept name
    port         D4   port        junk.PORT_HOSTS (not on port 80)
    ip           D4   ip          junk.IP_HOSTS written as dotted quads
    spam         D4   spam        junk families on the spam list (fangwen.com, ^u[0-9]+.a8blog.cn)
    digit        D4   digit       junk families with digit-led names
    family       D4   family      FAMILY_SIZE hosts of one registered domain, all ~20 pages
    multihost    -    -           MULTI hosts of one .edu.cn domain, sizes spread 12..300

Alias groups (the kept name follows the dealias rule: a name on the scheme's default port,
then a www name, then the most pages, then the smallest site string):
    www      www.X (kept) and bare X with more pages
    pages    bbs.X and mirror.X with more pages (mirror.X kept)
    tie      news.X and mirror.X with equal pages (the smaller site string kept)
    port     www.X:80 (kept) and www.X:8080 with more pages
    redirect www.X (kept) and bare X answering 301 -> http://www.X/ (same final bytes)

Pages are what the url lists hold for a site; D3 gives a kept name its aliases' pages too
(summed), so the D4 "small" rule sees the whole group. The url lists split each site's urls
over `lists` files round robin, so most sites appear in several lists (D0 sums them).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property
from random import Random
from typing import Any

from tianwang.testweb.junk import IP_HOSTS, PORT_HOSTS, SPAM_LIST
from tianwang.testweb.model import SyntheticWeb
from tianwang.testweb.render import status_page
from tianwang.testweb.response import Response

MIN_PAGES = 10  # seed 004: hosts with fewer pages are dropped
FAMILY_DOMAIN = "freeblog8.com.cn"  # the outlier family's registered domain (two-label suffix)
FAMILY_SIZE = 50  # hosts in the outlier family ...
FAMILY_PAGES = (18, 22)  # ... each with this many pages (uniform)
MULTI_DOMAIN = "yanyuan8.edu.cn"  # a real multi-host domain: kept (sizes spread out)
MULTI_LABELS = ("www", "news", "lib", "cs", "math", "phy", "chem", "bio", "law", "art", "jwc",
                "bbs")
MULTI_PAGES = (12, 300)  # its sizes, spread evenly on a log scale
JUNK_PER_GROUP = 20  # hosts taken from each junk family group (domain, reason)
JUNK_PAGES = (15, 25)
# Broken names and the reason `hosts clean` gives each (its documented reasons).
MALFORMED = {"www..emptylabel.com": "empty-label", "nodotname": "no-dot",
             "www." + "a" * 64 + ".com": "long-label", "www.shop.c0m": "bad-tld",
             "www.bad!name.com": "bad-char"}
UNREACHABLE = {"http-502": ("www.gone1.com", "bbs.gone2.net", "www.gone3.com.cn"),
               "http-504": ("www.slow1.com", "www.slow2.org"),
               "http-404": ("www.nohome1.com", "www.nohome2.net")}
SMALL_TRUNCATED = 2  # normal hosts whose url list is cut to 3..9 urls
_OCTET = r"(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)"
_DOTTED = re.compile(rf"^{_OCTET}(?:\.{_OCTET}){{3}}$")  # an IP as D0 writes it


@dataclass
class ListedSite:
    """One name of the host list and what each collection step must do with it."""

    host: str  # as written in a url: lowercase, ":port" only when not 80
    pages: int
    cls: str
    step: str | None = None  # "D1".."D4", None for a site in D4
    reason: str | None = None
    alias_of: str | None = None  # the kept site of its alias group
    group_pages: int | None = None  # a kept alias group name: the group's summed pages
    urls: list[str] = field(default_factory=list)

    @property
    def site(self) -> str:
        host, _, port = self.host.partition(":")  # no IPv6 literal among the names
        return f"http://{host}:{port or 80}/"


class CollectionWeb:
    """The served web (proxy answers) and the host list with its truth."""

    changing = None  # the server asks; a collection web has no clock
    junk = None  # its junk hosts are among its own names (`testweb hosts` asks)

    def __init__(self, seed: int, hosts: int, max_pages: int = 300) -> None:
        if hosts < 20:
            raise ValueError(f"a collection web needs >= 20 hosts (its alias groups), not {hosts}")
        self.seed = seed
        self.web = SyntheticWeb(seed, hosts, max_pages, junk=True)
        self.rng = Random(f"collection:{seed}")
        self.redirects: dict[str, str] = {}  # netloc -> Location of its homepage
        self.alias_netlocs: dict[str, str] = {}  # alias netloc -> the web host it serves
        self.templated: set[str] = set()  # family and multihost names: one template page each
        self.status_hosts: dict[str, int] = {}  # name -> status of every answer

    @property
    def hosts(self) -> list[str]:
        return [s.host for s in self.sites]

    def homepages(self) -> list[str]:
        """Every name's homepage, as `testweb hosts --collection` prints them."""
        return [f"http://{host}/" for host in self.hosts]

    @cached_property
    def sites(self) -> list[ListedSite]:
        sites = self._normal()
        sites += self._aliases(sites)
        sites += self._unreachable() + self._malformed() + self._junk()
        sites += self._family() + self._multihost()
        self._mark_small(sites)
        return sites

    # -- the classes ----------------------------------------------------------------------

    def _normal(self) -> list[ListedSite]:
        sites = []
        for index, host in enumerate(self.web.hosts):
            urls = sorted(self.web.site(index).entries)
            sites.append(ListedSite(host, len(urls), "normal", urls=urls))
        for site in self.rng.sample(sites, SMALL_TRUNCATED):
            if site.pages >= MIN_PAGES:
                site.urls = site.urls[: self.rng.randint(3, MIN_PAGES - 1)]
                site.pages = len(site.urls)
        return sites

    def _aliases(self, normal: list[ListedSite]) -> list[ListedSite]:
        www = [s for s in normal if s.host.startswith("www.")]
        other = [s for s in normal if not s.host.startswith("www.")]
        if len(www) < 3 or len(other) < 2:
            raise ValueError("too few www and other hosts for the alias groups; more hosts")
        picked_www, picked_other = self.rng.sample(www, 3), self.rng.sample(other, 2)
        bare = picked_www[0].host[4:]
        port = picked_www[1].host + ":8080"
        redirect = picked_www[2].host[4:]
        rest = [s.host.split(".", 1)[1] for s in picked_other]
        groups = [
            (picked_www[0], bare, picked_www[0].pages + 25),
            (picked_other[0], f"mirror.{rest[0]}", picked_other[0].pages + 15),
            (picked_other[1], f"mirror.{rest[1]}", picked_other[1].pages),
            (picked_www[1], port, picked_www[1].pages + 40),
            (picked_www[2], redirect, 5),
        ]
        aliases = []
        for original, name, pages in groups:
            if name == redirect:
                self.redirects[name] = f"http://{original.host}/"
            else:
                self.alias_netlocs[name] = original.host
            alias = ListedSite(name, pages, "alias", urls=_urls_on(name, original.urls, pages))
            kept, dropped = _keep_order(original, alias)
            for site in dropped:
                site.cls, site.step, site.reason, site.alias_of = "alias", "D3", "alias", kept.site
            kept.cls = "normal"
            kept.group_pages = original.pages + alias.pages
            aliases.append(alias)
        return aliases

    def _unreachable(self) -> list[ListedSite]:
        sites = []
        for reason, names in UNREACHABLE.items():
            for name in names:
                if reason != "http-502":  # 502 is the web's answer for a name it does not know
                    self.status_hosts[name] = int(reason[5:])
                sites.append(self._made(name, "unreachable", "D2", reason))
        return sites

    def _malformed(self) -> list[ListedSite]:
        return [self._made(name, "malformed", "D1", why) for name, why in MALFORMED.items()]

    def _junk(self) -> list[ListedSite]:
        assert self.web.junk is not None
        sites = [self._made(h, "port", "D4", "port") for h in PORT_HOSTS]
        sites += [self._made(h, "ip", "D4", "ip") for h in IP_HOSTS if _DOTTED.match(h)]
        groups: dict[tuple[str, str], list[str]] = {}
        for host, (domain, why) in self.web.junk.families.items():
            groups.setdefault((domain, why), []).append(host)
        for (_domain, why), hosts in groups.items():
            sites += [self._made(h, why, "D4", why, JUNK_PAGES) for h in hosts[:JUNK_PER_GROUP]]
        return sites

    def _family(self) -> list[ListedSite]:
        rng, names = Random(f"family:{self.seed}"), set()
        while len(names) < FAMILY_SIZE:
            names.add(f"{rng.choice('abcdefghkmnpqrstwxyz')}{rng.randint(1, 9999)}.{FAMILY_DOMAIN}")
        self.templated |= names
        return [self._made(n, "family", "D4", "family", FAMILY_PAGES) for n in sorted(names)]

    def _multihost(self) -> list[ListedSite]:
        low, high = MULTI_PAGES
        step = (high / low) ** (1 / (len(MULTI_LABELS) - 1))
        sites = []
        for k, label in enumerate(MULTI_LABELS):
            name = f"{label}.{MULTI_DOMAIN}"
            self.templated.add(name)
            pages = round(low * step**k)
            sites.append(ListedSite(name, pages, "multihost", urls=_urls_on(name, [], pages)))
        return sites

    def _made(self, name: str, cls: str, step: str, reason: str,
              pages: tuple[int, int] = (10, 40)) -> ListedSite:
        count = self.rng.randint(*pages)
        return ListedSite(name, count, cls, step, reason, urls=_urls_on(name, [], count))

    def _mark_small(self, sites: list[ListedSite]) -> None:
        for site in sites:
            if site.step is None and (site.group_pages or site.pages) < MIN_PAGES:
                site.cls = "small" if site.cls == "normal" else site.cls
                site.step, site.reason = "D4", "small"

    # -- serving --------------------------------------------------------------------------

    def respond(self, url: str) -> Response:
        """The proxy's answer: a collection name's, else the junk web's and normal web's."""
        self.sites  # noqa: B018 - builds the maps below
        scheme, _, rest = url.partition("://")
        netloc, slash, path = rest.partition("/")
        netloc, path = netloc.lower().removesuffix(":80"), slash + path or "/"
        if netloc in self.status_hosts:
            return _status(self.status_hosts[netloc], path)
        if netloc in self.redirects and path == "/":
            location = self.redirects[netloc]
            return Response(301, [("Content-Type", "text/html; charset=utf-8"),
                                  ("Location", location)], status_page(301, path))
        if netloc in self.alias_netlocs:
            return self.web.respond(f"{scheme}://{self.alias_netlocs[netloc]}{path}")
        if netloc in self.templated:
            if path != "/":
                return _status(404, path)
            return Response(200, [("Content-Type", "text/html; charset=utf-8")], _home(netloc))
        return self.web.respond(url)

    # -- truth ----------------------------------------------------------------------------

    def url_lists(self, lists: int = 3) -> list[list[str]]:
        """Every site's urls dealt round robin over `lists` lists (one per crawl machine)."""
        out: list[list[str]] = [[] for _ in range(lists)]
        turn = 0
        for site in self.sites:
            for url in site.urls:
                out[turn % lists].append(url)
                turn += 1
        return out

    def truth(self) -> Iterator[dict[str, Any]]:
        """One record per site, in host list order."""
        for site in self.sites:
            record = {"site": site.site, "host": site.host, "pages": site.pages,
                      "class": site.cls, "step": site.step, "reason": site.reason,
                      "alias_of": site.alias_of, "group_pages": site.group_pages}
            record |= self._home_truth(site)
            yield record

    def _home_truth(self, site: ListedSite) -> dict[str, Any]:
        """What fetching the homepage gives: final url, status and body MD5."""
        if site.step == "D1":
            return {"final_url": None, "status": None, "md5": None}
        url = f"http://{site.host}/"
        answer = self.respond(url)
        if answer.status in (301, 302):
            url = answer.header("Location") or url
            answer = self.respond(url)
        md5 = hashlib.md5(answer.body).hexdigest() if answer.status == 200 else None
        return {"final_url": url, "status": answer.status, "md5": md5}


def _keep_order(a: ListedSite, b: ListedSite) -> tuple[ListedSite, list[ListedSite]]:
    """The dealias rule on two names: default port, then www, then pages, then the string."""

    def key(s: ListedSite) -> tuple:
        return (":" in s.host, not s.host.startswith("www."), -s.pages, s.site)

    first, second = sorted((a, b), key=key)
    return first, [second]


def _urls_on(host: str, model: list[str], count: int) -> list[str]:
    """`count` urls on host: the paths of `model` first, then made-up pages."""
    paths = [u.partition("://")[2].partition("/")[2] for u in model][:count]
    paths += [f"listed/{k}.html" for k in range(count - len(paths))]
    return [f"http://{host}/{p}" for p in paths]


def _home(host: str) -> bytes:
    return ("<!DOCTYPE html>\n<html><head><title>Welcome</title></head>\n"
            f"<body><h1>{host}</h1>\n<p>Articles, photos and a guest book.</p>\n"
            "</body></html>\n").encode("ascii")


def _status(status: int, path: str) -> Response:
    return Response(status, [("Content-Type", "text/html; charset=utf-8")],
                    status_page(status, path))


def spam_list() -> str:
    """The spam list the collection is filtered with (the junk web's)."""
    return SPAM_LIST

