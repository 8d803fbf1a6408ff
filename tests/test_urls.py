import pytest

from tianwang.urls import url_host


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
