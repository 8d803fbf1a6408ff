"""The url graph of one host: pages, resources, redirects, dead links and robots.txt.

Pure python. A site is built in one pass from its own random stream, so the server can
build any host alone, in any order, and get the same answer as truth() does.
"""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from random import Random

from tianwang.testweb import layout
from tianwang.testweb.layout import Directory, pick
from tianwang.testweb.names import draw_host_name, host_rng

GBK_SHARE = 0.3  # share of hosts whose pages are GBK (the rest UTF-8)
ROBOTS_SHARE = 0.3  # share of hosts with a robots.txt (the rest answer 404)
ALIAS_SHARE = 0.35  # share of hosts where /index.htm or /default.asp redirects to /
DEEP_SHARE = 0.25  # share of hosts (of 6+ pages) with a directory chain of depth 9+
# Chance that an html page links a resource or a dead url of each kind (it owns that url);
# a page has at most one of them.
EXTRAS = (("image", 0.08), ("pdf", 0.015), ("binary", 0.012), ("missing", 0.02), ("error", 0.01))
HIDDEN_SHARE = 0.025  # html pages reachable only through an /old/ redirect
TEXT_MIMES = {"home": "text/html", "html": "text/html", "text": "text/plain"}
CROSS_SHARE = 0.15  # chance an inner page links another host's homepage


@dataclass(slots=True)
class Entry:
    """One url of the host and everything needed to serve it."""

    url: str
    path: str
    kind: str
    status: int = 200
    mime: str = "text/html"
    charset: str | None = None
    header_charset: bool = True  # False: the charset is declared only in a <meta>
    location: str | None = None
    links: list[str] = field(default_factory=list)  # as written, duplicates kept
    seed: int = 0
    robots_allowed: bool = True
    distance: int | None = None  # in-host link distance from the homepage
    anchor: str | None = None  # the text of every link to it, when not the usual (hiddenroot.py)


@dataclass(slots=True)
class Site:
    host: str
    robots: str | None  # robots.txt body, None when the host has none
    entries: dict[str, Entry]


