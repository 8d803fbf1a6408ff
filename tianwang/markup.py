"""Markup ruled out in a page's bytes, before (or instead of) decoding the page.

Scrapy reads a page's `<base href>` and `<meta http-equiv="refresh">` in its first 4096
characters, decoded: the body decoded, a regular expression, and for the base the page's
url made safe again (1.4% of a crawl's CPU, py-spy on the test web). Most pages have
neither. In an encoding where every ASCII character is its own byte and no escape
sequence turns other bytes into ASCII text (not UTF-16/32, UTF-7, ISO-2022 or HZ), an ASCII
word the bytes do not hold, in any case, is a word the text does not hold; w3lib's own
byte scans for these tags rest on the same fact.
"""

from __future__ import annotations

import codecs
from functools import lru_cache

from scrapy.http import TextResponse
from scrapy.utils.response import get_base_url

from tianwang.urls import safe_url

# What Scrapy scans for a base or a refresh, in characters, and the bytes that can take
# (4 at most a character in UTF-8 and GB18030).
SCANNED_CHARS = 4096
SCANNED_BYTES = 4 * SCANNED_CHARS

_ASCII = bytes(range(0x20, 0x7F)).decode("ascii")
# Encodings whose escapes (UTF-7's "+...-", ISO-2022's ESC sequences, HZ's "~{") decode
# other bytes into ASCII characters: a word can be in the text and not in the bytes.
_ESCAPING = ("utf_7", "iso2022", "hz", "utf_16", "utf_32")


@lru_cache(maxsize=64)
def ascii_transparent(encoding: str) -> bool:
    """Whether ASCII text is its own bytes in encoding, and only they make it."""
    try:
        name = codecs.lookup(encoding).name.replace("-", "_")
        if name.startswith(_ESCAPING):
            return False
        return _ASCII.encode(name) == _ASCII.encode("ascii")
    except (LookupError, UnicodeError):
        return False


def may_hold(body: bytes, encoding: str, word: bytes) -> bool:
    """False only when the first SCANNED_CHARS characters of a page in encoding cannot
    hold the ASCII word, in any case (word lowercase)."""
    if not ascii_transparent(encoding):
        return True
    return word in body[:SCANNED_BYTES].lower()


def page_base(response: TextResponse) -> str:
    """Scrapy's get_base_url(response), without decoding a page that has no <base>."""
    if may_hold(response.body, response.encoding, b"<base"):
        return get_base_url(response)
    return safe_url(response.url)


def may_refresh(response: TextResponse) -> bool:
    """False when the page cannot hold a <meta http-equiv="refresh"> Scrapy would read."""
    return may_hold(response.body, response.encoding, b"refresh")
