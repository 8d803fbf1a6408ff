"""A hostile web on loopback: a forward proxy that writes raw bytes, as broken or hostile
servers do (robots.txt over every limit, answers no parser reads, session ids, text that turns
binary, names of the crawler's own machine).

    python -m tests.hostile_web --access-log FILE

prints its address (http://127.0.0.1:PORT) first, then serves until SIGTERM. A crawl points
TIANWANG_PROXY at it and asks `GET http://host/path HTTP/1.1`; each answer is written as
raw bytes, so it can be anything a real server may send: a lowercase status line, two
Content-Lengths, a 1 MB header, a 50 MB robots.txt. Each connection serves one request and
is closed. The access log has one JSON line per request (the url as asked, and "sent": the
body bytes that left, "complete": whether all of them did).

The truth a test checks against is written here, by construction, apart from the crawler's
code: which urls a correct crawl fetches, which it must not, and why (ROBOTS_HOSTS and
robots_allowed, FAULTS and their outcomes, SESSION_PAGES and KEPT_URLS, FAKE_TEXT, LOCAL_NAMES).
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import hashlib
import json
import random
import re
import signal
import socket
import sys
import time
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

KIB, MIB = 1024, 1024 * 1024
HTML = b"text/html; charset=utf-8"


@dataclass
class Answer:
    """A response as raw bytes: the head (status line and headers, as sent) and a body
    given whole or as chunks (a large one, made as it is written)."""

    head: bytes
    body: bytes = b""
    chunks: Iterator[bytes] | None = None
    status: int = 200


def answer(status: int, body: bytes = b"", content_type: bytes | None = HTML,
           headers: tuple[tuple[bytes, bytes], ...] = (), reason: bytes = b"OK") -> Answer:
    lines = [b"HTTP/1.1 %d %s" % (status, reason)]
    if content_type:
        lines.append(b"Content-Type: " + content_type)
    lines += [name + b": " + value for name, value in headers]
    lines += [b"Content-Length: %d" % len(body), b"Connection: close"]
    return Answer(b"\r\n".join(lines) + b"\r\n\r\n", body, status=status)


def page(title: str, links: list[str] = (), text: str = "") -> bytes:
    anchors = "".join(f'<li><a href="{href}">{href}</a></li>\n' for href in links)
    return (f"<!DOCTYPE html>\n<html><head><title>{title}</title></head>\n<body><h1>{title}</h1>"
            f"\n<p>{text}</p>\n<ul>\n{anchors}</ul></body></html>\n").encode()


NOT_FOUND = answer(404, b"<html><body>Not Found</body></html>\n", reason=b"Not Found")


# -- robots.txt (RFC 9309): Disallow: /secret on line 2, then more than the limit ---------

ROBOTS_HEAD = b"User-agent: *\nDisallow: /secret\n"


def filler_lines(seed: str, size: int) -> Iterator[bytes]:
    """`size` bytes of robots.txt comment lines, random enough not to compress much."""
    rng = random.Random(seed)
    line_bytes = 64 * KIB
    sent = 0
    while sent < size:
        block = b"".join(b"# %s\n" % rng.randbytes(45).hex().encode() for _ in range(700))
        block = block[: min(line_bytes, size - sent)]
        sent += len(block)
        yield block


def big_robots(seed: str, size: int) -> Iterator[bytes]:
    yield ROBOTS_HEAD
    yield from filler_lines(seed, size - len(ROBOTS_HEAD))


LAST_CHUNK = b"0\r\n\r\n"


def chunk(data: bytes) -> bytes:
    """`data` as one chunk of the chunked transfer coding."""
    return b"%x\r\n%s\r\n" % (len(data), data)


def robots_sized(host: str, size: int, chunked: bool = False) -> Answer:
    head = [b"HTTP/1.1 200 OK", b"Content-Type: text/plain", b"Connection: close"]
    if chunked:
        head.append(b"Transfer-Encoding: chunked")
        body = _then(map(chunk, big_robots(host, size)), LAST_CHUNK)
    else:
        head.append(b"Content-Length: %d" % size)
        body = big_robots(host, size)
    return Answer(b"\r\n".join(head) + b"\r\n\r\n", chunks=body)


def robots_tiny_chunks(host: str, size: int) -> Answer:
    """A robots.txt of `size` bytes sent chunked, each byte its own chunk."""
    head = (b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nConnection: close\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n")
    frames = (b"".join(chunk(block[at:at + 1]) for at in range(len(block)))
              for block in big_robots(host, size))
    return Answer(head, chunks=_then(frames, LAST_CHUNK))


def _then(chunks: Iterator[bytes], last: bytes) -> Iterator[bytes]:
    yield from chunks
    yield last


def gzip_of(chunks: Iterator[bytes]) -> bytes:
    compressor = zlib.compressobj(6, zlib.DEFLATED, 31)
    parts = [compressor.compress(chunk) for chunk in chunks]
    return b"".join(parts) + compressor.flush()


def robots_gzip(host: str, inflated: int) -> Answer:
    """robots.txt sent gzip-encoded: 12 MB of it once compressed (random filler)."""
    body = _gzip_cache(host, inflated)
    return answer(200, body, b"text/plain", headers=((b"Content-Encoding", b"gzip"),))


_GZIPS: dict[tuple[str, int], bytes] = {}


def _gzip_cache(host: str, inflated: int) -> bytes:
    key = (host, inflated)
    if key not in _GZIPS:
        _GZIPS[key] = gzip_of(big_robots(host, inflated))
    return _GZIPS[key]


def robots_bomb(host: str) -> Answer:
    """robots.txt whose gzip is small and inflates to 12 MB (the head, then comment lines
    of one repeated byte)."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, 31)
    body = compressor.compress(ROBOTS_HEAD)
    line = b"#" + b"x" * 1022 + b"\n"
    for _ in range(12 * KIB):
        body += compressor.compress(line)
    body += compressor.flush()
    return answer(200, body, b"text/plain", headers=((b"Content-Encoding", b"gzip"),))


