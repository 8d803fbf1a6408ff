"""The test web's changing pages (opt-in: SyntheticWeb(changing=True), `--changing`).

Pure python. The web gets a clock, starting at CLOCK_START and moved only by a control
request (`GET /_testweb/clock?advance=SECONDS`), so a test lives weeks in seconds. What a
page serves is a function of the seed and the clock alone:

- every html page changes as a Poisson process with its own rate from the truth
  (`change_rate`, changes a day): NEVER_SHARE of them never, the rest from 0.02 to 4 a day;
  a change rewrites the page's content block (`<div id="update">`);
- hubs (homepages and directory pages at `/name/`) change 2 to 6 times a day, and each
  change also adds links to new pages (`new<k>.html` beside the hub) at the head of their
  `<div id="latest">` list of the newest: the pages a crawl must find. How long the list is
  (3 to 40) and how many new pages a change adds (1 to 8) is each hub's own draw;
- AD_SHARE of the pages carry a rotating ad (`<div class="ad">`) that changes every
  AD_PERIOD seconds: boilerplate, not a change of the page;
- answers carry Date (the clock), ETag (of the bytes) and Last-Modified (the last change of
  the bytes), and answer 304 Not Modified to a matching If-None-Match or If-Modified-Since.

truth() marks each page's rate, whether it is a hub or rotates an ad, and its blocks
(`blocks`: element id -> navigation, content or boilerplate; `text` is the running text
directly under <body>). Bodies in the truth are those at the clock's start.

It also marks each html page's type as seed 001 names them (`page_type`), by the role the
page was drawn for, never by a count the classifier uses: "entry" for a hub (type 1: few,
changing, made of links, where the site's new pages show), "link" for a page drawn
(LINK_ROLE_SHARE of the others) to carry a list of links to the site's existing pages in a
`<div id="list">`, 4 to 80 of them, never new ones (type 3: many links, none to the newest
pages), "stable" for the rest (type 2: the pages that are what the site says, whatever links
the site's structure gives them; NEVER_SHARE of them never change and the rest rewrite their
content block now and then, a change the seed calls small against the page's value). The
ranges are drawn independently of the classifier's settings (TIANWANG_ENTRY_MIN_LINKS,
TIANWANG_ENTRY_NEW_SHARE, TIANWANG_LINK_PAGE_MIN_LINKS), so its accuracy is measured, not
built in.
"""

from __future__ import annotations

import hashlib
import math
import re
import zlib
from email.utils import formatdate, parsedate_to_datetime
from random import Random
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from tianwang.testweb.response import Response
from tianwang.testweb.text import ANCHOR_TEXTS, PARAGRAPHS

if TYPE_CHECKING:
    from tianwang.testweb.model import SyntheticWeb
    from tianwang.testweb.sitebuilder import Entry

CLOCK_START = 1072915200  # 2004-01-01 00:00:00 UTC
DAY = 86400
NEVER_SHARE = 0.35  # pages that never change
RATE_RANGE = (0.02, 4.0)  # changes a day of the other pages, log-uniform
HUB_RATE_RANGE = (2.0, 6.0)  # changes a day of hubs
AD_SHARE = 0.3  # pages with a rotating ad
AD_PERIOD = 3600  # seconds between two ads
LATEST_RANGE = (3, 40)  # links in a hub's list of newest pages, log-uniform, a hub's own
NEW_RANGE = (1, 8)  # new pages a hub's change links, uniform, a hub's own
LINK_ROLE_SHARE = 0.15  # of the non-hub pages: link pages (type 3)
LIST_RANGE = (4, 80)  # links in a link page's list, log-uniform
CONTROL_PATH = "/_testweb/clock"
_NEW_PAGE = re.compile(r"^((?:/[^/?]+)?/)new(\d+)\.html$")
_HUB_PATH = re.compile(r"^/(?:[^/?]+/)?$")


