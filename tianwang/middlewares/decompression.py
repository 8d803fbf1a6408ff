"""Scrapy's HttpCompressionMiddleware with the decoded body held to TIANWANG_MAX_PAGE_BYTES.

ContentTypeMiddleware holds the bytes received to the limit; a compressed body is inflated
after that, and Scrapy's own bound is DOWNLOAD_MAXSIZE (1 GiB): a 1 MB gzip bomb became a
1 GB page. This middleware takes the place of Scrapy's (same priority, 590) and inflates
every response of the crawl (pages, robots.txt, any other request) in 64 KiB steps up to
the limit, so a bomb costs at most the limit in memory and ends as soon as it passes it.

- too_big: the decoded body passes the limit: IgnoreRequest, counted tianwang/filter/too_big;
- bad_encoding: the body does not decode as its Content-Encoding says: IgnoreRequest,
  counted tianwang/error/bad_encoding (the web's fault, logged once per host);
- not_text: a page declared text/html or text/plain (or untyped) whose decoded body is
  binary, its first bytes or any window of the rest (see contenttype.looks_binary and
  binary_window): IgnoreRequest, counted tianwang/filter/not_text
  (tianwang/filter/content_type when it had no type). An uncompressed body is judged by
  ContentTypeMiddleware as it arrives.

A request marked meta.KEEP_FIRST (robots.txt) is decoded up to that many bytes and the
rest dropped, never refused as too_big; its body may be cut (ContentTypeMiddleware stopped
it there), and a cut stream decodes as far as it goes. A body that does not decode at all
is the web's failure: DownloadFailed, so robots.txt counts it unavailable, not allow-all.

What is stored is the decoded body without the Content-Encoding header, as before.
"""

from __future__ import annotations

import logging
import zlib
from typing import Any

from scrapy import Request
from scrapy.downloadermiddlewares.httpcompression import HttpCompressionMiddleware
from scrapy.exceptions import IgnoreRequest
from scrapy.http import Response, TextResponse
from scrapy.responsetypes import responsetypes
from scrapy.utils._compression import _DecompressionMaxSizeExceeded, brotli, zstd

from tianwang import meta
from tianwang.config import get_int, get_media_types
from tianwang.middlewares.contenttype import (
    SNIFFED,
    binary_window,
    is_robots,
    looks_binary,
    media_type,
)
from tianwang.middlewares.failures import DownloadFailed
from tianwang.recent import RecentSet
from tianwang.urls import url_host

logger = logging.getLogger(__name__)


class BoundedDecompressionMiddleware(HttpCompressionMiddleware):
    max_bytes: int
    text_types: frozenset[str]

    @classmethod
    def from_crawler(cls, crawler: Any) -> BoundedDecompressionMiddleware:
        middleware = super().from_crawler(crawler)
        middleware.max_bytes = get_int(crawler.settings, "TIANWANG_MAX_PAGE_BYTES", minimum=0)
        types = get_media_types(crawler.settings, "TIANWANG_STORE_TYPES")
        middleware.text_types = frozenset(t for t in types if t.startswith("text/"))
        middleware._logged = RecentSet()  # (host, reason), the newest
        return middleware

    def process_response(
        self, request: Request, response: Response, spider: Any = None
    ) -> Request | Response:
        encodings = response.headers.getlist("Content-Encoding")
        if request.method == "HEAD" or not encodings:
            return response
        keep = request.meta.get(meta.KEEP_FIRST)
        try:
            if keep:
                body, kept = self._decode_first(response.body, encodings, keep)
            else:
                body, kept = self._handle_encoding(response.body, encodings, self._limit(request))
        except _DecompressionMaxSizeExceeded:
            self._refuse(request, "filter", "too_big")
        except Exception as error:  # zlib.error, brotli.error, ZstdError, OSError, EOFError
            self._refuse(request, "error", "bad_encoding", error)
        mime = media_type(response.headers.get(b"Content-Type"))
        if (mime is None or mime in self.text_types) and not is_robots(request):
            if looks_binary(body[:SNIFFED]) or binary_window(body):
                self._refuse(request, "filter", "not_text" if mime else "content_type")
        if self.stats:
            self.stats.inc_value("httpcompression/response_bytes", len(body))
            self.stats.inc_value("httpcompression/response_count")
        if kept:
            self._warn_unknown_encoding(response, kept)
            response.headers["Content-Encoding"] = kept
        respcls = responsetypes.from_args(headers=response.headers, url=response.url, body=body)
        kwargs: dict[str, Any] = {"body": body}
        if issubclass(respcls, TextResponse):
            kwargs["encoding"] = None  # as Scrapy's: the encoding is found again on the body
        response = response.replace(cls=respcls, **kwargs)
        if not kept:
            del response.headers["Content-Encoding"]
        return response

    def _decode_first(self, body: bytes, encodings: list[bytes],
                      size: int) -> tuple[bytes, list[bytes]]:
        """At most the first `size` bytes of the decoded body (each coding in turn), from a
        body that may be cut; the codings left undecoded. ValueError (or the decoder's
        own error) when the body does not decode at all."""
        to_decode, kept = self._split_encodings(encodings)
        for encoding in to_decode:
            body = decode_first(body, encoding, size)
        return body, kept

    def _limit(self, request: Request) -> int:
        """The limit of this request: ours, or a smaller download_maxsize of its own."""
        own = request.meta.get("download_maxsize") or self._max_size
        if not self.max_bytes:
            return own
        return min(self.max_bytes, own) if own else self.max_bytes

    def _refuse(self, request: Request, kind: str, reason: str, error: Exception | None = None):
        self.stats.inc_value(f"tianwang/{kind}/{reason}")
        try:
            host = url_host(request.url)
        except ValueError:
            host = ""
        if (host, reason) not in self._logged:
            self._logged.add((host, reason))
            detail = f": {type(error).__name__}: {error}" if error is not None else ""
            logger.info("Refused %s: %s%s (logged once for %s)", request, reason, detail, host)
        if kind == "error":  # the web's failure, not a filter's choice (robots.txt: unavailable)
            raise DownloadFailed(reason)
        raise IgnoreRequest(f"decoded body: {reason}")


def decode_first(data: bytes, encoding: bytes, size: int) -> bytes:
    """At most `size` bytes of data decoded from `encoding` (gzip, x-gzip, deflate, br,
    zstd), as far as a cut stream goes; its decoder's error, or ValueError, when nothing of
    it decodes."""
    if encoding in (b"gzip", b"x-gzip"):
        decoded = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(data, size)
    elif encoding == b"deflate":
        try:
            decoded = zlib.decompressobj().decompress(data, size)
        except zlib.error:  # raw deflate, as some servers send it
            decoded = zlib.decompressobj(-zlib.MAX_WBITS).decompress(data, size)
    elif encoding == b"br":
        decompressor = brotli.Decompressor()
        decoded = decompressor.process(data, output_buffer_limit=size)
        while len(decoded) < size and not decompressor.is_finished():
            more = decompressor.process(b"", output_buffer_limit=size - len(decoded))
            if not more:
                break
            decoded += more
    else:
        decoded = zstd.ZstdDecompressor().decompress(data, max_length=size)
    if data and not decoded:
        raise ValueError(f"nothing of the {encoding.decode('latin-1')} body decodes")
    return decoded[:size]