def robots_text(encoded: bytes) -> Answer:
    return answer(200, encoded, b"text/plain")


ROBOTS_TEXT = ROBOTS_HEAD.decode() + "Allow: /\n"
# host -> what its robots.txt is; every one says Disallow: /secret on line 2.
ROBOTS_HOSTS = {
    "www.robots-11mb.com": lambda h: robots_sized(h, 11 * MIB),
    "www.robots-50mb.com": lambda h: robots_sized(h, 50 * MIB),
    "www.robots-chunked.com": lambda h: robots_sized(h, 11 * MIB, chunked=True),
    "www.robots-tinychunks.com": lambda h: robots_tiny_chunks(h, MIB),
    "www.robots-gzip.com": lambda h: robots_gzip(h, 24 * MIB),  # 12 MB once compressed
    "www.robots-gzipbomb.com": robots_bomb,
    "www.robots-bom.com": lambda h: robots_text(b"\xef\xbb\xbf" + ROBOTS_TEXT.encode()),
    "www.robots-utf16le.com": lambda h: robots_text(ROBOTS_TEXT.encode("utf-16")),  # BOM, LE
    "www.robots-utf16be.com": lambda h: robots_text(b"\xfe\xff" + ROBOTS_TEXT.encode("utf-16-be")),
}
# robots.txt that cannot be read at all: gzip said, not gzip sent. Unavailable: disallow.
UNREADABLE_ROBOTS_HOST = "www.robots-unreadable.com"
ROBOTS_PAGES = ("/", "/open.html", "/secret/page.html", "/secretary.html")


def robots_site(host: str, path: str) -> Answer:
    if path == "/robots.txt":
        if host == UNREADABLE_ROBOTS_HOST:
            return answer(200, b"\x00garbage, not gzip" * 50, b"text/plain",
                          headers=((b"Content-Encoding", b"gzip"),))
        return ROBOTS_HOSTS[host](host)
    if path not in ROBOTS_PAGES:
        return NOT_FOUND
    links = [f"http://{host}{p}" for p in ROBOTS_PAGES[1:]] if path == "/" else []
    return answer(200, page(f"{host}{path}", links))


