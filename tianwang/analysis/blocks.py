"""Page blocks from the DOM, VIPS-like without a renderer (seed 001 section 4).

Pure python (lxml only). VIPS splits a page where its layout does; without a renderer the
layout is read from the DOM: structural containers (div, table, ul, ...) are blocks, a
container holding several structural children of its own is split further, and a run of
inline content between containers (paragraphs, headings, text) is one block. Each block is
labelled from its text and link density and from the names pages give such areas:

- boilerplate: named like an ad, banner, footer, copyright, clock or counter, or short text
  with no link (a date, a slogan, a rotating ad);
- navigation: mostly link text, or named nav/menu;
- content: the rest, the text a reader came for.

`content_hash` is what change detection compares between two visits: the text of every
block but those named as boilerplate (ads, banners, clocks, counters, footers), with what
changes on every visit masked: runs of digits (dates, times, counters, visitor numbers) and
the names of weekdays, months and the hour's half (Monday, Nov, 星期三, 下午). So a sentence
added anywhere a reader reads, in the content, in a link-heavy index page's introduction, in
a sidebar or a list of links, is a change; a clock, a counter or a rotating ad is not. An
edit that changes nothing but a number is not seen (a price, a version): the cost of not
storing a page again at every visit because its clock moved. `block_links` gives the links
of content and navigation blocks (boilerplate links, such as an ad's, are not the page's
own).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from urllib.parse import urljoin

from lxml import etree, html

CONTAINERS = frozenset({
    "div", "table", "tbody", "tr", "td", "ul", "ol", "dl", "section", "nav", "header",
    "footer", "aside", "article", "main", "form", "map", "center", "blockquote", "fieldset",
})
SKIPPED = frozenset({"script", "style", "noscript", "head", "title", "meta", "link"})
BOILERPLATE_NAMES = re.compile(
    r"(^|[-_ ])(ads?|advert\w*|banner|sponsor\w*|footer|foot|copyright|clock|time|date|"
    r"counter|weather)($|[-_ \d])", re.I)
NAVIGATION_NAMES = re.compile(r"(^|[-_ ])(nav\w*|menu\w*|breadcrumbs?|sidebar)($|[-_ \d])", re.I)
SHORT_TEXT = 60  # characters: a link-free block this short is a label, not content
LINK_DENSITY = 0.5  # share of a block's text inside links, above which it is navigation
SPLIT_TEXT = 200  # characters: a container holding less is never split further
# characters: a block named like boilerplate but holding more is a section of its own
# (Sphinx names a section by its heading: "sponsoring-a-new-package", "date-formatting")
NAMED_MAX = 300


@dataclass
class Block:
    """A block: its name (id or class of its element, "" for a run of text), label, text and
    links (href values as written)."""

    name: str
    label: str = ""
    text: str = ""
    link_text: int = 0
    links: list[str] = field(default_factory=list)


def segment(body: bytes | str, encoding: str | None = None) -> list[Block]:
    """The labelled blocks of an html page, in document order (empty blocks left out)."""
    root = _parse(body, encoding)
    if root is None:
        return []
    start = root.find(".//body")
    blocks: list[Block] = []
    _walk(start if start is not None else root, blocks)
    kept = [b for b in blocks if b.text or b.links]
    for block in kept:
        block.label = label(block)
    return kept


def _parse(body: bytes | str, encoding: str | None) -> etree._Element | None:
    if not body or not body.strip():
        return None
    try:
        parser = html.HTMLParser(encoding=encoding) if isinstance(body, bytes) else None
    except LookupError:  # a charset libxml2 does not know: let it read the page's meta
        parser = None
    try:
        return html.fromstring(body, parser=parser)
    except (etree.ParserError, ValueError, LookupError):
        return None


def _walk(node: etree._Element, blocks: list[Block]) -> None:
    """Split node's children into blocks: containers alone, inline runs together."""
    run = Block("")
    _add_text(run, node.text)
    for child in node:
        tag = child.tag if isinstance(child.tag, str) else ""
        if tag in CONTAINERS:
            blocks.append(run)
            run = Block("")
            if _splittable(child):
                _walk(child, blocks)
            else:
                blocks.append(_block_of(child))
        elif tag and tag not in SKIPPED:
            _collect(child, run)
        _add_text(run, child.tail)
    blocks.append(run)