class SiteBuilder:
    """Builds host `index`; `name_of(j)` gives the name of host j for cross-host links."""

    def __init__(self, seed: int, index: int, hosts: int, name_of: Callable[[int], str],
                 max_pages: int) -> None:
        self.rng = host_rng(seed, index)
        draw_host_name(self.rng, index)  # what the name draws from the host's stream
        self.host = name_of(index)  # as the web names it (with its suffix, if any)
        self.index, self.hosts, self.name_of = index, hosts, name_of
        self.size = layout.draw_size(self.rng, max_pages)
        self.encoding = "gbk" if self.rng.random() < GBK_SHARE else "utf-8"
        self.header_share = 0.5 if self.encoding == "gbk" else 0.8
        self.entries: dict[str, Entry] = {}
        self.kids: defaultdict[str, list[str]] = defaultdict(list)
        self.counter = 0

    def build(self) -> Site:
        rng = self.rng
        robots = rng.random() < ROBOTS_SHARE
        private = robots and rng.random() < 0.5
        alias = rng.choice(("/index.htm", "/default.asp")) if rng.random() < ALIAS_SHARE else None
        home = self._page("/", "home", None)
        roots = self._root_pages(home)
        dirs = self._directories(self.size - 1 - len(roots), private)
        homes = [home.url]
        if alias and (dirs or any(r.kind == "html" for r in roots)):  # else none would link it
            homes.append(self._alias(alias))
        home.links = self._home_links(home, dirs)
        for page in roots:
            if page.kind == "html":
                page.links = self._root_links(page, homes, roots, dirs)
        for d in dirs:
            for page in d.pages + d.hidden:
                if page.kind == "html":
                    page.links = self._dir_links(page, d, homes, roots, dirs)
        robots_text = self._robots(dirs, private) if robots else None
        self._distances(home)
        self.entries[f"http://{self.host}/robots.txt"] = _robots_entry(self.host, robots_text)
        return Site(self.host, robots_text, self.entries)

    # -- urls ---------------------------------------------------------------------------

    def _next(self) -> int:
        self.counter += 1
        return self.counter

    def _add(self, entry: Entry, parent: Entry | None) -> Entry:
        self.entries[entry.url] = entry
        if parent is not None:
            self.kids[parent.url].append(entry.url)
        return entry

    def _page(self, path: str, kind: str, parent: Entry | None, prefix: str = "/") -> Entry:
        """A text page (home, html or text) linked from parent; html pages get extras."""
        if path.endswith(".txt"):
            kind = "text"
        header = kind == "text" or self.rng.random() < self.header_share
        entry = Entry(f"http://{self.host}{path}", path, kind, mime=TEXT_MIMES[kind],
                      charset=self.encoding, header_charset=header, seed=self.rng.getrandbits(32))
        self._add(entry, parent)
        if kind != "text":
            draw = self.rng.random()  # one draw, at most one extra: pages are many
            for extra, chance in EXTRAS:
                if draw < chance:
                    self._resource(extra, entry, prefix)
                    break
                draw -= chance
        return entry

    def _resource(self, kind: str, owner: Entry, prefix: str) -> None:
        path, mime = resource_path(self.rng, kind, prefix, self._next())
        status = {"missing": 404, "error": 500}.get(kind, 200)
        charset = "utf-8" if status != 200 else None
        entry = Entry(f"http://{self.host}{path}", path, kind, status=status, mime=mime,
                      charset=charset, seed=self.rng.getrandbits(32))
        self._add(entry, owner)

    def _redirect(self, path: str, target: str, status: int, parent: Entry | None) -> Entry:
        entry = Entry(f"http://{self.host}{path}", path, "redirect", status=status,
                      charset="utf-8", location=target)
        return self._add(entry, parent)

    def _alias(self, path: str) -> str:
        return self._redirect(path, f"http://{self.host}/", 301, None).url

    # -- structure ----------------------------------------------------------------------

    def _root_pages(self, home: Entry) -> list[Entry]:
        n = self.size - 1
        count = min(n, len(layout.ROOT_PAGES), self.rng.randint(0, 2) + n // 25)
        names = self.rng.sample(layout.ROOT_PAGES, count)
        return [self._page(f"/{name}", "html", home) for name in names]

    def _directories(self, pages: int, private: bool) -> list[Directory]:
        planned = layout.plan_directories(self.rng, pages, private)
        if planned and self.size >= 6 and self.rng.random() < DEEP_SHARE:
            layout.make_deep(self.rng, planned[0][0])
        for d, count in planned:
            self._fill(d, count)
        return [d for d, _count in planned]

    def _fill(self, d: Directory, count: int) -> None:
        """The index (linked from home) and count - 1 pages hung below it as a tree."""
        prefix = f"/{d.name}/"
        d.index = self._page(d.index_path(self.rng), "html", None, prefix)
        d.pages.append(d.index)
        d.hubs.append(d.index)
        for i in range(count - 1):
            text = self.rng.random() < d.text_share
            path = layout.page_path(self.rng, d, self._next(), text, first=i == 0)
            if not text and self.rng.random() < HIDDEN_SHARE:
                self._hidden(d, path, prefix)
                continue
            parent = d.hubs[min(d.attached // d.fanout, len(d.hubs) - 1)]
            d.attached += 1
            page = self._page(path, "html", parent, prefix)
            d.pages.append(page)
            if page.kind == "html":
                d.hubs.append(page)

    def _hidden(self, d: Directory, path: str, prefix: str) -> None:
        """A page linked from nowhere: only /old/<path> leads to it, by a 301 or 302."""
        tail = path[len(prefix):]
        target = self._page(f"{prefix}archive/{tail}", "html", None, prefix)
        source = self.rng.choice(d.hubs)
        self._redirect(f"/old{prefix}{tail}", target.url, self.rng.choice((301, 302)), source)
        d.hidden.append(target)

    # -- links --------------------------------------------------------------------------

    def _cross(self) -> str:
        other = int(self.rng.random() * (self.hosts - 1))
        other += other >= self.index
        return f"http://{self.name_of(other)}/"

    def _home_links(self, home: Entry, dirs: list[Directory]) -> list[str]:
        links = [d.index.url for d in dirs if d.index]
        links += self.kids[home.url]  # the root pages, and the homepage's own extras
        if self.hosts > 1:
            links += [self._cross() for _ in range(self.rng.randint(1, 4))]
        return links

    def _root_links(self, page: Entry, homes: list[str], roots: list[Entry],
                    dirs: list[Directory]) -> list[str]:
        rng = self.rng
        first = next(r for r in roots if r.kind == "html")
        links = [homes[-1] if page is first else rng.choice(homes)]  # the alias gets linked
        links += [r.url for r in rng.sample(roots, min(2, len(roots)))]
        links += [d.index.url for d in rng.sample(dirs, min(2, len(dirs))) if d.index]
        return links + self.kids[page.url] + self._footer(page, [], [])

    def _dir_links(self, page: Entry, d: Directory, homes: list[str], roots: list[Entry],
                   dirs: list[Directory]) -> list[str]:
        """Most links stay in the page's own directory (seed 002: 74% share a path key)."""
        rng = self.rng
        if page is d.index:
            links = [homes[-1]]  # the alias, if any, is linked from every directory index
        else:
            links = [pick(rng, homes)]
            links += [d.index.url] if d.index else []
        links += self.kids[page.url]
        links += [pick(rng, d.pages).url for _ in range(2 + int(rng.random() * 6))]
        return links + self._footer(page, roots, [o for o in dirs if o is not d])

    def _footer(self, page: Entry, roots: list[Entry], others: list[Directory]) -> list[str]:
        rng, links = self.rng, []
        if others and rng.random() < 0.4:
            other = pick(rng, others).index
            links += [other.url] if other else []
        if roots and rng.random() < 0.15:
            links.append(pick(rng, roots).url)
        if self.hosts > 1 and rng.random() < CROSS_SHARE:
            links.append(self._cross())
        return links

    # -- robots and distances -----------------------------------------------------------

    def _robots(self, dirs: list[Directory], private: bool) -> str:
        """A robots.txt for `*` (sometimes after a group shutting out one bad bot)."""
        rng = self.rng
        lines = ["User-agent: BadBot", "Disallow: /", ""] if rng.random() < 0.3 else []
        lines.append("User-agent: *")
        closed = "/private/" if private or len(dirs) < 2 else f"/{dirs[-1].name}/"
        disallow = [closed] + (["/cgi-bin/"] if rng.random() < 0.4 else [])
        lines += [f"Disallow: {prefix}" for prefix in disallow]
        for entry in self.entries.values():
            entry.robots_allowed = not entry.path.startswith(tuple(disallow))
        return "\n".join(lines) + "\n"

    def _distances(self, home: Entry) -> None:
        """Breadth-first link distance over in-host links; a redirect passes its own on."""
        home.distance = 0
        queue = deque([home])
        while queue:
            entry = queue.popleft()
            targets = [entry.location] if entry.location else entry.links
            for url in targets:
                target = self.entries.get(url)
                if target is not None and target.distance is None:
                    target.distance = entry.distance if entry.location else entry.distance + 1
                    queue.append(target)


def resource_path(rng: Random, kind: str, prefix: str, k: int) -> tuple[str, str]:
    """(path, mime) of a linked non-page url owned by a page under prefix."""
    if kind == "image":
        if rng.random() < 0.1:  # no telling extension: the type is only in the header
            return f"{prefix}showimg.asp?id={k}", "image/jpeg"
        ext = pick(rng, ("jpg", "jpg", "gif"))
        folder = pick(rng, ("images/", "uploadfile/", "pic/"))
        return f"{prefix}{folder}{k}.{ext}", "image/gif" if ext == "gif" else "image/jpeg"
    if kind == "pdf":
        return f"{prefix}files/{pick(rng, layout.TEXT_STEMS)}{k}.pdf", "application/pdf"
    if kind == "binary":
        if rng.random() < 0.4:
            return f"{prefix}down.php?id={k}", "application/octet-stream"
        ext = pick(rng, ("zip", "rar", "exe"))
        return f"{prefix}soft/setup{k}.{ext}", "application/octet-stream"
    if kind == "missing":
        return f"{prefix}{pick(rng, layout.STEMS)}{k}.html", "text/html"
    if rng.random() < 0.5:
        return f"/cgi-bin/count.cgi?id={k}", "text/html"
    return f"{prefix}comment.php?id={k}", "text/html"


def _robots_entry(host: str, text: str | None) -> Entry:
    if text is None:
        return Entry(f"http://{host}/robots.txt", "/robots.txt", "robots", status=404,
                     charset="utf-8")
    return Entry(f"http://{host}/robots.txt", "/robots.txt", "robots", mime="text/plain",
                 charset="utf-8")
