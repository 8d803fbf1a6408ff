"""Markup ruled out in the bytes: the base and the refresh Scrapy reads, on real pages, the
test web's, and pages written in encodings whose escapes hide ASCII text from the bytes."""

from __future__ import annotations

from pathlib import Path

import pytest
from scrapy.http import HtmlResponse
from scrapy.utils.response import get_base_url, get_meta_refresh

from tianwang.markup import SCANNED_BYTES, ascii_transparent, may_refresh, page_base
from tianwang.testweb.model import SyntheticWeb

URL = "http://docs.example.com/a/b/page.html"


def _pair(body: bytes, encoding: str | None = None) -> tuple[HtmlResponse, HtmlResponse]:
    """Two responses of one page: Scrapy caches its answers by response."""
    return tuple(HtmlResponse(URL, body=body, encoding=encoding) for _ in range(2))  # type: ignore[return-value]


def _agrees(body: bytes, encoding: str | None = None) -> None:
    ours, scrapys = _pair(body, encoding)
    assert page_base(ours) == get_base_url(scrapys)
    if not may_refresh(ours):
        assert get_meta_refresh(scrapys) == (None, None)


def _pages() -> list[bytes]:
    docs = [path.read_bytes() for pattern in ("**/*.html", "**/*.htm")
            for path in sorted(Path("/usr/share/doc").glob(pattern))[:300] if path.is_file()]
    web = SyntheticWeb(7, 20, junk=True)
    return docs + [web.respond(url).body for url in web.homepages()]


def test_real_and_test_web_pages_get_scrapys_base_and_refresh() -> None:
    pages = _pages()
    assert len(pages) > 20
    for body in pages:
        _agrees(body)


MARKUP = ('<html><head><BASE href="/other/dir/">'
          '<meta http-equiv="Refresh" content="0; url=next.html"></head>'
          '<body>\u4e2d\u6587 caf\u00e9 <a href="x">x</a></body></html>')


@pytest.mark.parametrize("encoding", ["utf-8", "gb18030", "latin-1", "shift_jis", "cp1252",
                                      "utf-16", "utf-7", "iso-2022-jp", "hz"])
def test_a_base_and_a_refresh_are_found_in_every_encoding(encoding: str) -> None:
    text = MARKUP.replace("\u4e2d\u6587", "") if encoding in ("latin-1", "cp1252") else MARKUP
    if encoding in ("shift_jis", "iso-2022-jp", "hz", "gb18030"):
        text = text.replace("caf\u00e9", "cafe")
    body = text.encode(encoding)
    _agrees(body, encoding)
    ours, _ = _pair(body, encoding)
    assert page_base(ours).startswith("http://docs.example.com/other/dir/")
    assert may_refresh(ours)


def test_an_escape_that_hides_a_tag_from_the_bytes_sends_the_page_to_scrapy() -> None:
    body = b'<html><head><ba\x1b(Bse href="/x/"><meta http-equiv="ref\x1b(Bresh" ' \
           b'content="0; url=/y/"></head></html>'  # ISO-2022-JP: ESC ( B switches to ASCII
    assert b"<base" not in body.lower() and b"refresh" not in body.lower()
    ours, scrapys = _pair(body, "iso-2022-jp")
    assert get_base_url(scrapys) == page_base(ours) == "http://docs.example.com/x/"
    assert get_meta_refresh(scrapys) == (0.0, "http://docs.example.com/y/")
    assert may_refresh(ours)


def test_a_page_without_either_is_not_decoded_for_them() -> None:
    body = b"<html><head><title>t</title></head><body>" + b"x" * 50_000 + b"</body></html>"
    ours, scrapys = _pair(body, "utf-8")
    assert page_base(ours) == get_base_url(scrapys) == URL
    assert not may_refresh(ours)
    assert ours._cached_ubody is None  # noqa: SLF001 - the point: nothing decoded


def test_a_tag_past_what_scrapy_scans_is_left_to_scrapy() -> None:
    late = b"<html>" + b"x" * SCANNED_BYTES + b'<base href="/late/"></html>'
    _agrees(late, "utf-8")


@pytest.mark.parametrize(("encoding", "transparent"), [
    ("utf-8", True), ("gb18030", True), ("GBK", True), ("latin-1", True), ("shift_jis", True),
    ("utf-16", False), ("utf-16-le", False), ("utf-32", False), ("utf-7", False),
    ("iso-2022-jp", False), ("hz", False), ("cp500", False), ("no-such-codec", False)])
def test_which_encodings_write_ascii_as_itself(encoding: str, transparent: bool) -> None:
    assert ascii_transparent(encoding) is transparent
