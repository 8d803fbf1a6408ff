import pytest
from hypothesis import given
from hypothesis import strategies as st
from w3lib.url import safe_url_string

from tianwang.urls import safe_url, url_host


@pytest.mark.parametrize(
    ("url", "host"),
    [
        ("http://Example.COM/a?b", "example.com"),
        ("http://example.com:80/", "example.com"),
        ("https://example.com:443/", "example.com"),
        ("http://example.com:8080/", "example.com:8080"),
        ("https://example.com:80/", "example.com:80"),
        ("http://user:pw@example.com/", "example.com"),
        ("http://[::1]:8080/", "[::1]:8080"),
    ],
)
def test_url_host(url: str, host: str) -> None:
    assert url_host(url) == host


def test_url_host_rejects_a_url_without_host() -> None:
    with pytest.raises(ValueError):
        url_host("file:///etc/passwd")


def test_url_host_rejects_a_bad_port() -> None:
    with pytest.raises(ValueError):
        url_host("http://example.com:99999/")


url_chars = st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=0x4E2D), max_size=30)


@given(host=st.from_regex(r"[A-Za-z0-9.\-:]{1,20}", fullmatch=True), rest=url_chars)
def test_safe_url_agrees_with_w3lib(host: str, rest: str) -> None:
    url = f"http://{host}/{rest}"
    try:
        expected = safe_url_string(url, encoding="gbk")
    except (ValueError, UnicodeError):
        return  # w3lib refuses it; the slow path raises the same
    assert safe_url(url, encoding="gbk") == expected


@pytest.mark.parametrize(
    "url",
    [
        "http://www.a.com/news/p1.html?id=3&page=2",
        "http://www.a.com/%E5%A4%A9",
        "http://A.COM/x",  # w3lib lowercases the host
        "http://a.com/a b",
        "http://a.com/天网",
        "http://a.com/x%zz",
    ],
)
def test_safe_url_examples_match_w3lib(url: str) -> None:
    assert safe_url(url) == safe_url_string(url)
