"""Bodies and headers of the synthetic web: pages, resources, status pages, robots.txt.

Pure python. A body depends only on its entry (and the entry's own seed), so a page renders
the same in truth() and in the server, whatever was rendered before it.
"""

from __future__ import annotations

import hashlib
from random import Random

from tianwang.testweb.layout import pick, relative_href
from tianwang.testweb.sitebuilder import Entry, Site
from tianwang.testweb.text import ANCHOR_TEXTS, PARAGRAPH_COUNT, RINGS

MIN_BODY, MAX_BODY = 2000, 10000  # bytes of running text in a page, besides links and markup
RESOURCE_SIZES = {"image": (500, 8000), "pdf": (3000, 30000), "binary": (2000, 40000)}
STATUS_TEXT = {
    301: "Moved Permanently", 302: "Found", 404: "Not Found",
    500: "Internal Server Error", 502: "Bad Gateway",
}
FRAGMENTS = ("top", "comments", "p2", "content")
NON_HTTP = (
    '<a href="mailto:webmaster@{host}">联系站长</a>',
    '<a href="javascript:void(0)">加入收藏</a>',
    '<a href="javascript:window.print()">打印本页</a>',
)
# Resource bodies are windows of one fixed random block (random.randbytes is slow).
BLOB = Random("tianwang-testweb-blob").randbytes(1 << 16)
MAGIC = {
    "image/gif": b"GIF89a",
    "image/jpeg": b"\xff\xd8\xff\xe0\x00\x10JFIF\x00",
    "application/pdf": b"%PDF-1.4\n%",
    "application/octet-stream": b"PK\x03\x04",
}


def content_type(entry: Entry) -> str:
    if entry.charset and entry.header_charset and entry.mime.startswith("text/"):
        return f"{entry.mime}; charset={entry.charset}"
    return entry.mime


def body(site: Site, entry: Entry) -> bytes:
    """What the server sends as the body of the entry's url."""
    if entry.kind in ("home", "html"):
        return _html(site, entry, Draws(entry.seed))
    if entry.kind == "text":
        return _text(site, entry, Draws(entry.seed))
    if entry.kind in RESOURCE_SIZES:
        return _resource(entry)
    if entry.kind == "robots" and site.robots is not None:
        return site.robots.encode("ascii")
    return status_page(entry.status, entry.path)


def status_page(status: int, path: str) -> bytes:
    """The small html body of a redirect or an error; it holds no links."""
    text = STATUS_TEXT.get(status, "Error")
    path = path.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return (
        f"<html><head><title>{status} {text}</title></head><body><h1>{text}</h1>"
        f"<p>{status} {text}: {path}</p></body></html>\n"
    ).encode("ascii", "replace")


class Draws:
    """Cheap deterministic draws for one body: blake2b blocks of the entry's seed.

    Seeding a random.Random costs more than rendering a page's text; a page needs only a
    dozen draws or so, and these are stable across Python versions too.
    """

    __slots__ = ("seed", "block", "pool", "left")
    BITS = 40

    def __init__(self, seed: int) -> None:
        self.seed, self.block, self.pool, self.left = seed, 0, 0, 0

    def random(self) -> float:
        if not self.left:
            key = self.seed.to_bytes(8, "little") + self.block.to_bytes(4, "little")
            self.pool = int.from_bytes(hashlib.blake2b(key, digest_size=64).digest(), "little")
            self.block, self.left = self.block + 1, 512 // self.BITS
        value = self.pool & ((1 << self.BITS) - 1)
        self.pool >>= self.BITS
        self.left -= 1
        return value / (1 << self.BITS)


def _between(rng: Draws, low: int, high: int) -> int:
    return low + int(rng.random() * (high - low + 1))


def _run(rng: Draws, charset: str, form: str) -> tuple[bytes, bytes]:
    """About MIN_BODY..MAX_BODY bytes of running text, in two halves."""
    ring = RINGS[(charset, form)]
    start = int(rng.random() * PARAGRAPH_COUNT)
    stop = ring.stop(start, _between(rng, MIN_BODY, MAX_BODY))
    middle = (start + stop + 1) // 2
    return ring.slice(start, middle), ring.slice(middle, stop)


