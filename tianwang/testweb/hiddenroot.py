"""Sites whose root is hidden (opt-in: SyntheticWeb(hidden_roots=True), `--hidden-roots`).

Pure python. The sites a homepage finder (seed 001's PERS, tianwang/analysis/homepage.py)
must work on: `/` answers 404 and the homepage lives elsewhere, as on sites whose front page
is a script or a portal path and whose bare host name fails. Every link the site's own pages
make to `/` points to the new place instead; links from other hosts still point to `/`, and a
crawl reaching it there gets the 404, as a validate step would.

So that the finder is not judged on signals the web plants for it, each hidden site draws,
independently, half and half: its path among HOME_PATHS (made of the words sites call a
homepage by: `/cms/index.asp`, `/portal/main.php`) or among NEUTRAL_PATHS (`/site/start.php`,
`/zh/welcome.htm`: no such word), and the text of the links to it, 首页 as the test web writes
every link to a homepage, or one anchor text of the web's own pool, the same on every page of
the site (as a logo or a site name is), drawn from those without 首页 or 主页.

Host index i hides its root when i % HIDDEN_EVERY == 1. The truth: the `/` record of such a
host has status 404 and kind "missing"; its homepage is the one record of kind "home".
"""

from __future__ import annotations

from dataclasses import replace
from random import Random

from tianwang.testweb.sitebuilder import Entry, Site
from tianwang.testweb.text import ANCHOR_TEXTS

HIDDEN_EVERY = 3
HOME_PATHS = ("/cms/index.asp", "/portal/main.php", "/web/default.htm", "/home.jsp",
              "/cn/index.shtml", "/main.aspx")
NEUTRAL_PATHS = ("/site/start.php", "/zh/welcome.htm", "/jsp/p1.jsp", "/web/front.asp",
                 "/cn/zhan.shtml", "/s.aspx")
NEUTRAL_ANCHORS = tuple(a for a in ANCHOR_TEXTS if "首页" not in a and "主页" not in a)


def hides_root(index: int) -> bool:
    return index % HIDDEN_EVERY == 1


def home_path(seed: int, index: int, site: Site) -> tuple[str, str | None]:
    """Where host `index` keeps its homepage (a path of HOME_PATHS or of NEUTRAL_PATHS not
    already taken) and the anchor text of the links to it (None: 首页, as usual)."""
    rng = Random(f"{seed}:hidden-root:{index}")
    paths = HOME_PATHS if rng.random() < 0.5 else NEUTRAL_PATHS
    anchor = None if rng.random() < 0.5 else rng.choice(NEUTRAL_ANCHORS)
    free = [p for p in paths if f"http://{site.host}{p}" not in site.entries]
    return rng.choice(free), anchor


def hide_root(site: Site, path: str, anchor: str | None = None) -> Site:
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
                             links=[repoint(u) for u in home.links], anchor=anchor)
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
        return hide_root(site, *home_path(self.seed, index, site))
