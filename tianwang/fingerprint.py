"""Scrapy's request fingerprint, without its cost for the urls a crawl mostly enqueues.

Scrapy's fingerprint is the SHA-1 of a JSON object: the method, the url as w3lib's
canonicalize_url writes it, the body in hex and no headers. canonicalize_url splits,
unquotes and requotes every url (about 10 us, the largest single cost of an enqueue). A GET
without a body whose url is already canonical (tianwang.urls.already_canonical: no query, no
escape, lowercase host) has the same JSON written here directly, so the fingerprint is the
same bytes: dedup state written by either (a job directory, a shared crawl's Redis) reads
alike. Anything else goes to Scrapy's own.
"""

from __future__ import annotations

import hashlib

from scrapy import Request
from scrapy.utils.request import RequestFingerprinter as ScrapyFingerprinter

from tianwang.urls import already_canonical

# json.dumps({"method": "GET", "url": url, "body": "", "headers": {}}, sort_keys=True), with
# the url (ASCII, no quote or backslash once canonical) in the place of the last string.
_BEFORE_URL = b'{"body": "", "headers": {}, "method": "GET", "url": "'
_AFTER_URL = b'"}'


class RequestFingerprinter(ScrapyFingerprinter):
    def fingerprint(self, request: Request) -> bytes:
        url = request.url
        if (request.method == "GET" and not request.body and already_canonical(url)
                and not request.meta.get("verbatim_url")):
            return hashlib.sha1(  # noqa: S324 (Scrapy's hash, not a secret)
                _BEFORE_URL + url.encode("ascii") + _AFTER_URL).digest()
        return super().fingerprint(request)