def _text(site: Site, entry: Entry, rng: Draws) -> bytes:
    charset = entry.charset or "utf-8"
    first, second = _run(rng, charset, "text")
    title = f"{pick(rng, ANCHOR_TEXTS)}\n{site.host}{entry.path}\n\n".encode(charset)
    return b"".join((title, first, second))


def _html(site: Site, entry: Entry, rng: Draws) -> bytes:
    """Head, nav links, text, the content links in two blocks, more text, footer."""
    charset = entry.charset or "utf-8"
    title = pick(rng, ANCHOR_TEXTS)
    base = entry.url[: entry.url.index("/", 8)]  # scheme and host: https pages too (https.py)
    anchors = [_anchor(site, entry, rng, base, url) for url in entry.links]
    first, second = _run(rng, charset, "html")
    nav = 3 if entry.kind == "home" and rng.random() < 0.3 else 0
    head = [_head(entry, rng, title), '<body>\n<a name="top"></a>\n']
    head += _area_map(anchors[:nav]) if nav else []
    head.append(f'<div id="nav">{" | ".join(anchors[nav:nav + 2])}</div>\n<h1>{title}</h1>\n')
    rest = anchors[nav + 2:]
    half = (len(rest) + 1) // 2
    footer = " ".join(t.format(host=site.host) for t in NON_HTTP[:_between(rng, 0, 3)])
    return b"".join((
        "".join(head).encode(charset),
        first,
        f'<div class="links">{" ".join(rest[:half])}</div>\n'.encode(charset),
        second,
        f'<div class="links">{" ".join(rest[half:])}</div>\n<div id="footer">{footer} '
        f"&copy; 2004 {site.host}</div>\n</body>\n</html>\n".encode(charset),
    ))


def _head(entry: Entry, rng: Draws, title: str) -> str:
    """The charset is in the header, in a <meta>, or both (never in neither)."""
    charset = entry.charset or "utf-8"
    meta = ""
    if not entry.header_charset or rng.random() < 0.5:
        if rng.random() < 0.5:
            meta = f'<meta charset="{charset}">\n'
        else:
            meta = f'<meta http-equiv="Content-Type" content="text/html; charset={charset}">\n'
    return f"<!DOCTYPE html>\n<html>\n<head>\n{meta}<title>{title}</title>\n</head>\n"


def _area_map(anchors: list[str]) -> list[str]:
    """The homepage's image map: its first links as <area> (a crawler must read them too)."""
    areas = [a.replace("<a ", '<area shape="rect" coords="0,0,80,20" ', 1) for a in anchors]
    areas = [a[: a.index(">") + 1] for a in areas]  # an <area> is empty: drop text and </a>
    return ['<map name="nav">', *areas, "</map>\n"]


def _anchor(site: Site, entry: Entry, rng: Draws, base: str, url: str) -> str:
    """One link as the page writes it: relative (45%), root-relative (40%) or absolute,
    sometimes with a #fragment. One draw feeds every choice: pages hold many links."""
    bits = int(rng.random() * (1 << 40))
    style, text = bits % 20, ANCHOR_TEXTS[(bits >> 5) % len(ANCHOR_TEXTS)]
    href = url
    if url.startswith(base) and url[len(base)] == "/" and style < 17:
        href = relative_href(entry.path, url[len(base):]) if style < 9 else url[len(base):]
    if (bits >> 20) % 20 == 0:
        href += "#" + FRAGMENTS[(bits >> 25) % len(FRAGMENTS)]
    href = href.replace("&", "&amp;")
    target = site.entries.get(url)
    if target is not None and target.anchor is not None:  # hiddenroot.py
        return f'<a href="{href}">{target.anchor}</a>'
    if url == base + "/" or (target is not None and target.kind == "home"):
        return f'<a href="{href}">首页</a>'
    if target is not None and target.kind == "image":
        return f'<a href="{href}"><img src="{href}" alt="{text}"></a>'
    return f'<a href="{href}">{text}</a>'


def _resource(entry: Entry) -> bytes:
    """Deterministic bytes with the right magic number; the url makes each body unique."""
    low, high = RESOURCE_SIZES[entry.kind]
    size = low + entry.seed % (high - low)
    start = (entry.seed >> 8) % (len(BLOB) - size)
    return MAGIC[entry.mime] + entry.url.encode("ascii") + b"\n" + BLOB[start:start + size]
