"""The shape of one site: its size, its first-level directories and the names of its urls.

Pure python. Every name that is not fixed (index pages, root pages) carries a counter that
is unique in the host, so urls never collide however the draws fall.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass, field
from random import Random
from typing import TYPE_CHECKING, Protocol, TypeVar

if TYPE_CHECKING:
    from tianwang.testweb.sitebuilder import Entry

# Seed 004 measured the number of Chinese sites of size s falling as s^-0.7 (slope -0.68).
SIZE_EXPONENT = 0.7
# Seed 002: about 20% of a site's paths hold 90% of its urls. So a site of n pages has
# about 0.08 n directories; the first 15% (the head) share the pages geometrically and the
# rest (the tail) hold little more than their index page. The root path, /old/ and
# /cgi-bin/ make up the other paths (sites of 100+ urls measure about 22%).
DIRS_PER_PAGE = 0.08
HEAD_SHARE = 0.15
HEAD_RATIO = 0.6
TAIL_WEIGHT = 0.002

COMMON_DIRS = (
    "news", "article", "html", "info", "about", "product", "xwzx", "jxky", "kygl", "zsjy",
    "notice", "list", "cs", "english", "photo", "zt", "special", "bm", "lib", "jwc", "service",
    "channel", "culture", "sports", "tech", "edu", "job", "member", "help", "dept", "gallery",
    "video", "events", "policy", "research", "alumni", "forum", "party", "union", "library",
)
# (directory, style, chance a host has it): dynamic forums, text documents and the three
# words seed 000 penalises in a url.
SPECIAL_DIRS = (
    ("bbs", "bbs", 0.15),
    ("doc", "txt", 0.12),
    ("search", "search", 0.08),
    ("proxy", "proxy", 0.05),
    ("gate", "gate", 0.05),
)
ROOT_PAGES = (
    "about.html", "contact.htm", "sitemap.html", "links.asp", "guestbook.asp?page=1",
    "copyright.html", "help.htm", "map.shtml", "readme.txt", "jobs.php?type=1&page=1",
)
SUB_SEGMENTS = ("2003", "2004", "2005", "01", "03", "07", "11", "list", "class", "show", "a", "b")
STEMS = ("p", "a", "n", "show_", "content_", "")
TEXT_STEMS = ("readme", "notes", "faq", "paper", "data")
PAGE_EXTS = ("html", "html", "htm", "shtml")
# Styles whose pages may sit in subdirectories; dynamic scripts sit in the directory itself.
NESTED_STYLES = frozenset({"static", "txt", "proxy", "gate"})

_CUMULATIVE: dict[int, list[float]] = {}
T = TypeVar("T")


class RandomDraws(Protocol):
    def random(self) -> float: ...


def pick(rng: RandomDraws, items: Sequence[T]) -> T:
    """rng.choice without its rejection loop, for the per-page draws (one float each)."""
    return items[int(rng.random() * len(items))]


def draw_size(rng: Random, max_pages: int) -> int:
    """A site size s in 1..max_pages with P(s) proportional to s^-0.7."""
    cumulative = _CUMULATIVE.get(max_pages)
    if cumulative is None:
        total, cumulative = 0.0, []
        for s in range(1, max_pages + 1):
            total += s ** -SIZE_EXPONENT
            cumulative.append(total)
        _CUMULATIVE[max_pages] = cumulative
    return bisect.bisect_left(cumulative, rng.random() * cumulative[-1]) + 1


@dataclass(slots=True)
class Directory:
    """A first-level directory and the pages placed in it so far."""

    name: str
    style: str
    ext: str
    stem: str
    fanout: int
    subs: list[str]
    index: Entry | None = None
    pages: list[Entry] = field(default_factory=list)  # linkable pages, index first
    hubs: list[Entry] = field(default_factory=list)  # html pages that may parent others
    hidden: list[Entry] = field(default_factory=list)  # reachable only through a redirect
    attached: int = 0
    deep: str = ""  # a chain of 7-10 subdirectories, on a few hosts only

    @property
    def text_share(self) -> float:
        return 0.65 if self.style == "txt" else 0.03

    def index_path(self, rng: Random) -> str:
        if rng.random() < 0.5:
            return f"/{self.name}/"
        ext = {"asp": "asp", "php": "php", "bbs": "php"}.get(self.style, self.ext)
        stem = "default" if ext == "asp" else "index"
        return f"/{self.name}/{stem}.{ext}"


def plan_directories(rng: Random, pages: int, private: bool) -> list[tuple[Directory, int]]:
    """Directories for `pages` non-root pages, each with its page count (index included)."""
    if pages < 1:
        return []
    count = max(1, min(pages, round(pages * DIRS_PER_PAGE), 36))
    dirs = [_directory(rng, name, style) for name, style in _dir_names(rng, count)]
    if private and count >= 2:
        dirs[-1] = _directory(rng, "private", "static")
    sizes = [1] * count
    head = max(1, round(count * HEAD_SHARE))
    weights = [HEAD_RATIO**k if k < head else TAIL_WEIGHT for k in range(count)]
    for k in rng.choices(range(count), weights=weights, k=pages - count):
        sizes[k] += 1
    return list(zip(dirs, sizes, strict=True))


def _dir_names(rng: Random, count: int) -> list[tuple[str, str]]:
    chosen = [(name, style) for name, style, chance in SPECIAL_DIRS if rng.random() < chance]
    rng.shuffle(chosen)
    chosen = chosen[:count]
    common = rng.sample(COMMON_DIRS, count - len(chosen))
    chosen += [(name, rng.choice(("static", "static", "asp", "php"))) for name in common]
    rng.shuffle(chosen)
    return chosen


def _directory(rng: Random, name: str, style: str) -> Directory:
    subs = [""]
    if style in NESTED_STYLES:
        for _ in range(rng.randint(0, 3)):
            depth = rng.choice((1, 1, 1, 2, 2, 3, 4, 5, 6))
            subs.append("".join(f"{rng.choice(SUB_SEGMENTS)}/" for _ in range(depth)))
    fanout = rng.randint(6, 14)  # children per page in the directory's link tree
    return Directory(name, style, rng.choice(PAGE_EXTS), rng.choice(STEMS), fanout, subs)


def make_deep(rng: Random, directory: Directory) -> None:
    """Give the directory a chain deep enough that its pages sit at depth 9 to 12."""
    directory.deep = "".join(f"{rng.choice(SUB_SEGMENTS)}/" for _ in range(rng.randint(7, 10)))


def page_path(rng: Random, d: Directory, k: int, text: bool, first: bool) -> str:
    """The path of page number k of the host, placed in directory d."""
    sub = _sub(rng, d, first)
    base = f"/{d.name}/{sub}"
    if text:
        return f"{base}{pick(rng, TEXT_STEMS)}{k}.txt"
    if d.style == "asp":
        if rng.random() < 0.6:
            return f"{base}show.asp?id={k}"
        return f"{base}list.asp?classid={k % 9 + 1}&page={k}"
    if d.style == "php":
        if rng.random() < 0.6:
            return f"{base}article.php?id={k}"
        return f"{base}list.php?cat={k % 7 + 1}&p={k}"
    if d.style == "bbs":
        if rng.random() < 0.7:
            return f"{base}viewthread.php?tid={k}&page={1 + int(rng.random() * 3)}"
        return f"{base}forumdisplay.php?fid={k}"
    if d.style == "search":
        return f"{base}result.asp?q={pick(rng, ('web', 'news', 'pku', 'map', 'mp3'))}&page={k}"
    if d.style == "proxy":
        return f"{base}browse.php?id={k}" if rng.random() < 0.5 else f"{base}cache{k}.html"
    return f"{base}{d.stem}{k}.{d.ext}"


def _sub(rng: Random, d: Directory, first: bool) -> str:
    if d.deep and (first or rng.random() < 0.05):
        return d.deep
    if len(d.subs) == 1 or rng.random() < 0.5:
        return ""
    return pick(rng, d.subs)


def relative_href(base_path: str, target_path: str) -> str:
    """target_path written relative to a page at base_path (paths may carry a query)."""
    path = base_path.split("?", 1)[0]
    folder = path[: path.rfind("/") + 1]
    rest = target_path[len(folder):]
    if target_path.startswith(folder) and rest and rest[0] != "?":
        return rest  # the common case: a page of the same folder
    base_dirs = base_path.split("?", 1)[0].split("/")[1:-1]
    target, query = (target_path.split("?", 1) + [""])[:2]
    parts = target.split("/")[1:]
    target_dirs, name = parts[:-1], parts[-1]
    common = 0
    shared = min(len(base_dirs), len(target_dirs))
    while common < shared and base_dirs[common] == target_dirs[common]:
        common += 1
    href = "../" * (len(base_dirs) - common) + "".join(f"{p}/" for p in target_dirs[common:]) + name
    href = href or "./"  # an empty href (or a bare "?q") would mean the page itself
    return f"{href}?{query}" if query else href