class Changes:
    """The clock and the change processes of one web's pages."""

    def __init__(self, seed: int, web: SyntheticWeb) -> None:
        self.seed, self.web = seed, web
        self.now = CLOCK_START
        self._events: dict[str, list[float]] = {}
        self._draws: dict[str, tuple[float, bool, bool]] = {}
        self._lists: dict[str, list[str]] = {}

    # -- the clock ---------------------------------------------------------------------------

    def control(self, query: str) -> Response:
        """`?advance=SECONDS` or `?set=EPOCH`; answers the clock as JSON."""
        for part in filter(None, query.split("&")):
            name, _, value = part.partition("=")
            try:
                number = float(value)
            except ValueError:
                return Response(400, [("Content-Type", "text/plain")], b"bad number\n")
            if name == "advance" and number >= 0:
                self.now += number
            elif name == "set" and number >= self.now:
                self.now = number
            else:
                return Response(400, [("Content-Type", "text/plain")],
                                b"advance=SECONDS (>= 0) or set=EPOCH (not back)\n")
        body = f'{{"now": {self.now}}}\n'.encode("ascii")
        return Response(200, [("Content-Type", "application/json")], body)

    # -- what changes ------------------------------------------------------------------------

    def profile(self, url: str) -> tuple[float, bool, bool]:
        """(changes a day, hub, rotating ad) of an html page; (0, False, False) for the rest."""
        found = self._draws.get(url)
        if found is None:
            entry = self._entry(url)
            found = self._draws[url] = _draw(self.seed, entry) if entry else (0.0, False, False)
        return found

    def hub_shape(self, url: str) -> tuple[int, int]:
        """(links in the hub's list of newest pages, new pages a change adds)."""
        rng = Random(f"{self.seed}:hub-shape:{url}")
        low, high = LATEST_RANGE
        latest = int(round(math.exp(rng.uniform(math.log(low), math.log(high)))))
        return latest, rng.randint(*NEW_RANGE)

    def link_list(self, url: str) -> list[str]:
        """The in-host pages a link page (type 3) lists; [] for every other page."""
        found = self._lists.get(url)
        if found is None:
            found = self._lists[url] = self._draw_list(url)
        return found

    def _draw_list(self, url: str) -> list[str]:
        entry = self._entry(url)
        if entry is None or self.profile(url)[1]:
            return []
        rng = Random(f"{self.seed}:link-role:{url}")
        if rng.random() >= LINK_ROLE_SHARE:
            return []
        site = self.web.site(urlsplit(url).hostname or "")
        pages = sorted(u for u, e in site.entries.items()
                       if u != url and e.kind == "html" and e.status == 200)
        low, high = LIST_RANGE
        count = int(round(math.exp(rng.uniform(math.log(low), math.log(high)))))
        return rng.sample(pages, min(count, len(pages)))

    def _entry(self, url: str) -> Entry | None:
        host = urlsplit(url).hostname or ""
        if host not in self.web.hosts:
            return None
        entry = self.web.site(host).entries.get(url)
        ok = entry is not None and entry.kind in ("home", "html") and entry.status == 200
        return entry if ok else None

    def version(self, url: str, at: float) -> int:
        """How many times the page changed in (CLOCK_START, at]."""
        return sum(1 for t in self._times(url, at) if t <= at)

    def change_times(self, url: str, at: float) -> list[float]:
        """When the page changed in (CLOCK_START, at], in order."""
        return [t for t in self._times(url, at) if t <= at]

    def last_change(self, url: str, at: float) -> float:
        """When the page's content last changed (CLOCK_START if never)."""
        times = [t for t in self._times(url, at) if t <= at]
        return times[-1] if times else CLOCK_START

    def _times(self, url: str, at: float) -> list[float]:
        rate = self.profile(url)[0]
        times = self._events.setdefault(url, [])
        if rate <= 0:
            return times
        rng = Random(f"{self.seed}:events:{url}:{len(times)}")
        last = times[-1] if times else CLOCK_START
        while last <= at:
            last += rng.expovariate(rate / DAY)
            times.append(last)
            rng = Random(f"{self.seed}:events:{url}:{len(times)}")
        return times

    # -- what is served ----------------------------------------------------------------------

    def respond(self, url: str, if_none_match: str | None = None,
                if_modified_since: str | None = None) -> Response:
        """The answer at the clock's time, 304 when the client's copy is current."""
        answer = self.served(url, self.now)
        if answer.status != 200:
            return answer
        etag, modified = answer.header("ETag"), answer.header("Last-Modified")
        if _not_modified(etag, modified, if_none_match, if_modified_since):
            return Response(304, [("ETag", etag or ""), ("Last-Modified", modified or "")], b"")
        return answer

    def served(self, url: str, at: float) -> Response:
        """The full answer at time `at` (ETag and Last-Modified on every 200)."""
        new = self._new_page(url, at)
        if new is not None:
            return new
        base = self.web.respond(url)
        if base.status != 200:
            return base
        rate, hub, ad = self.profile(url)
        body, modified = base.body, CLOCK_START
        if self._entry(url) is not None:
            body = self._decorate(url, base.body, at)
            modified = self.last_change(url, at)
            if ad:
                modified = max(modified, _ad_slot(at) * AD_PERIOD + CLOCK_START)
        return _with_validators(base, body, modified)

    def _decorate(self, url: str, body: bytes, at: float) -> bytes:
        entry = self._entry(url)
        assert entry is not None
        charset = entry.charset or "utf-8"
        _rate, hub, ad = self.profile(url)
        version = self.version(url, at)
        update = _update_block(url, version)
        if hub:
            update += _latest_block(url, version, *self.hub_shape(url))
        elif self.link_list(url):
            update += _list_block(entry.url, self.link_list(url))
        if ad:
            body = body.replace(b"<h1>", _ad_block(at).encode(charset) + b"<h1>", 1)
        return body.replace(b'<div id="footer">', update.encode(charset) + b'<div id="footer">', 1)

    def _new_page(self, url: str, at: float) -> Response | None:
        """A page a hub linked when it changed; 404 until the hub linked it."""
        parts = urlsplit(url)
        match = _NEW_PAGE.match(parts.path) if not parts.query else None
        if match is None:
            return None
        hub = f"http://{parts.hostname}{match.group(1)}"
        if not self.profile(hub)[1]:
            return None
        latest, per_change = self.hub_shape(hub)
        if int(match.group(2)) > latest + per_change * self.version(hub, at):
            return None  # not yet linked: the model's own 404
        entry = self._entry(hub)
        charset = entry.charset if entry and entry.charset else "utf-8"
        k = int(match.group(2))
        title = ANCHOR_TEXTS[k % len(ANCHOR_TEXTS)]
        text = PARAGRAPHS[(k * 7 + len(url)) % len(PARAGRAPHS)]
        html = (f"<!DOCTYPE html>\n<html><head><title>{title}</title></head><body>\n"
                f'<h1>{title}</h1>\n<p>{text}</p>\n<p>{url}</p>\n'  # the url: bodies differ
                f'<p><a href="./">{ANCHOR_TEXTS[0]}</a></p>\n'
                "</body></html>\n")
        base = Response(200, [("Content-Type", f"text/html; charset={charset}")],
                        html.encode(charset))
        return _with_validators(base, base.body, CLOCK_START)

    # -- truth -------------------------------------------------------------------------------

    def mark(self, record: dict[str, Any]) -> dict[str, Any]:
        """A truth record with change_rate, hub, rotating_ad and blocks (at the clock's start)."""
        rate, hub, ad = self.profile(record["url"])
        record |= {"change_rate": rate, "hub": hub, "rotating_ad": ad, "blocks": None,
                   "page_type": None}
        if self._entry(record["url"]) is None:
            return record
        listed = self.link_list(record["url"])
        record["links"] = list(record["links"]) + listed
        record["page_type"] = "entry" if hub else "link" if listed else "stable"
        body = self.served(record["url"], CLOCK_START).body
        blocks = {"text": "content", "update": "content", "footer": "boilerplate"}
        if b'<div id="nav"></div>' not in body:
            blocks["nav"] = "navigation"
        if b'<div class="links"><a' in body:
            blocks["links"] = "navigation"
        if hub:
            blocks["latest"] = "navigation"
        if listed:
            blocks["list"] = "navigation"
        if ad:
            blocks["ad"] = "boilerplate"
        record["blocks"] = blocks
        if "md5" in record:
            record["bytes"], record["md5"] = len(body), hashlib.md5(body).hexdigest()
        return record