def robots_allowed(path: str) -> bool:
    """What `Disallow: /secret` allows (RFC 9309: a prefix match)."""
    return not path.startswith("/secret")


# -- protocol faults: each its own host, linked from PROTOCOL_HOME ------------------------

PROTOCOL_HOME = "www.protocol-faults.com"
LONG_HOST = ".".join(["a" * 63] * 4) + ".com"  # 259 characters, labels of 63
LONG_LABEL_HOST = "x" * 64 + ".com"  # a label of 64
DOTS_HOST = ".."


def _html_head(*lines: bytes, length: int | None = None, status: bytes = b"HTTP/1.1 200 OK"):
    parts = [status, b"Content-Type: text/html; charset=utf-8", *lines]
    if length is not None:
        parts.append(b"Content-Length: %d" % length)
    parts.append(b"Connection: close")
    return b"\r\n".join(parts) + b"\r\n\r\n"


def fault_body(host: str) -> bytes:
    return page(f"{host}: a page behind a fault")


def _refresh(host: str, target: str) -> Answer:
    body = fault_body(host).replace(
        b"<head>", b'<head><meta http-equiv="refresh" content="0; url=%s">' % target.encode())
    return answer(200, body)


def _faulty(host: str, *lines: bytes, status: bytes = b"HTTP/1.1 200 OK") -> Answer:
    body = fault_body(host)
    return Answer(_html_head(*lines, length=len(body), status=status), body)


HEAD_LINE = b"X-Pad: " + b"p" * 1000 + b"\r\n"
BIG_HEAD_LINES = 160  # a head of 160 KB: more than any real one, less than the crawl's bound


def endless_head() -> Iterator[bytes]:
    """Header lines, each short, without end: the head never ends."""
    while True:
        yield HEAD_LINE * 64


def endless_interim() -> Iterator[bytes]:
    """Interim answers without end: each a whole head, none the response."""
    while True:
        yield b"HTTP/1.1 100 Continue\r\n\r\n" * 2048


def chunked_body(piece: int, count: int) -> Callable[[], Iterator[bytes]]:
    """A body in `count` chunks of `piece` bytes each (chunked transfer coding), then its end."""
    frame = chunk(b"c" * piece)

    def stream() -> Iterator[bytes]:
        for start in range(0, count, 1024):
            yield frame * min(1024, count - start)
        yield LAST_CHUNK
    return stream


ENDLESS_HEAD_HOST, ENDLESS_INTERIM_HOST = "www.endless-head.com", "www.endless-continue.com"
TINY_CHUNKS_HOST, SMALL_CHUNKS_HOST = "www.tiny-chunks.com", "www.small-chunks.com"
TINY_CHUNKS = 300 * 1024  # 1-byte chunks: 300 KB of body, each byte its own piece
SMALL_CHUNKS = 20 * 1024  # 50-byte chunks: a 1 MB page as a streaming server may send it
CHUNKED_HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nTransfer-Encoding: chunked\r\n\r\n"
# host -> what its answer streams after its head (made afresh for each request)
STREAMS: dict[str, Callable[[], Iterator[bytes]]] = {
    ENDLESS_HEAD_HOST: endless_head, ENDLESS_INTERIM_HOST: endless_interim,
    TINY_CHUNKS_HOST: chunked_body(1, TINY_CHUNKS),
    SMALL_CHUNKS_HOST: chunked_body(50, SMALL_CHUNKS)}

