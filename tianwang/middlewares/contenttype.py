"""Stop a download as soon as it is known not to be a storable page (docs/design.md section 5).

A response whose Content-Type is not one of TIANWANG_STORE_TYPES is stopped when its headers
arrive, before its body is read: the types that are fetched are exactly the types that are
stored, so the two can never disagree. A response with no Content-Type is judged by its
bytes (magic numbers, control bytes), and so is one declared text (issue 16: PNG bytes
served as text/html are not text): its first bytes as WHATWG sniffing does, then the whole
body as it arrives, window by window (4 KiB), at a cost linear in the bytes and bounded by
the page limit: a text start followed by random bytes, or by an executable, is stopped at
the first binary window. A body over TIANWANG_MAX_PAGE_BYTES is cut off. A compressed body
is judged once decoded, by BoundedDecompressionMiddleware. A 204 or 205 (no content) is no
page either.

A body without a Content-Length (chunked) that comes in more than MAX_PIECES pieces is cut
off too. Scrapy sends bytes_received for every piece the HTTP parser hands it, one per
chunk, at some 30 us each: a server sending 1-byte chunks made 2.6 MB of body cost 78 s of
the crawl's CPU (10 MiB would cost five minutes, every download of the crawl slowed by it).
At 65,536 pieces a page costs about 2 s at most; a page of 10 MiB still passes in chunks
averaging 160 bytes. A robots.txt (meta.KEEP_FIRST) is read to that many pieces, as to its
first bytes: its start, cut, is the response.

Either way the request ends in IgnoreRequest: no spider callback, pipeline or store ever sees
a partial body. Counted as tianwang/filter/content_type (untyped binary too),
tianwang/filter/not_text (declared text, binary), tianwang/filter/too_big,
tianwang/filter/tiny_chunks and tianwang/filter/no_content, with the bytes not fetched
(when the Content-Length told them) in tianwang/filter/<reason>_bytes.

A request marked meta.KEEP_FIRST (robots.txt: RFC 9309 parses the first 500 KiB) is the one
exception: its body is read up to that many bytes and then stopped, the part read kept as
the response, whatever its size or type.
"""

from __future__ import annotations

import logging
import re
from typing import Any, NoReturn

from scrapy import Request, signals
from scrapy.exceptions import IgnoreRequest, StopDownload
from scrapy.http import Response
from scrapy.http.headers import Headers

from tianwang import meta as tw_meta
from tianwang import signals as tw_signals
from tianwang.config import SettingError, get_int, get_media_types

logger = logging.getLogger(__name__)

# meta: [bytes received, first chunk still to sniff, expected length, declared a type,
# bytes of the open window, binary bytes in it, judge the windows, pieces received]. A
# list, not an object: a retried request goes back to the frontier, whose log writes meta
# with marshal.
_BODY = "_tianwang_body"
NO_CONTENT = frozenset({204, 205})
_STOPPED = "_tianwang_stopped"  # meta: why this middleware stopped the download
MAX_PIECES = 65_536  # bytes_received calls a page's body may take (its CPU: above)

