"""Sites whose root is hidden (opt-in: SyntheticWeb(hidden_roots=True), `--hidden-roots`).

Pure python. The sites a homepage finder (seed 001's PERS, tianwang/analysis/homepage.py)
must work on: `/` answers 404 and the homepage lives elsewhere (`/cms/index.asp`, ...), as on
sites whose front page is a script or a portal path and whose bare host name fails. Every
link the site's own pages make to `/` points to the new place instead (and is written, as
links to a homepage are, with the anchor text 首页); links from other hosts still point to
`/`, and a crawl reaching it there gets the 404, as a validate step would.

Host index i hides its root when i % HIDDEN_EVERY == 1. The truth: the `/` record of such a
host has status 404 and kind "missing"; its homepage is the one record of kind "home".
"""

from __future__ import annotations

from dataclasses import replace
from random import Random

from tianwang.testweb.sitebuilder import Entry, Site

HIDDEN_EVERY = 3
HOME_PATHS = ("/cms/index.asp", "/portal/main.php", "/web/default.htm", "/home.jsp",
              "/cn/index.shtml", "/main.aspx")


def hides_root(index: int) -> bool:
    return index % HIDDEN_EVERY == 1


def home_path(seed: int, index: int, site: Site) -> str:
    """Where host `index` keeps its homepage: one of HOME_PATHS not already taken."""
    rng = Random(f"{seed}:hidden-root:{index}")
    free = [p for p in HOME_PATHS if f"http://{site.host}{p}" not in site.entries]
    return rng.choice(free)


def hide_root(site: Site, path: str) -> Site:
    """The site with its homepage moved to `path` and `/` answering 404."""
    root = f"http://{site.host}/"
    home = site.entries[root]
    moved = f"http://{site.host}{path}"

    def repoint(url: str | None) -> str | None:
        return moved if url == root else url

    entries: dict[str, Entry] = {}
    for url, entry in site.entries.items():
        if url == root:
            continue
        entries[url] = replace(entry, links=[repoint(u) for u in entry.links],
                               location=repoint(entry.location))
    entries[moved] = replace(home, url=moved, path=path,
                             links=[repoint(u) for u in home.links])
    entries[root] = Entry(root, "/", "missing", status=404, charset="utf-8",
                          distance=None)
    return Site(site.host, site.robots, entries)


class HiddenRoots:
    """The hook SyntheticWeb calls on each site it builds."""

    def __init__(self, seed: int) -> None:
        self.seed = seed

    def apply(self, site: Site, index: int) -> Site:
        if not hides_root(index):
            return site
        return hide_root(site, home_path(self.seed, index, site))
