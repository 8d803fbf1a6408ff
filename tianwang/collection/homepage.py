"""`tianwang hosts homepage DIR`: each site's homepage found from its sub-pages (seed 001's
PERS), for sites whose `/` failed. Pure python (lxml for the links).

Seed 001, section 2.3: "the homepage and its sub-pages have a particular relation, and the
related pages (the homepage's sub-pages) outnumber the homepage by orders of magnitude. From
the statistics of the sub-pages related to a homepage, and their relation to it, the PERS
algorithm finds the homepage from its related sub-pages; its unigram language model is

    P(D | T1, ..., Tn)  ~  P(D) * prod_i ((1 - lambda) P(Ti | C) + lambda P(Ti | D))"

(the paper prints the sum without the second lambda; the smoothing it names, a mix of the
collection's and the document's unigram model, is Jelinek-Mercer's, which is read here).
What each symbol is, as the paper leaves it open, is decided here:

- D, a candidate: every page of the site the crawl stored (a url that failed, such as a
  dead `/`, is no candidate). Its text is what the site's sub-pages say of it: the anchor
  texts of their links to it, and the words of its own url path (index, main, default...).
- T1..Tn, the query: the words a site calls its homepage by (HOME_WORDS: 首页, 主页, home,
  index, main, ...), those of them the site uses at all, and the site's name: the terms in
  the titles of at least half its pages ("Flask Documentation (2.2.x)" on every page of a
  Sphinx tree), since a site links its homepage by its name (a logo, a breadcrumb's first
  step) as often as by 首页; the query of TREC's homepage finding is the site's name too.
  Chinese text is cut into character bigrams, the usual unit of Chinese retrieval, so
  返回首页 holds 首页.
- C, the collection: the site's candidates together (P(T|C): how common the word is on the
  site), lambda = 0.5.
- P(D), the prior: the related sub-pages, the site's pages linking to D (one each), over the
  url's directory depth + 1 (seed 001: entry pages have short urls and are easier to find),
  times ROOT_PRIOR for the root url itself (seed 001, 2.1: "Root, which usually stands for
  the site's homepage"): a `/` that answered stays the homepage unless the site clearly
  says otherwise.

A site's answer is its candidate of highest score; ties go to the shorter url.

The seed finds the homepage "from its related sub-pages ranked lower" in a retrieval: a
query's best matches by content are sub-pages, not the homepage, so the homepage is what the
sub-pages, all of them down the list, point to. Here that is the whole model: D's text is
what every sub-page linking it says of it, and its prior is how many do; no page is ranked
by its own content.

Each piece of evidence can be left out (`--without`, for measuring what each brings):
anchor (the anchor texts in D's text), url (the words of the url path), name (the site's
name terms in the query), links (the linking sub-pages in the prior), depth (the url's depth
in the prior), root (the root prior).

Output, one line per site (`--out FILE` written whole, else stdout), sorted:
`<host>\\t<homepage>\\t<log score>\\t<root>` where root is `ok` when the site's `/` was
stored (it is then found as the homepage unless the site says otherwise) and `missing` when
it was not; `--missing-only` keeps the sites whose `/` is missing, the case PERS is for.
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urldefrag, urljoin, urlsplit

from lxml import etree, html

from tianwang.formats.record import iter_records
from tianwang.formats.store import record_files
from tianwang.urls import url_type

LAMBDA = 0.5
ROOT_PRIOR = 10.0
HOME_WORDS = ("首页", "主页", "home", "homepage", "index", "main", "default", "portal")
SIGNALS = ("anchor", "url", "name", "links", "depth", "root")
NAME_SHARE = 0.5  # a term in the titles of at least this share of a site's pages names it
_TITLE = re.compile(rb"<title[^>]*>(.*?)</title", re.I | re.S)
_ASCII_WORD = re.compile(r"[a-z0-9]+")
_CJK_RUN = re.compile(r"[\u3400-\u9fff]+")
_CHARSET = re.compile(r"charset=([\w-]+)", re.I)


def terms(text: str) -> list[str]:
    """Lowercased ASCII words, and the character bigrams of each Chinese run (a one-character
    run is its own term)."""
    text = text.lower()
    found = _ASCII_WORD.findall(text)
    for run in _CJK_RUN.findall(text):
        found += [run] if len(run) == 1 else [run[k:k + 2] for k in range(len(run) - 1)]
    return found


QUERY = tuple(dict.fromkeys(t for word in HOME_WORDS for t in terms(word)))


def url_terms(url: str) -> list[str]:
    path = urlsplit(url).path
    return _ASCII_WORD.findall(path.lower())


def depth(url: str) -> int:
    """Directories above the url's last segment: / and /index.asp are 0, /cms/index.asp 1."""
    return max(urlsplit(url).path.count("/") - 1, 0)


