"""The test web's junk: hosts and bodies a crawl should refuse (opt-in: SyntheticWeb(junk=True)).

Pure python. Spam host families (digit-led and look-alike subdomains with near-identical
homepages), hosts on other ports, IP-literal hosts in every spelling a browser accepts,
"localhost" (a name of this machine: refused, proxy or not), and a download host whose files
are binaries served with a wrong Content-Type or none, plus a text page too big to keep.

Hostile hosts (issue 16), served but linked from nowhere (a test seeds them): decompression
bombs (1 GiB inflated, gzip, deflate and br) as a page and as robots.txt, binaries declared
text, redirects to garbage Locations, and crawler traps (endless session ids, an endless
calendar, /a/a/a/... and a growing query), each with its truth.

Every normal homepage links a few junk hosts, so a crawl that leaves its hosts reaches them.
truth() marks each junk url with "filter": the reason a correct crawl refuses it (None for a
url it fetches). The reasons are assigned by construction here, not computed by the filter.
"""

from __future__ import annotations

import functools
import hashlib
import re
import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property
from random import Random
from typing import Any

from tianwang.testweb.response import Response

# The spam list of this web: a domain (with all its subdomains) and a regex, as a crawl
# would be given them in TIANWANG_SPAM_LIST.
SPAM_LIST = """\
# spam list of the test web's junk hosts
fangwen.com
^u[0-9]+\\.a8blog\\.cn$
"""
FAMILY_SIZE = 100  # hosts in each spam family
# (domain, first label of each host, filter reason): one reason applies to each host.
FAMILIES = (
    ("fangwen.com", "letter", "spam"),  # look-alikes "a2329115.fangwen.com": the listed domain
    ("a8blog.cn", "mixed", None),  # "u123.a8blog.cn" (the regex: spam), "396393918..." (digit)
    ("qqhome.net", "digit", "digit"),  # "5566771.qqhome.net": not listed, digit-led
)
PORT_HOSTS = ("www.devtest1.com:8080", "www.devtest2.com:8080", "bbs.devtest3.net:8000",
              "www.devtest4.cn:443", "www.devtest5.com:81")
# Each spelling as written in a link; all are IP literals to a browser.
IP_HOSTS = (
    "61.135.169.125", "10.1.2.3", "192.168.0.10", "2130706433", "0x7f.1", "0177.0.0.1",
    "127.1", "0x3d.0x87.0xa9.0x7d", "1032300925", "0x3d87a97d", "075.0207.0251.0175",
    "61.0x87.43389", "[::1]", "[2001:db8::1]", "[::ffff:61.135.169.125]",
)
PRIVATE_HOST = "localhost"  # this machine's name: refused, through a proxy too
DOWNLOAD_HOST = "www.softdown1.com"  # a normal host (fetched) whose files are junk bodies
MB = 1024 * 1024
# path -> (kind, served Content-Type or None, magic, size, filter reason)
DOWNLOADS = {
    "/pic.php?id=1": ("image", "application/octet-stream", b"\xff\xd8\xff\xe0\x00\x10JFIF\x00",
                      300 * 1024, "content_type"),
    "/getfile.asp?id=2": ("binary", None, b"PK\x03\x04", 9 * MB, "content_type"),
    "/download.php?id=3": ("binary", "application/octet-stream", b"PK\x03\x04", 64 * MB,
                           "content_type"),
    "/video.php?id=4": ("binary", "video/mp4", b"\x00\x00\x00\x18ftypmp42", 24 * MB,
                        "content_type"),
    "/bigpage.html": ("html", "text/html; charset=utf-8", b"<!DOCTYPE html>\n<html><body>\n",
                      12 * MB, "too_big"),
}
# Served without a Content-Type but plainly text: judged by its first bytes, fetched, stored.
UNTYPED_PAGE = "/notype.htm"
README_PAGE = "/readme.txt"
CHUNK = 64 * 1024


@dataclass(frozen=True, slots=True)
class StreamedResponse(Response):
    """A large body the server writes chunk by chunk, never held whole in memory."""

    length: int = 0
    magic: bytes = b""
    fill: bytes = b""

    def chunks(self) -> Iterator[bytes]:
        data = self.magic + self.fill[: max(0, CHUNK - len(self.magic))]
        left = self.length
        while left > 0:
            piece = data[:left]
            yield piece
            left -= len(piece)
            data = self.fill[:CHUNK]


