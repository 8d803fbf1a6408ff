"""Hosts that attack a whole crawl rather than a page (opt-in: `testweb serve --floods`).

Pure python. Each is linked from nowhere (a test seeds it) and exhausts something a per-page
limit does not bound:

- www.link-bomb.com: a homepage of LINK_BOMB_LINKS in-host links (`<a href=zzzz>`, under
  10 MB, so the page limit keeps it), each a small page linking three more of them: memory,
  if a crawl queues them all.
- www.redirect-farm.com: pages whose in-host links redirect to new subdomains
  (`/r/<n>` -> `http://h<n>.redirect-farm.com/`), each alike: hosts without end under a
  crawl's defaults.
- www.link-farm.com: pages each linking FARM_FANOUT pages on new subdomains: hosts without
  end when a crawl follows links to other hosts.
- www.cookie-flood.com: every page sets COOKIES_PER_PAGE new cookies of COOKIE_BYTES bytes
  and links five more pages: the Cookie header a crawl sends back grows without end.
- www.silent-robots.com: robots.txt is accepted and never answered (its pages are fine).
- www.silent-page.com: no robots.txt (404), and a homepage never answered.

A `Silent` response tells the server to keep the connection open and never answer.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from urllib.parse import urlsplit

from tianwang.testweb.response import Response

LINK_BOMB = "www.link-bomb.com"
REDIRECT_FARM = "redirect-farm.com"
LINK_FARM = "link-farm.com"
COOKIE_FLOOD = "www.cookie-flood.com"
SILENT_ROBOTS = "www.silent-robots.com"
SILENT_PAGE = "www.silent-page.com"
FLOOD_HOSTS = (LINK_BOMB, f"www.{REDIRECT_FARM}", f"www.{LINK_FARM}", COOKIE_FLOOD,
               SILENT_ROBOTS, SILENT_PAGE)

LINK_BOMB_LINKS = 700_000
FARM_FANOUT = 20
COOKIES_PER_PAGE = 20
COOKIE_BYTES = 4000
_DIGITS = "0123456789abcdefghijklmnopqrstuvwxyz"
_HTML = "text/html; charset=utf-8"


@dataclass(frozen=True, slots=True)
class Silent(Response):
    """Accepted and never answered: the server holds the connection open."""


def _base36(number: int, width: int = 4) -> str:
    out = []
    for _ in range(width):
        number, digit = divmod(number, 36)
        out.append(_DIGITS[digit])
    return "".join(reversed(out))


def _page(title: str, links: list[str], extra: str = "") -> bytes:
    anchors = "".join(f'<li><a href="{link}">{link}</a></li>\n' for link in links)
    return (f"<!DOCTYPE html>\n<html><head><title>{title}</title></head><body>\n"
            f"<h1>{title}</h1>\n{extra}<ul>\n{anchors}</ul>\n</body></html>\n").encode()


def _html(body: bytes, headers: list[tuple[str, str]] | None = None) -> Response:
    return Response(200, [("Content-Type", _HTML), *(headers or [])], body)


def _not_found() -> Response:
    return Response(404, [("Content-Type", "text/plain")], b"not found\n")


class FloodWeb:
    """The flood hosts' answers (None for a url of another host)."""

    def respond(self, url: str) -> Response | None:
        parts = urlsplit(url)
        host, path = (parts.hostname or ""), parts.path or "/"
        if host == LINK_BOMB or host.endswith(f".{LINK_BOMB.removeprefix('www.')}"):
            return self._link_bomb(path)
        if host.endswith(f".{REDIRECT_FARM}"):
            return self._redirect_farm(host, path)
        if host.endswith(f".{LINK_FARM}"):
            return self._link_farm(host, path)
        if host == COOKIE_FLOOD:
            return self._cookie_flood(path)
        if host == SILENT_ROBOTS:
            if path == "/robots.txt":
                return Silent(200, [], b"")
            return _html(_page("quiet", ["/a.html", "/b.html"]))
        if host == SILENT_PAGE:
            return _not_found() if path == "/robots.txt" else Silent(200, [], b"")
        return None

    def _link_bomb(self, path: str) -> Response:
        if path == "/robots.txt":
            return _not_found()
        if path == "/":
            return _html(b"".join(bomb_lines()))
        name = path.lstrip("/")
        if len(name) != 4 or any(c not in _DIGITS for c in name):
            return _not_found()
        number = int(name, 36)
        links = [_base36((number * 3 + k) % LINK_BOMB_LINKS) for k in (1, 2, 3)]
        return _html(_page(f"page {name}", links))

    def _redirect_farm(self, host: str, path: str) -> Response:
        if path == "/robots.txt":
            return _not_found()
        if path.startswith("/r/") and path[3:].isdigit():
            target = f"http://h{path[3:]}.{REDIRECT_FARM}/"
            return Response(301, [("Content-Type", _HTML), ("Location", target)], b"")
        if path != "/":
            return _not_found()
        seed = _host_number(host)
        return _html(_page(host, [f"/r/{seed * 10 + k}" for k in range(1, 11)]))

    def _link_farm(self, host: str, path: str) -> Response:
        if path == "/robots.txt":
            return _not_found()
        if path != "/":
            return _not_found()
        seed = _host_number(host)
        first = seed * FARM_FANOUT
        links = [f"http://h{first + k}.{LINK_FARM}/" for k in range(1, FARM_FANOUT + 1)]
        return _html(_page(host, links))

    def _cookie_flood(self, path: str) -> Response:
        if path == "/robots.txt":
            return _not_found()
        number = int(path[3:-5]) if path.startswith("/p/") and path.endswith(".html") else 0
        if path not in ("/", f"/p/{number}.html"):
            return _not_found()
        cookies = [("Set-Cookie", f"c{number}x{k}={'v' * COOKIE_BYTES}; Path=/")
                   for k in range(COOKIES_PER_PAGE)]
        links = [f"/p/{number * 5 + k}.html" for k in range(1, 6)]
        return _html(_page(f"cookies {number}", links), cookies)


def bomb_lines() -> Iterator[bytes]:
    """The link bomb's homepage: LINK_BOMB_LINKS links, 13 bytes each."""
    yield b"<!DOCTYPE html>\n<html><head><title>links</title></head><body>\n"
    for start in range(0, LINK_BOMB_LINKS, 10_000):
        end = min(start + 10_000, LINK_BOMB_LINKS)
        yield "".join(f"<a href={_base36(n)}>" for n in range(start, end)).encode()
    yield b"\n</body></html>\n"


def _host_number(host: str) -> int:
    """h<n>.farm -> n; www.farm -> 0."""
    label = host.split(".", 1)[0]
    return int(label[1:]) if label.startswith("h") and label[1:].isdigit() else 0