# File signatures of the binary formats most often served without a type (WHATWG MIME
# sniffing and the formats of seed 004's non-text share). Text never starts with these.
_MAGIC = (
    b"GIF87a", b"GIF89a", b"\xff\xd8\xff", b"\x89PNG\r\n\x1a\n", b"%PDF-", b"PK\x03\x04",
    b"PK\x05\x06", b"\x1f\x8b", b"Rar!\x1a\x07", b"7z\xbc\xaf\x27\x1c", b"MZ", b"\x7fELF",
    b"BM", b"RIFF", b"OggS", b"ID3", b"\x00\x00\x01\xba", b"\x00\x00\x01\xb3", b"FWS", b"CWS",
    b"\xd0\xcf\x11\xe0", b"BZh", b"\xfd7zXZ\x00", b"wOFF", b"wOF2", b"\x00\x01\x00\x00",
    b"\x1a\x45\xdf\xa3", b"II*\x00", b"MM\x00*",
)
# Bytes that never occur in text (the WHATWG "binary data byte" set).
_BINARY_BYTES = re.compile(rb"[\x00-\x08\x0b\x0e-\x1a\x1c-\x1f]")
_TEXT_BOMS = (b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff")


_ASCII_TEXT = re.compile(rb"[\t\n\r\x20-\x7e]")
# The rest of the body, past the first bytes: judged in windows of WINDOW bytes, a window
# binary when more than 1 in BINARY_SHARE of its bytes are binary bytes. Text has none, or a
# stray few (a pasted control character); random or compressed bytes have 1 in 10, an
# executable more (its zeros). Deleting the non-binary bytes counts them at C speed.
WINDOW = 4096
BINARY_SHARE = 64
SNIFFED = 1024  # the first bytes, judged by looks_binary
_NOT_BINARY = bytes(b for b in range(256) if not _BINARY_BYTES.match(bytes([b])))
_UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")


def looks_binary(first: bytes) -> bool:
    """Whether the first bytes of a body belong to a non-text file: a known file signature,
    a byte text never holds, or high bytes that are neither UTF-8 nor GB18030 (GBK, GB2312)
    and come with little ASCII. Chinese text in GBK or UTF-8 is text, as is Latin-1 text
    (mostly ASCII); a run of random high bytes is not."""
    if first.startswith(_TEXT_BOMS):
        return False
    if first.startswith(_MAGIC) or first[4:8] == b"ftyp":  # ftyp: mp4 and its kin
        return True
    sample = first[:512]
    if _BINARY_BYTES.search(sample) is not None:
        return True
    if sample.isascii() or len(_ASCII_TEXT.findall(sample)) * 4 >= len(sample):
        return False
    return not (_decodes(sample, "utf-8") or _decodes(sample, "gb18030"))


def binary_bytes(data: bytes) -> int:
    """How many bytes of data are binary bytes (the WHATWG set)."""
    return len(data.translate(None, _NOT_BINARY))


def binary_window(body: bytes, start: int = SNIFFED) -> bool:
    """Whether a window of body past `start` is binary (see WINDOW): the whole-body check of
    a body held in memory, as ContentTypeMiddleware does chunk by chunk. A body in UTF-16
    (its BOM) is text by its BOM: half its bytes are zeros."""
    if body.startswith(_UTF16_BOMS):
        return False
    for at in range(start, len(body), WINDOW):
        window = body[at:at + WINDOW]
        if _binary(binary_bytes(window), len(window)):
            return True
    return False


def _binary(binary: int, size: int) -> bool:
    """A window (or the last part of a body, 256 bytes or more) with too many binary bytes."""
    return size >= 256 and binary * BINARY_SHARE > size


def _decodes(sample: bytes, encoding: str) -> bool:
    """Whether the sample decodes, allowing a character cut at its end (up to 3 bytes)."""
    for cut in range(4):
        try:
            sample[: len(sample) - cut].decode(encoding)
            return True
        except UnicodeDecodeError:
            continue
    return False


def media_type(value: bytes | None) -> str | None:
    """The lowercase media type of a Content-Type value, None when there is none."""
    mime = (value or b"").split(b";", 1)[0].strip().lower()
    return mime.decode("latin-1") if mime else None


class ContentTypeMiddleware:
    def __init__(self, allowed: frozenset[str], max_bytes: int, stats: Any) -> None:
        self.allowed, self.max_bytes, self.stats = allowed, max_bytes, stats
        self.signals: Any = None  # from_crawler's: refusals are told by signal
        self._logged: set[str] = set()

    @classmethod
    def from_crawler(cls, crawler: Any) -> ContentTypeMiddleware:
        settings = crawler.settings
        max_bytes = get_int(settings, "TIANWANG_MAX_PAGE_BYTES", minimum=0)
        scrapy_max = settings.getint("DOWNLOAD_MAXSIZE")
        if scrapy_max and not 0 < max_bytes <= scrapy_max:
            # Scrapy's own limit would cut first, as an error logged for every page.
            raise SettingError(
                "TIANWANG_MAX_PAGE_BYTES", max_bytes, f"1 to DOWNLOAD_MAXSIZE ({scrapy_max})"
            )
        allowed = frozenset(get_media_types(settings, "TIANWANG_STORE_TYPES"))
        middleware = cls(allowed, max_bytes, crawler.stats)
        middleware.signals = crawler.signals
        crawler.signals.connect(middleware.headers_received, signal=signals.headers_received)
        crawler.signals.connect(middleware.bytes_received, signal=signals.bytes_received)
        return middleware

    def headers_received(self, headers: Headers, body_length: Any, request: Request) -> None:
        meta = request.meta
        meta.pop(_BODY, None)  # a retried request carries its previous response's state
        meta.pop(_STOPPED, None)
        length = body_length if isinstance(body_length, int) else None  # else UNKNOWN_LENGTH
        if meta.get(tw_meta.KEEP_FIRST):  # its first bytes kept, whatever its size or type
            meta[_BODY] = [0, False, length, False, 0, 0, False, 0]
            return
        sniff = typed = False
        if b"Location" not in headers and not is_robots(request):  # both read on headers
            mime = media_type(headers.get(b"Content-Type"))
            typed = mime is not None
            if mime is not None and mime not in self.allowed:
                self._stop(request, "content_type", length)
            # Compressed bytes cannot be sniffed; BoundedDecompressionMiddleware judges them
            # once decoded. A body declared text is judged too: PNG served as text/html.
            textual = mime is None or mime.startswith("text/")
            sniff = textual and b"Content-Encoding" not in headers
        if self.max_bytes and length is not None and length > self.max_bytes:
            self._stop(request, "too_big", length)  # an untyped one too: no byte is worth it
        if sniff or (self.max_bytes and length is None):
            meta[_BODY] = [0, sniff, length, typed, 0, 0, sniff, 0]

    def bytes_received(self, data: bytes, request: Request) -> None:
        state = request.meta.get(_BODY)
        if state is None:  # the common case: typed, with a Content-Length within the limit
            return
        keep = request.meta.get(tw_meta.KEEP_FIRST)
        start = state[0]
        state[0] += len(data)
        state[7] += 1
        if keep:
            # The response: what was read so far, flagged download_stopped (a cut file).
            if state[0] >= keep or state[7] > MAX_PIECES:
                raise StopDownload(fail=False)
            return
        if state[1]:
            state[1] = False
            if looks_binary(data[:SNIFFED]):
                self._stop(request, "not_text" if state[3] else "content_type", _left(state))
            if data.startswith(_UTF16_BOMS):
                state[6] = False  # text by its BOM, half zeros: not judged by its zeros
        if state[6] and state[0] > SNIFFED:
            self._judge(request, state, data[max(0, SNIFFED - start):])
        if self.max_bytes and state[0] > self.max_bytes:
            self._stop(request, "too_big", None)
        if state[7] > MAX_PIECES:
            self._stop(request, "tiny_chunks", None)

    def _judge(self, request: Request, state: list, data: bytes) -> None:
        """Feed the body past its first bytes to the windows; stop at a binary one."""
        at = 0
        while at < len(data):
            take = min(WINDOW - state[4], len(data) - at)
            state[5] += binary_bytes(data[at:at + take])
            state[4] += take
            at += take
            if state[4] == WINDOW:
                if _binary(state[5], WINDOW):
                    self._stop(request, "not_text" if state[3] else "content_type",
                               _left(state))
                state[4] = state[5] = 0

    def process_response(self, request: Request, response: Response) -> Response:
        """No page in a 204 or 205; a body's last part (under a window) judged now."""
        if response.status in NO_CONTENT and not is_robots(request):
            self._refuse(request, "no_content", None)
            raise IgnoreRequest("content filter: no_content")
        state = request.meta.get(_BODY)
        if state is not None and state[6] and _binary(state[5], state[4]):
            self._refuse(request, "not_text" if state[3] else "content_type", None)
            raise IgnoreRequest(f"content filter: {request.meta[_STOPPED]}")
        return response

    def process_exception(self, request: Request, exception: Exception) -> None:
        reason = request.meta.get(_STOPPED)
        if reason and isinstance(exception, StopDownload):
            raise IgnoreRequest(f"content filter: {reason}")

    def _stop(self, request: Request, reason: str, bytes_left: int | None) -> NoReturn:
        self._refuse(request, reason, bytes_left)
        # fail=True: the download ends as an error (made IgnoreRequest in process_exception),
        # never as a response with a partial body that a callback could store.
        raise StopDownload(fail=True)

    def _refuse(self, request: Request, reason: str, bytes_left: int | None) -> None:
        request.meta[_STOPPED] = reason
        self.stats.inc_value(f"tianwang/filter/{reason}")
        if self.signals is not None:
            self.signals.send_catch_log(tw_signals.request_refused, request=request,
                                        reason=reason)
        if bytes_left:
            self.stats.inc_value(f"tianwang/filter/{reason}_bytes", bytes_left)
        if reason not in self._logged:
            self._logged.add(reason)
            logger.info("Stopped %s: content filter %r (logged once)", request, reason)


def _left(state: list) -> int | None:
    """The bytes of the body not fetched, when its length was told."""
    return state[2] - state[0] if state[2] is not None else None


def is_robots(request: Request) -> bool:
    """RobotsTxtMiddleware's own request (robots.txt), or a sitemap's (XML, maybe gzip): read
    whatever type it is served as; TIANWANG_MAX_PAGE_BYTES still bounds it."""
    if request.meta.get(tw_meta.SITEMAP):
        return True
    return bool(request.meta.get("dont_obey_robotstxt")) and request.url.endswith("/robots.txt")