class JunkWeb:
    """The junk part of a web; `normal_hosts` are the web's own hosts, which link into it."""

    def __init__(self, seed: int, normal_hosts: list[str]) -> None:
        self.seed, self.normal_hosts = seed, normal_hosts

    # -- hosts --------------------------------------------------------------------------

    @cached_property
    def families(self) -> dict[str, tuple[str, str]]:
        """Family host -> (its domain, filter reason)."""
        hosts: dict[str, tuple[str, str]] = {}
        for domain, style, reason in FAMILIES:
            rng, count = Random(f"junk:{self.seed}:{domain}"), 0
            while count < FAMILY_SIZE:
                number = rng.randint(1000000, 999999999)
                if style == "letter" or (style == "mixed" and count % 2):
                    letter = "u" if style == "mixed" else rng.choice("abcdefghkmnpqrstwxyz")
                    host, why = f"{letter}{number}.{domain}", reason or "spam"
                else:
                    host, why = f"{number}.{domain}", reason or "digit"
                if host not in hosts:
                    hosts[host], count = (domain, why), count + 1
        return hosts

    @cached_property
    def hosts(self) -> dict[str, str | None]:
        """Every junk host (as written in a url, port included) -> its filter reason."""
        hosts: dict[str, str | None] = {h: why for h, (_d, why) in self.families.items()}
        hosts |= dict.fromkeys(PORT_HOSTS, "port")
        hosts |= dict.fromkeys(IP_HOSTS, "ip")
        hosts[PRIVATE_HOST] = "private"
        hosts[DOWNLOAD_HOST] = None
        return hosts

    def homepages(self) -> list[str]:
        return [f"http://{host}/" for host in self.hosts]

    @cached_property
    def entry_points(self) -> list[str]:
        """The junk homepages normal homepages link to: a few of each family, all others."""
        firsts = {}
        for host, (domain, why) in self.families.items():
            firsts.setdefault((domain, why), []).append(host)
        picked = [h for group in firsts.values() for h in group[:2]]
        others = [h for h in self.hosts if h not in self.families]
        return [f"http://{h}/" for h in [DOWNLOAD_HOST, *picked, *others]]

    def links_of_normal(self, index: int) -> list[str]:
        """The junk links added to normal host `index`'s homepage."""
        points = self.entry_points
        return [points[(3 * index + k) % len(points)] for k in range(3)]

    # -- serving ------------------------------------------------------------------------

    def respond(self, url: str) -> Response | None:
        """The answer for a junk url, None for a url of the normal web."""
        scheme, _sep, rest = url.partition("://")
        netloc, slash, path = rest.partition("/")
        netloc = netloc.lower()
        path = slash + path or "/"
        if netloc.startswith(f"{PRIVATE_HOST}:"):  # fetched directly, at the server's port
            netloc = PRIVATE_HOST
        if scheme == "http" and netloc in HOSTILE_HOSTS:
            return _hostile(netloc, path)
        if scheme != "http" or netloc not in self.hosts:
            return None
        if netloc == DOWNLOAD_HOST:
            return self._download(path)
        if path != "/":
            return _plain(404, b"<html><body>Not Found</body></html>\n")
        return _plain(200, self._homepage(netloc))

    def _download(self, path: str) -> Response:
        if path == "/":
            return _plain(200, self._download_home())
        if path == UNTYPED_PAGE:
            return Response(200, [], self._untyped_page())
        if path == README_PAGE:
            return Response(200, [("Content-Type", "text/plain; charset=utf-8")], _README)
        if path not in DOWNLOADS:
            return _plain(404, b"<html><body>Not Found</body></html>\n")
        _kind, mime, magic, size, _why = DOWNLOADS[path]
        headers = [("Content-Type", mime)] if mime else []
        fill = _HTML_FILL if magic.startswith(b"<!DOCTYPE") else _fill(path)
        return StreamedResponse(200, headers, b"", length=size, magic=magic, fill=fill)

    def links(self, host: str) -> list[str]:
        """The links of a junk homepage."""
        if host == DOWNLOAD_HOST:
            files = [*DOWNLOADS, UNTYPED_PAGE, README_PAGE]
            return [f"http://{DOWNLOAD_HOST}{path}" for path in files]
        family = self.families.get(host)
        if family is None:
            return [f"http://{host}/"]
        mates = [h for h, (domain, _w) in self.families.items() if domain == family[0]]
        start = mates.index(host)
        ring = [mates[(start + k) % len(mates)] for k in range(1, 9)]  # a link farm
        return [f"http://{h}/" for h in ring]

    def _homepage(self, host: str) -> bytes:
        """Near-identical homepages: one template, the host name and its links swapped in."""
        anchors = "".join(f'<li><a href="{u}">{u[7:-1]}</a></li>\n' for u in self.links(host))
        return (
            "<!DOCTYPE html>\n<html><head><title>Welcome - free homepage</title></head>\n"
            f"<body><h1>{host}</h1>\n<p>This free personal homepage is under construction."
            f" Visit my friends:</p>\n<ul>\n{anchors}</ul>\n<p>Powered by free hosting.</p>"
            "\n</body></html>\n"
        ).encode("ascii")

    def _download_home(self) -> bytes:
        anchors = "".join(f'<li><a href="{u}">{u.rsplit("/", 1)[1]}</a></li>\n'
                          for u in self.links(DOWNLOAD_HOST))
        return ("<!DOCTYPE html>\n<html><head><title>Software downloads</title></head>\n"
                f"<body><h1>Downloads</h1>\n<ul>\n{anchors}</ul>\n</body></html>\n").encode()

    def _untyped_page(self) -> bytes:
        return (b"<!DOCTYPE html>\n<html><head><title>No type</title></head>\n<body><p>"
                b"This page is served without a Content-Type header.</p></body></html>\n")

    # -- the normal web's homepages -------------------------------------------------------

    def decorate(self, index: int, body: bytes) -> bytes:
        """A normal homepage with its junk links added before </body>."""
        anchors = " ".join(f'<a href="{u}">link</a>' for u in self.links_of_normal(index))
        block = f'<div class="friends">{anchors}</div>\n'.encode("ascii")
        at = body.rfind(b"</body>")
        return body[:at] + block + body[at:] if at >= 0 else body + block

    def mark(self, index: int, record: dict[str, Any], body: bytes | None) -> dict[str, Any]:
        """A normal truth record in a junk web: its filter (None), a homepage's junk links."""
        record["filter"] = None
        if record["kind"] == "home":
            record["links"] = record["links"] + self.links_of_normal(index)
            if body is not None:
                decorated = self.decorate(index, body)
                record["bytes"] = len(decorated)
                record["md5"] = hashlib.md5(decorated).hexdigest()
        return record

    # -- truth --------------------------------------------------------------------------

    def truth(self, bodies: bool = True) -> Iterator[dict[str, Any]]:
        for host, why in self.hosts.items():
            home = f"http://{host}/"
            yield self._record(home, host, why, "junk-home", self.links(host), bodies)
            if host == DOWNLOAD_HOST:
                for url in self.links(host):
                    path = url[len(home) - 1:]
                    kind, why_file = _FILE_KINDS.get(path) or DOWNLOADS[path][::4]
                    yield self._record(url, host, why_file, kind, [], bodies, distance=1)
        yield from self.hostile_truth(bodies)

    def hostile_truth(self, bodies: bool = True) -> Iterator[dict[str, Any]]:
        """The hostile hosts' urls (a trap's first pages only: it has no end)."""
        for host, kind in HOSTILE_HOSTS.items():
            home = f"http://{host}/"
            record = self._record(home, host, None, f"{kind}-home", hostile_links(host), bodies)
            if kind == "trap":
                record["trap"] = TRAP_HOSTS[host]
            yield record
            if kind in ("bomb", "text", "location"):
                for url in hostile_links(host):
                    path = url[len(home) - 1:]
                    why = FAKE_TEXT[path][2] if kind == "text" else _HOSTILE_FILTERS[kind]
                    yield self._record(url, host, why, kind, [], bodies, distance=1)

    def _record(self, url: str, host: str, why: str | None, kind: str, links: list[str],
                bodies: bool, distance: int = 0) -> dict[str, Any]:
        answer = self.respond(url)
        assert answer is not None
        mime = answer.header("Content-Type")
        record = {
            "url": url, "host": host, "status": answer.status,
            "content_type": mime.split(";")[0] if mime else None, "links": links, "kind": kind,
            "location": answer.header("Location"),
            "charset": mime.split("charset=")[1] if mime and "charset=" in mime else None,
            "robots_allowed": True, "distance": distance, "filter": why,
        }
        if bodies:
            digest, size = hashlib.md5(), 0
            for chunk in body_chunks(answer):
                digest.update(chunk)
                size += len(chunk)
            record["bytes"], record["md5"] = size, digest.hexdigest()
        if isinstance(answer, StreamedResponse):
            record["streamed"] = True
        return record