# host -> (its answer to "/", what a correct crawl makes of it). The outcomes are this web's
# reading of each (the truth): `error/<kind>` a failure, `filter/<kind>` a refusal, `stored`.
FAULTS: dict[str, tuple[Answer, str]] = {
    # A refresh to no url: ignored, as browsers do; the page is a page.
    "www.refresh-js.com": (_refresh("www.refresh-js.com", "javascript:alert(1)"), "stored"),
    "www.refresh-port.com": (_refresh("www.refresh-port.com",
                                      "http://www.example.com:99999999/"), "stored"),
    # Read as HTTP/1.1 by Twisted, curl and browsers alike.
    "www.lowercase-status.com": (_faulty("www.lowercase-status.com",
                                         status=b"http/1.1 200 ok"), "stored"),
    # A folded header (obs-fold) inside a good head: one header, as RFC 9112 5.2 reads it.
    "www.folded-header.com": (_faulty("www.folded-header.com", b"X-Folded: first part",
                                      b" second part"), "stored"),
    "www.two-lengths.com": (_faulty("www.two-lengths.com", b"Content-Length: 10"),
                            "error/bad_response"),
    "www.huge-header.com": (_faulty("www.huge-header.com", b"X-Huge: " + b"h" * MIB),
                            "error/bad_response"),
    # A continuation line before any header: no header it could continue.
    "www.folded-first.com": (_faulty("www.folded-first.com", status=b"HTTP/1.1 200 OK\r\n"
                                     b"  folded: before any header"), "error/bad_response"),
    # Heads without end: header lines, or 100 Continue answers (their STREAMS).
    ENDLESS_HEAD_HOST: (Answer(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n"),
                        "error/bad_response"),
    ENDLESS_INTERIM_HOST: (Answer(b""), "error/bad_response"),
    # A body in 300 KB one-byte chunks: cut off; a 1 MB one in 50-byte chunks: stored.
    TINY_CHUNKS_HOST: (Answer(CHUNKED_HEAD), "filter/tiny_chunks"),
    SMALL_CHUNKS_HOST: (Answer(CHUNKED_HEAD), "stored"),
    # A head of 160 KB that ends: read, the page stored.
    "www.big-head.com": (_faulty("www.big-head.com", *[HEAD_LINE[:-2]] * BIG_HEAD_LINES),
                         "stored"),
    "www.no-content.com": (Answer(b"HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n",
                                  status=204), "filter/no_content"),
    # Names no DNS can hold: never asked for.
    LONG_HOST: (answer(200, fault_body(LONG_HOST)), "filter/malformed"),
    LONG_LABEL_HOST: (answer(200, fault_body(LONG_LABEL_HOST)), "filter/malformed"),
    DOTS_HOST: (answer(200, fault_body(DOTS_HOST)), "filter/malformed"),
}


def protocol_site(host: str, path: str) -> Answer:
    if path == "/robots.txt":
        return NOT_FOUND
    if host == PROTOCOL_HOME and path == "/":
        return answer(200, page(PROTOCOL_HOME, [f"http://{h}/" for h in FAULTS]))
    if host in FAULTS and path == "/":
        fault = FAULTS[host][0]
        chunks = STREAMS[host]() if host in STREAMS else None
        return Answer(fault.head, fault.body, chunks, fault.status)
    return NOT_FOUND


# -- session ids: every link carries a fresh one, in six styles --------------------------

SESSION_HOST = "www.session-shop.com"
SESSION_PAGES = [f"/p{k}.html" for k in range(8)]
# Parameters that are not session ids: each url is its own page and must be fetched as is.
KEPT_URLS = ["/search.php?s=shoes", "/search.php?s=0123456789abcdef0123456789abcdeX",
             "/article.pl?sid=06/12/23/1747235", "/list.php?id=5&page=2",
             "/sid/about.html"]
STYLES = ("oscsid", "vbulletin", "aspnet", "pathsid", "sessid", "utm")


def session_id(visit: str, style: str, page_path: str) -> str:
    return hashlib.md5(f"{visit}|{style}|{page_path}".encode()).hexdigest()


def with_session(page_path: str, style: str, sid: str) -> str:
    """The url of `page_path` with session id `sid` written in `style`."""
    url = f"http://{SESSION_HOST}"
    if style == "oscsid":
        return f"{url}{page_path}?osCsid={sid}"
    if style == "vbulletin":
        return f"{url}{page_path}?s={sid}"
    if style == "aspnet":
        return f"{url}/(S({sid[:24]})){page_path}"
    if style == "pathsid":
        return f"{url}/sid/{sid}{page_path}"
    if style == "sessid":
        return f"{url}{page_path}?SESSID={sid[:26]}"
    return f"{url}{page_path}?utm_source=news&utm_medium=email&utm_campaign={sid[:8]}"


_SESSION_FORMS = re.compile(
    r"/\(S\([0-9a-f]{24}\)\)|/sid/[0-9a-f]{32}|[?&](?:osCsid|s|SESSID)=[0-9a-f]+$"
    r"|\?utm_source=news&utm_medium=email&utm_campaign=[0-9a-f]{8}$")


def session_page(path: str) -> str | None:
    """The page a url of the session host shows, its ids taken out (None: no such page)."""
    if path in KEPT_URLS:
        return path
    plain = _SESSION_FORMS.sub("", path)
    if plain in SESSION_PAGES or plain == "/":
        return plain
    return None


def session_site(host: str, path: str) -> Answer:
    if path == "/robots.txt":
        return NOT_FOUND
    shown = session_page(path)
    if shown is None:
        return NOT_FOUND
    visit = hashlib.md5(f"{time.time_ns()}{path}".encode()).hexdigest()  # fresh each visit
    links = [with_session(p, style, session_id(visit, style, p))
             for p in ["/", *SESSION_PAGES] for style in STYLES]
    if shown == "/":
        links += [f"http://{SESSION_HOST}{u}" for u in KEPT_URLS]
    return answer(200, page(f"{SESSION_HOST}{shown}", links))


# -- text that turns binary after its first chunk -----------------------------------------

FAKE_TEXT_HOST = "www.text-then-binary.com"
ELF_FILE = Path("/bin/ls")  # a real binary of this machine


def text_then_random() -> bytes:
    text = page("text first", text="All work and no play makes Jack a dull boy. " * 1700)
    return text[:77 * KIB] + random.Random(7).randbytes(3 * MIB)


def spaces_then_elf() -> bytes:
    return b" " * (70 * KIB) + ELF_FILE.read_bytes()


def long_text() -> bytes:
    """A real text page far longer than a chunk: GBK Chinese, Latin-1 accents and ASCII."""
    line = "北京大学天网搜索引擎 网络实验室 中文网页 ".encode("gbk") + \
        "café crème résumé naïve ".encode("latin-1") + b"plain ASCII words here\n"
    return b"<html><head><title>long</title></head><body><pre>\n" + line * 6000 + \
        b"</pre></body></html>\n"


FAKE_TEXT = {  # path -> (body, content type, whether a correct crawl stores it)
    "/text-then-random.html": (text_then_random, HTML, False),
    "/spaces-then-elf.html": (spaces_then_elf, HTML, False),
    "/untyped-then-random": (text_then_random, None, False),
    "/gzip-then-random.html": (text_then_random, HTML, False),  # sent gzip-encoded
    "/long-text.html": (long_text, b"text/html; charset=gbk", True),
}


def fake_text_site(host: str, path: str) -> Answer:
    if path == "/robots.txt":
        return NOT_FOUND
    if path == "/":
        return answer(200, page(host, [f"http://{host}{p}" for p in FAKE_TEXT]))
    if path not in FAKE_TEXT:
        return NOT_FOUND
    make, mime, _stored = FAKE_TEXT[path]
    body = make()
    if path.startswith("/gzip"):
        return answer(200, gzip.compress(body), mime, headers=((b"Content-Encoding", b"gzip"),))
    return answer(200, body, mime)


# -- names that mean "this machine or its cloud" ------------------------------------------

LOCAL_NAMES = ("localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback",
               "www.localhost", "printer.local", "metadata.google.internal",
               "instance-data", "metadata", "router.home.arpa", "nas.lan")
PUBLIC_CONTROL_HOST = "www.public-control.com"  # a plain name beside them: fetched


def local_site(host: str, path: str) -> Answer:
    """Every local name answers (a proxy would fetch it); the public control host's
    homepage links to them all."""
    if path == "/robots.txt":
        return NOT_FOUND
    links = [f"http://{name}/" for name in LOCAL_NAMES] if host == PUBLIC_CONTROL_HOST else []
    return answer(200, page(f"{host} answered {path}", links))


# -- dispatch ------------------------------------------------------------------------------

# The hosts a crawl of this web is seeded with; every other host is linked from one of them.
SEED_HOSTS = [*ROBOTS_HOSTS, UNREADABLE_ROBOTS_HOST, PROTOCOL_HOME, SESSION_HOST,
              FAKE_TEXT_HOST, PUBLIC_CONTROL_HOST]


def respond(url: str) -> Answer:
    match = re.match(r"http://([^/]*)(/[^#]*)?", url)
    if match is None:
        return NOT_FOUND
    host, path = match.group(1).lower(), match.group(2) or "/"
    if host in ROBOTS_HOSTS or host == UNREADABLE_ROBOTS_HOST:
        return robots_site(host, path)
    if host in FAULTS or host == PROTOCOL_HOME:
        return protocol_site(host, path)
    if host == SESSION_HOST:
        return session_site(host, path)
    if host == FAKE_TEXT_HOST:
        return fake_text_site(host, path)
    if host in LOCAL_NAMES or host == PUBLIC_CONTROL_HOST:
        return local_site(host, path)
    return NOT_FOUND


# -- the server ------------------------------------------------------------------------------

SEND_BUFFER = 64 * KIB


def _pieces(body: bytes) -> Iterator[bytes]:
    for at in range(0, len(body), SEND_BUFFER):
        yield body[at:at + SEND_BUFFER]


@dataclass
class Server:
    log_path: str | None
    _log: object = field(default=None)

    def write_log(self, **line: object) -> None:
        if self._log is None:
            return
        self._log.write(json.dumps({"time": time.time(), **line}) + "\n")
        self._log.flush()

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
            writer.close()
            return
        method, _, rest = head.split(b"\r\n", 1)[0].decode("latin-1").partition(" ")
        target = rest.rsplit(" ", 1)[0]
        if not target.startswith("http://"):  # origin form: the Host header names the host
            host = re.search(rb"(?im)^host:\s*([^\r\n]*)", head)
            target = f"http://{host.group(1).decode('latin-1') if host else ''}{target}"
        reply = respond(target)
        sent, complete = 0, False
        # A small send buffer and one piece at a time: `sent` is then close to what the
        # client read before it hung up (at most what the kernel's buffers held).
        handle = writer.get_extra_info("socket")
        if handle is not None:
            handle.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SEND_BUFFER)
        writer.transport.set_write_buffer_limits(high=SEND_BUFFER)
        try:
            writer.write(reply.head)
            if method != "HEAD":
                chunks = reply.chunks if reply.chunks is not None else _pieces(reply.body)
                for chunk in chunks:
                    writer.write(chunk)
                    sent += len(chunk)
                    await writer.drain()
            await writer.drain()
            complete = True
        except (ConnectionError, OSError):
            pass
        finally:
            self.write_log(method=method, url=target, status=reply.status, sent=sent,
                           complete=complete)
            writer.close()

    async def serve(self, port: int) -> None:
        if self.log_path:
            self._log = open(self.log_path, "a", encoding="utf-8")  # noqa: SIM115
        server = await asyncio.start_server(self.handle, "127.0.0.1", port, limit=64 * KIB)
        address = server.sockets[0].getsockname()
        print(f"http://127.0.0.1:{address[1]}", flush=True)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        async with server:
            await stop.wait()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--access-log")
    args = parser.parse_args(argv)
    asyncio.run(Server(args.access_log).serve(args.port))
    return 0


if __name__ == "__main__":
    sys.exit(main())