def links_of(url: str, body: bytes, charset: str | None) -> list[tuple[str, str]]:
    """(absolute target without fragment, anchor text) of each <a href> of a page."""
    if not body.strip():
        return []
    try:
        parser = html.HTMLParser(encoding=charset) if charset else None
    except LookupError:
        parser = None
    try:
        root = html.fromstring(body, parser=parser)
    except (etree.ParserError, ValueError, LookupError):
        return []
    found = []
    for anchor in root.iter("a"):
        href = anchor.get("href")
        if href and not href.startswith(("mailto:", "javascript:")):
            found.append((urldefrag(urljoin(url, href.strip()))[0], anchor.text_content()))
    return found


@dataclass(frozen=True)
class Found:
    host: str
    homepage: str
    score: float
    root_stored: bool
    candidates: int


def site_name(titles: Iterable[str]) -> list[str]:
    """The terms in the titles of at least NAME_SHARE of a site's pages (two pages or more)."""
    titles = list(titles)
    counts: Counter[str] = Counter()
    for title in titles:
        counts.update(set(terms(title)))
    need = max(2, math.ceil(NAME_SHARE * len(titles)))
    return sorted(t for t, n in counts.items() if n >= need)


def find_homepage(host: str, pages: dict[str, list[tuple[str, str]]],
                  lam: float = LAMBDA, titles: dict[str, str] | None = None,
                  without: Iterable[str] = ()) -> Found:
    """PERS on one site: `pages` maps each stored url of the host to its links, `titles` to
    its title; `without` names the signals left out (SIGNALS)."""
    off = frozenset(without)
    text: dict[str, Counter[str]] = {
        url: Counter(url_terms(url) if "url" not in off else ()) for url in pages}
    linking: defaultdict[str, set[str]] = defaultdict(set)
    for source, links in pages.items():
        for target, anchor in links:
            if target in text and target != source:
                if "anchor" not in off:
                    text[target].update(terms(anchor))
                linking[target].add(source)
    collection: Counter[str] = Counter()
    for counts in text.values():
        collection.update(counts)
    total = sum(collection.values()) or 1
    words = list(QUERY)
    if "name" not in off and titles:
        words += [t for t in site_name(titles.values()) if t not in words]
    query = [t for t in words if collection[t]]

    def score(url: str) -> float:
        related = len(linking[url]) if "links" not in off else 0
        deep = depth(url) if "depth" not in off else 0
        prior = math.log((1 + related) / (1 + deep))
        if "root" not in off and url_type(url) == "root":
            prior += math.log(ROOT_PRIOR)
        counts, size = text[url], sum(text[url].values()) or 1
        return prior + sum(math.log((1 - lam) * collection[t] / total + lam * counts[t] / size)
                           for t in query)

    scored = sorted((-score(url), len(url), url) for url in pages)
    best, _length, url = scored[0]
    root = f"{urlsplit(url).scheme}://{urlsplit(url).netloc}/"
    return Found(host, url, -best, root in pages, len(pages))


def site_pages(tree: Path) -> Iterator[tuple[str, dict[str, list[tuple[str, str]]],
                                             dict[str, str]]]:
    """Each host directory's stored html pages (200), their links and their titles; a link
    to a url that redirected (a record's origin) counts for the page it led to."""
    for path in record_files(tree):
        pages: dict[str, list[tuple[str, str]]] = {}
        titles: dict[str, str] = {}
        moved: dict[str, str] = {}
        host = ""
        for record in iter_records(path):
            if record.origin:
                moved[record.origin] = record.url
            try:
                message = record.http
            except ValueError:  # DATA that is not an HTTP response: no page to rank
                continue
            kind = message.header("Content-Type") or ""
            if message.status != 200 or "html" not in kind.lower():
                continue
            host = host or (urlsplit(record.url).hostname or "")
            found = _CHARSET.search(kind)
            charset = found[1] if found else None
            pages[record.url] = links_of(record.url, message.body, charset)
            titles[record.url] = title_of(message.body, charset)
        if pages:
            yield host, {url: [(moved.get(t, t), text) for t, text in links]
                         for url, links in pages.items()}, titles


def title_of(body: bytes, charset: str | None) -> str:
    found = _TITLE.search(body[:65536])
    if not found:
        return ""
    try:
        return found[1].decode(charset or "utf-8", "replace")
    except LookupError:
        return found[1].decode("utf-8", "replace")


def find_all(tree: Path, lam: float = LAMBDA, without: Iterable[str] = ()) -> list[Found]:
    return sorted((find_homepage(host, pages, lam, titles, without)
                   for host, pages, titles in site_pages(tree)), key=lambda f: f.host)


def lines(found: Iterable[Found], missing_only: bool) -> list[str]:
    return [f"{f.host}\t{f.homepage}\t{f.score:.4f}\t{'ok' if f.root_stored else 'missing'}\n"
            for f in found if not (missing_only and f.root_stored)]
