"""The HTTP response a record stores as DATA: built from parts, parsed back."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tianwang.formats.http import HttpMessage, build_http_response, parse_http_response


def test_build_writes_status_line_headers_blank_line_and_body_with_crlf() -> None:
    data = build_http_response(200, [(b"Content-Type", b"text/html"), (b"Server", b"t")], b"<p>")
    assert data == b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nServer: t\r\n\r\n<p>"


@pytest.mark.parametrize(
    ("status", "line"),
    [
        (200, b"HTTP/1.1 200 OK"),
        (301, b"HTTP/1.1 301 Moved Permanently"),
        (404, b"HTTP/1.1 404 Not Found"),
        (503, b"HTTP/1.1 503 Service Unavailable"),
        (299, b"HTTP/1.1 299 Unknown"),
        (799, b"HTTP/1.1 799 Unknown"),
    ],
)
def test_status_line_has_the_standard_reason_phrase(status: int, line: bytes) -> None:
    assert build_http_response(status, [], b"").split(b"\r\n")[0] == line


@pytest.mark.parametrize(
    ("header", "kept"),
    [
        ((b"Transfer-Encoding", b"chunked"), False),
        ((b"transfer-encoding", b"chunked"), False),
        ((b"Content-Encoding", b"gzip"), True),  # still there: the body is still encoded
        ((b"CONTENT-ENCODING", b"br"), True),
        ((b"Content-Length", b"5"), True),  # the body below is 5 bytes
        ((b"Content-Length", b" 5 "), True),
        ((b"Content-Length", b"1234"), False),
        ((b"content-length", b"x"), False),
        ((b"Content-Type", b"text/plain"), True),
        ((b"Set-Cookie", b"a=b"), True),
    ],
)
def test_headers_that_no_longer_match_the_stored_body_are_dropped(
    header: tuple[bytes, bytes], kept: bool
) -> None:
    data = build_http_response(200, [header], b"hello")
    line = header[0] + b": " + header[1] + b"\r\n"
    assert (line in data) is kept
    assert data.endswith(b"\r\n\r\nhello")


def test_repeated_headers_keep_their_order() -> None:
    headers = [(b"Set-Cookie", b"a=1"), (b"Vary", b"Accept"), (b"Set-Cookie", b"b=2")]
    assert parse_http_response(build_http_response(200, headers, b"")).headers == [
        ("Set-Cookie", "a=1"),
        ("Vary", "Accept"),
        ("Set-Cookie", "b=2"),
    ]


def test_protocol_is_written_as_given_and_h2_becomes_http_2() -> None:
    assert build_http_response(200, [], b"", protocol="HTTP/1.0").startswith(b"HTTP/1.0 200 OK\r\n")
    assert build_http_response(200, [], b"", protocol="h2").startswith(b"HTTP/2 200 OK\r\n")


@pytest.mark.parametrize(
    ("status", "headers", "protocol"),
    [
        (200, [(b"X-A", b"one\r\ntwo")], "HTTP/1.1"),
        (200, [(b"X-A", b"one\ntwo")], "HTTP/1.1"),
        (200, [(b"", b"v")], "HTTP/1.1"),
        (200, [(b"X:A", b"v")], "HTTP/1.1"),
        (200, [], "SPDY/3"),
        (200, [], ""),
        (42, [], "HTTP/1.1"),
        (1000, [], "HTTP/1.1"),
    ],
)
def test_build_rejects_what_cannot_be_stored(
    status: int, headers: list[tuple[bytes, bytes]], protocol: str
) -> None:
    with pytest.raises(ValueError):
        build_http_response(status, headers, b"", protocol=protocol)


def test_parse_splits_status_headers_and_body() -> None:
    body = b"\x00\xff binary \r\n\r\n still body"
    message = parse_http_response(
        b"HTTP/1.0 404 Not Found\r\nContent-Type: text/html; charset=gbk\r\nX-Empty:\r\n\r\n" + body
    )
    assert message == HttpMessage(
        protocol="HTTP/1.0",
        status=404,
        reason="Not Found",
        headers=[("Content-Type", "text/html; charset=gbk"), ("X-Empty", "")],
        body=body,
    )
    assert message.header("content-type") == "text/html; charset=gbk"
    assert message.header("Location") is None


def test_parse_accepts_lf_only_heads_folded_lines_and_a_missing_reason() -> None:
    message = parse_http_response(b"HTTP/1.1 200\nX-Long: a\n  b\nServer: s\n\nbody")
    assert (message.status, message.reason) == (200, "")
    assert message.headers == [("X-Long", "a b"), ("Server", "s")]
    assert message.body == b"body"


def test_parse_decodes_header_bytes_as_latin_1() -> None:
    message = parse_http_response(b"HTTP/1.1 200 OK\r\nX-Name: caf\xe9\r\n\r\n")
    assert message.headers == [("X-Name", "caf\u00e9")]


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"<html>not a response</html>",
        b"version: 1.0\nurl: http://a/\n",
        b"HTTP/1.1 OK 200\r\n\r\n",
        b"HTTP/1.1 20 OK\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n",  # no blank line: cut short
        b"HTTP/1.1 200 OK\r\nno colon here\r\n\r\n",
    ],
)
def test_parse_rejects_data_that_is_not_an_http_response(data: bytes) -> None:
    with pytest.raises(ValueError):
        parse_http_response(data)


def test_parse_error_says_what_is_wrong() -> None:
    with pytest.raises(ValueError, match="HTTP status line"):
        parse_http_response(b"<html>")


header_names = st.from_regex(r"[A-Za-z][A-Za-z0-9-]{0,20}", fullmatch=True).filter(
    lambda name: name.lower() not in ("transfer-encoding", "content-length")
)
header_values = st.from_regex(r"[!-~]([ -~]{0,30}[!-~])?", fullmatch=True)


@given(
    status=st.integers(100, 999),
    headers=st.lists(st.tuples(header_names, header_values), max_size=8),
    body=st.binary(max_size=300),
)
def test_build_then_parse_gives_back_the_parts(
    status: int, headers: list[tuple[str, str]], body: bytes
) -> None:
    raw = [(name.encode(), value.encode()) for name, value in headers]
    message = parse_http_response(build_http_response(status, raw, body))
    assert (message.protocol, message.status, message.body) == ("HTTP/1.1", status, body)
    assert message.headers == headers