def body_chunks(answer: Response) -> Iterator[bytes]:
    """The body of any answer, chunk by chunk."""
    if isinstance(answer, StreamedResponse):
        yield from answer.chunks()
    else:
        yield answer.body


def _plain(status: int, body: bytes) -> Response:
    return Response(status, [("Content-Type", "text/html; charset=utf-8")], body)


def _fill(path: str) -> bytes:
    """CHUNK bytes of noise, different for each file."""
    rng = Random(f"junk-fill:{path}")
    return rng.randbytes(CHUNK)


_HTML_FILL = (b"<p>" + b"A very long page of generated text that no index wants. " * 64
              + b"</p>\n") * ((CHUNK // 3700) + 1)
_FILE_KINDS = {UNTYPED_PAGE: ("html", None), README_PAGE: ("text", None)}
_README = b"Software downloads\n\nAll files on this host are free to download.\n"


# --- hostile hosts (issue 16) ------------------------------------------------------------------

GIB = 1 << 30
_MIB_ZEROS = bytes(1 << 20)
# Decompression bombs: 1 GiB of zeros, about 1 MB as gzip or deflate and 13 KB as br.
BOMB_HOSTS = {"www.gzip-bomb.com": "gzip", "www.deflate-bomb.com": "deflate",
              "www.br-bomb.com": "br"}
BOMB_PAGE = "/bomb.html"
# zlib.crc32 and zlib.adler32 of GIB zero bytes: the trailers of the gzip and zlib streams.
_GIB_CRC32, _GIB_ADLER32 = 0x5B64C2B0, 0xC02D0001
# Bodies declared text (or untyped) that are binary, and real text with high bytes.
TEXT_HOST = "www.fake-text.com"
# path -> (Content-Type or None, body, filter reason)
FAKE_TEXT: dict[str, tuple[str | None, bytes, str | None]] = {
    "/photo.html": ("text/html", b"\x89PNG\r\n\x1a\n" + Random("png").randbytes(200 * 1024),
                    "not_text"),
    "/tool.txt": ("text/plain", b"\x7fELF\x02\x01\x01\x00" + Random("elf").randbytes(35 * 1024),
                  "not_text"),
    "/raw": (None, bytes(0x80 + b % 0x80 for b in Random("high").randbytes(50 * 1024)),
             "content_type"),
    "/gbk.html": ("text/html; charset=gbk", ("<html><head><title>中文网页</title></head><body>"
                  + "<p>天网搜索引擎的网页收集。</p>" * 200 + "</body></html>").encode("gbk"),
                  None),
    "/utf8.txt": ("text/plain; charset=utf-8", ("北京大学网络实验室。" * 300).encode(), None),
    # No ASCII byte before its end: judged by decoding (GB18030), not by its share of ASCII.
    "/gbk.txt": ("text/plain; charset=gbk", ("天网中文文本" * 200 + "\n").encode("gbk"), None),
}
LOCATION_HOST = "www.bad-location.com"
BAD_LOCATIONS = {"/js": "javascript:alert(1)", "/bracket": "http://[bad/",
                 "/port": "http://www.example.com:99999999/"}
# Crawler traps: every page links further pages without end.
TRAP_HOSTS = {"www.session-trap.com": "session", "www.calendar-trap.com": "calendar",
              "www.repeat-trap.com": "repeat"}
SESSION_PAGES = 20  # the session trap's real pages besides its homepage
LONG_STEP = 100  # characters the growing query adds at each page
HOSTILE_HOSTS = {**dict.fromkeys(BOMB_HOSTS, "bomb"), TEXT_HOST: "text",
                 LOCATION_HOST: "location", **dict.fromkeys(TRAP_HOSTS, "trap")}
_HOSTILE_FILTERS = {"bomb": "too_big", "location": "bad_location"}


def _zlib_bomb(wbits: int) -> tuple[bytes, bytes, bytes]:
    """Head, repeated part and tail of a GIB-of-zeros gzip (wbits 31) or zlib (15) stream:
    after a full flush the compressor starts afresh, so each MiB compresses the same."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, wbits)
    head = compressor.compress(_MIB_ZEROS) + compressor.flush(zlib.Z_FULL_FLUSH)
    repeat = compressor.compress(_MIB_ZEROS) + compressor.flush(zlib.Z_FULL_FLUSH)
    if wbits == 31:  # the last (empty) block, then CRC-32 and size of the whole
        tail = compressor.flush()[:-8] + struct.pack("<II", _GIB_CRC32, GIB & 0xFFFFFFFF)
    else:
        tail = compressor.flush()[:-4] + struct.pack(">I", _GIB_ADLER32)
    return head, repeat, tail


def _brotli_bomb() -> tuple[bytes, bytes, bytes]:
    import brotli  # a Scrapy dependency (its br decoding)

    compressor = brotli.Compressor(quality=5, lgwin=22)
    head = compressor.process(_MIB_ZEROS) + compressor.flush()
    repeat = compressor.process(_MIB_ZEROS) + compressor.flush()
    return head, repeat, compressor.finish()


@functools.cache
def bomb_parts(encoding: str) -> tuple[bytes, bytes, bytes]:
    """The compressed stream of GIB zero bytes, as head + repeat * 1023 + tail."""
    return _brotli_bomb() if encoding == "br" else _zlib_bomb(31 if encoding == "gzip" else 15)


@dataclass(frozen=True, slots=True)
class BombResponse(StreamedResponse):
    """GIB zero bytes compressed: a small body that inflates to a gigabyte."""

    encoding: str = "gzip"

    def chunks(self) -> Iterator[bytes]:
        head, repeat, tail = bomb_parts(self.encoding)
        yield head
        batch = max(1, CHUNK // len(repeat))
        left = (GIB >> 20) - 1
        while left > 0:
            yield repeat * min(batch, left)
            left -= batch
        yield tail


def bomb(encoding: str, mime: str) -> BombResponse:
    head, repeat, tail = bomb_parts(encoding)
    length = len(head) + len(repeat) * ((GIB >> 20) - 1) + len(tail)
    headers = [("Content-Type", mime), ("Content-Encoding", encoding)]
    return BombResponse(200, headers, b"", length=length, encoding=encoding)


def hostile_links(host: str) -> list[str]:
    """The links of a hostile host's homepage."""
    kind = HOSTILE_HOSTS[host]
    paths = {"bomb": [BOMB_PAGE], "text": list(FAKE_TEXT), "location": list(BAD_LOCATIONS),
             "trap": []}[kind]
    if kind == "trap":
        return _trap_links(host, f"http://{host}/")
    return [f"http://{host}{path}" for path in paths]


def _hostile(host: str, path: str) -> Response:
    kind = HOSTILE_HOSTS[host]
    if path == "/":
        return _plain(200, _link_page(host, hostile_links(host)))
    if kind == "bomb" and path in (BOMB_PAGE, "/robots.txt"):
        mime = "text/plain" if path == "/robots.txt" else "text/html; charset=utf-8"
        return bomb(BOMB_HOSTS[host], mime)
    if kind == "text" and path in FAKE_TEXT:
        mime, body, _why = FAKE_TEXT[path]
        return Response(200, [("Content-Type", mime)] if mime else [], body)
    if kind == "location" and path in BAD_LOCATIONS:
        headers = [("Content-Type", "text/html; charset=utf-8"),
                   ("Location", BAD_LOCATIONS[path])]
        return Response(302, headers, b"<html><body>Moved</body></html>\n")
    if kind == "trap" and path != "/robots.txt":
        url = f"http://{host}{path}"
        links = _trap_links(host, url)
        if links:
            return _plain(200, _link_page(host, links))
    return _plain(404, b"<html><body>Not Found</body></html>\n")


_CALENDAR = re.compile(r"/cal/(\d{1,6})/(\d\d)/\Z")
_REPEAT = re.compile(r"/(?:a/)*(?:page\.html)?\Z")


def _trap_links(host: str, url: str) -> list[str]:
    """The links of a trap page ([] for a url the trap does not serve)."""
    path = url[len(host) + 7:]
    trap = TRAP_HOSTS[host]
    if trap == "session":
        page = path.split("?", 1)[0]
        if page != "/" and page not in {f"/p{k}.html" for k in range(SESSION_PAGES)}:
            return []
        sid = hashlib.md5(url.encode()).hexdigest()[:16]  # a new id for every url visited
        return [f"http://{host}/p{k}.html?sid={sid}" for k in range(SESSION_PAGES)]
    if trap == "calendar":
        match = _CALENDAR.match(path)
        if path == "/":
            year, month = 2026, 11
        elif match:
            year, month = int(match.group(1)), int(match.group(2))
        else:
            return []
        after = (year + month // 12, month % 12 + 1)
        before = (year - (month == 1), (month - 2) % 12 + 1)
        return [f"http://{host}/cal/{y}/{m:02d}/" for y, m in (after, before) if y > 0]
    if path.startswith("/long?p="):
        return [f"{url}{'x' * LONG_STEP}"]
    if not _REPEAT.match(path):
        return []
    directory = url.rsplit("/", 1)[0]
    return [f"{directory}/a/", f"{directory}/page.html", f"http://{host}/long?p=x"]


def _link_page(host: str, links: list[str]) -> bytes:
    anchors = "".join(f'<li><a href="{u}">{u}</a></li>\n' for u in links)
    return (f"<!DOCTYPE html>\n<html><head><title>{host}</title></head>\n<body><h1>{host}</h1>\n"
            f"<ul>\n{anchors}</ul>\n</body></html>\n").encode()