def _draw(seed: int, entry: Entry) -> tuple[float, bool, bool]:
    rng = Random(f"{seed}:changing:{entry.url}")
    hub = entry.kind == "home" or bool(_HUB_PATH.match(entry.path))
    ad = rng.random() < AD_SHARE
    if hub:
        return _log_uniform(rng, *HUB_RATE_RANGE), True, ad
    if rng.random() < NEVER_SHARE:
        return 0.0, False, ad
    return _log_uniform(rng, *RATE_RANGE), False, ad


def _log_uniform(rng: Random, low: float, high: float) -> float:
    return math.exp(rng.uniform(math.log(low), math.log(high)))


def _ad_slot(at: float) -> int:
    return int((at - CLOCK_START) // AD_PERIOD)


def _ad_block(at: float) -> str:
    slot = _ad_slot(at)
    hour = slot % 24
    sponsor = ANCHOR_TEXTS[slot % len(ANCHOR_TEXTS)]
    return f'<div class="ad" id="ad">广告 {sponsor} {hour:02d}:00</div>\n'


def _update_block(url: str, version: int) -> str:
    digest = hashlib.md5(f"{url}#{version}".encode()).digest()
    first = digest[0] % len(PARAGRAPHS)
    paragraphs = [PARAGRAPHS[(first + i * 37) % len(PARAGRAPHS)] for i in range(2)]
    stamp = f"<p>第 {version} 版</p>"
    return f'<div id="update">{stamp}{"".join(f"<p>{p}</p>" for p in paragraphs)}</div>\n'


def _latest_block(url: str, version: int, latest: int, per_change: int) -> str:
    newest = latest + per_change * version
    items = "".join(
        f'<li><a href="new{k}.html">{ANCHOR_TEXTS[k % len(ANCHOR_TEXTS)]}</a></li>'
        for k in range(newest, newest - latest, -1)
    )
    return f'<div id="latest"><ul>{items}</ul></div>\n'


def _list_block(url: str, targets: list[str]) -> str:
    items = "".join(
        f'<li><a href="{target}">{ANCHOR_TEXTS[zlib.crc32(target.encode()) % len(ANCHOR_TEXTS)]}'
        "</a></li>" for target in targets)
    return f'<div id="list"><ul>{items}</ul></div>\n'


def _with_validators(base: Response, body: bytes, modified: float) -> Response:
    headers = [(k, v) for k, v in base.headers if k.lower() not in ("etag", "last-modified")]
    etag = '"' + hashlib.md5(body).hexdigest()[:20] + '"'
    headers += [("ETag", etag), ("Last-Modified", http_date(modified))]
    return Response(base.status, headers, body)


def http_date(epoch: float) -> str:
    return formatdate(int(epoch), usegmt=True)


def _not_modified(etag: str | None, modified: str | None, if_none_match: str | None,
                  if_modified_since: str | None) -> bool:
    """RFC 9110: If-None-Match decides when present; else If-Modified-Since."""
    if if_none_match:
        tags = [t.strip().removeprefix("W/") for t in if_none_match.split(",")]
        return "*" in tags or (etag is not None and etag in tags)
    if if_modified_since and modified:
        try:
            since = parsedate_to_datetime(if_modified_since).timestamp()
        except (TypeError, ValueError):
            return False
        return parsedate_to_datetime(modified).timestamp() <= since
    return False
