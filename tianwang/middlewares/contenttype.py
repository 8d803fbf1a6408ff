"""Stop a download as soon as it is known not to be a storable page (docs/design.md section 5).

A response whose Content-Type is not one of TIANWANG_STORE_TYPES is stopped when its headers
arrive, before its body is read: the types that are fetched are exactly the types that are
stored, so the two can never disagree. A response with no Content-Type is judged by its first
bytes (magic numbers, control bytes), and so is one declared text (issue 16: PNG bytes
served as text/html are not text). A body over TIANWANG_MAX_PAGE_BYTES is cut off. A
compressed body is judged once decoded, by BoundedDecompressionMiddleware.

Either way the request ends in IgnoreRequest: no spider callback, pipeline or store ever sees
a partial body. Counted as tianwang/filter/content_type (untyped binary too),
tianwang/filter/not_text (declared text, binary) and tianwang/filter/too_big, with the bytes
not fetched (when the Content-Length told them) in tianwang/filter/<reason>_bytes.
"""

from __future__ import annotations

import logging
import re
from typing import Any, NoReturn

from scrapy import Request, signals
from scrapy.exceptions import IgnoreRequest, StopDownload
from scrapy.http.headers import Headers

from tianwang import meta
from tianwang import signals as tw_signals
from tianwang.config import SettingError, get_int, get_media_types

logger = logging.getLogger(__name__)

# meta: [bytes received, first chunk still to sniff, expected length, declared a type]
_BODY = "_tianwang_body"
_STOPPED = "_tianwang_stopped"  # meta: why this middleware stopped the download

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
            meta[_BODY] = [0, sniff, length, typed]

    def bytes_received(self, data: bytes, request: Request) -> None:
        state = request.meta.get(_BODY)
        if state is None:  # the common case: typed, with a Content-Length within the limit
            return
        state[0] += len(data)
        if state[1]:
            state[1] = False
            if looks_binary(data[:1024]):
                left = state[2] - state[0] if state[2] is not None else None
                self._stop(request, "not_text" if state[3] else "content_type", left)
        if self.max_bytes and state[0] > self.max_bytes:
            self._stop(request, "too_big", None)

    def process_exception(self, request: Request, exception: Exception) -> None:
        reason = request.meta.get(_STOPPED)
        if reason and isinstance(exception, StopDownload):
            raise IgnoreRequest(f"content filter: {reason}")

    def _stop(self, request: Request, reason: str, bytes_left: int | None) -> NoReturn:
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
        # fail=True: the download ends as an error (made IgnoreRequest in process_exception),
        # never as a response with a partial body that a callback could store.
        raise StopDownload(fail=True)


def is_robots(request: Request) -> bool:
    """RobotsTxtMiddleware's own request (robots.txt), or a sitemap's (XML, maybe gzip): read
    whatever type it is served as; TIANWANG_MAX_PAGE_BYTES still bounds it."""
    if request.meta.get(meta.SITEMAP):
        return True
    return bool(request.meta.get("dont_obey_robotstxt")) and request.url.endswith("/robots.txt")