def _splittable(node: etree._Element) -> bool:
    """VIPS divides a node whose children are blocks of their own and which is big enough."""
    structural = sum(1 for c in node if isinstance(c.tag, str) and c.tag in CONTAINERS)
    return structural >= 2 and len(node.text_content()) >= SPLIT_TEXT and not _named(node)


def _named(node: etree._Element) -> bool:
    name = _name(node)
    return bool(named_boilerplate(name, node.text_content()) or NAVIGATION_NAMES.search(name))


def _name(node: etree._Element) -> str:
    return " ".join(filter(None, (node.get("id"), node.get("class")))).strip()


def _block_of(node: etree._Element) -> Block:
    block = Block(_name(node) or node.tag)
    _add_text(block, node.text)
    for child in node:
        if _kept(child):
            _collect(child, block)
        _add_text(block, child.tail)
    return block


def _kept(node: etree._Element) -> bool:
    """Whether an element's text and links belong to the block around it: not a script or
    the like, and not an ad or a clock nested in it (a page whose markup leaves a container
    open puts what follows inside it)."""
    return (isinstance(node.tag, str) and node.tag not in SKIPPED
            and not named_boilerplate(_name(node), node.text_content()))


def named_boilerplate(name: str, text: str) -> bool:
    """Named like an ad, a clock or a footer, and short as those are."""
    return bool(BOILERPLATE_NAMES.search(name)) and len(text) <= NAMED_MAX


def _collect(node: etree._Element, block: Block) -> None:
    """Add an element's text and links to a block."""
    if node.tag in ("a", "area") and node.get("href") is not None:
        block.links.append(node.get("href").strip())
        text = _squash(node.text_content())
        block.link_text += len(text)
        _add_text(block, text)
        _add_text(block, node.tail if node.tag == "area" else None)
        return
    _add_text(block, node.text)
    for child in node:
        if _kept(child):
            _collect(child, block)
        _add_text(block, child.tail)


def _add_text(block: Block, text: str | None) -> None:
    text = _squash(text or "")
    if text:
        block.text = f"{block.text} {text}" if block.text else text


def _squash(text: str) -> str:
    return " ".join(text.split())


def label(block: Block) -> str:
    """navigation, content or boilerplate (see the module's docstring)."""
    if named_boilerplate(block.name, block.text):
        return "boilerplate"
    if NAVIGATION_NAMES.search(block.name):
        return "navigation"
    if block.links and (not block.text or block.link_text >= LINK_DENSITY * len(block.text)):
        return "navigation"
    if not block.links and len(block.text) < SHORT_TEXT:
        return "boilerplate"
    return "content"


_DIGITS = re.compile(r"\d+")
_CALENDAR = re.compile(
    r"\b(mon|tues?|wed(nes)?|thu(rs)?|fri|sat(ur)?|sun)(day)?\b|"
    r"\b(jan(uary)?|feb(ruary)?|mar(ch)?|apr(il)?|may|june?|july?|aug(ust)?|sept?(ember)?|"
    r"oct(ober)?|nov(ember)?|dec(ember)?)\b|\b[ap]\.?m\.?\b|"
    r"(星期|礼拜|周)[一二三四五六日天]|[上下]午", re.I)


def volatile_masked(text: str) -> str:
    """The text with what changes on every visit masked (module docstring)."""
    return _CALENDAR.sub("~", _DIGITS.sub("0", text))


def content_hash(blocks: list[Block]) -> str:
    """md5 (hex) of the text of every block not named as boilerplate, its volatile parts
    masked: the page's change detector (module docstring)."""
    text = "\n".join(volatile_masked(b.text) for b in blocks
                     if not named_boilerplate(b.name, b.text))
    return hashlib.md5(text.encode("utf-8", "surrogatepass")).hexdigest()


def block_links(blocks: list[Block], base_url: str) -> list[str]:
    """Absolute links (no fragment) of the content and navigation blocks, in order, once."""
    links: dict[str, None] = {}
    for block in blocks:
        if block.label == "boilerplate":
            continue
        for href in block.links:
            if href.startswith(("#", "javascript:", "mailto:")) or not href:
                continue
            try:
                url = urljoin(base_url, href).split("#", 1)[0]
            except ValueError:
                continue
            if url.startswith(("http://", "https://")):
                links[url] = None
    return list(links)
