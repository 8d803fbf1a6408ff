"""tianwang.hosts: hosts read as a browser reads them, and the rules that refuse them.

The IP spellings and their addresses are the URL standard's (and its web-platform-tests'),
worked out by hand, not taken from the code.
"""

from __future__ import annotations

import ipaddress

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tianwang.hosts import (
    HostRules,
    MalformedURL,
    SpamList,
    SpamListError,
    is_public,
    parse_url_host,
)


@pytest.mark.parametrize(
    "url, address",
    [
        ("http://127.0.0.1/", "127.0.0.1"),
        ("http://2130706433/", "127.0.0.1"),
        ("http://0x7f.1/", "127.0.0.1"),
        ("http://0X7F.1/", "127.0.0.1"),
        ("http://0177.0.0.1/", "127.0.0.1"),
        ("http://127.1/", "127.0.0.1"),
        ("http://127.0.1/", "127.0.0.1"),
        ("http://0x7f000001/", "127.0.0.1"),
        ("http://017700000001/", "127.0.0.1"),
        ("http://127.0.0.1./", "127.0.0.1"),
        ("http://0x3d.0x87.0xa9.0x7d/", "61.135.169.125"),
        ("http://075.0207.0251.0175/", "61.135.169.125"),
        ("http://61.0x87.43389/", "61.135.169.125"),
        ("http://1032300925/", "61.135.169.125"),
        ("http://192.168.257/", "192.168.1.1"),
        ("http://256/", "0.0.1.0"),
        ("http://999999999/", "59.154.201.255"),
        ("http://4294967295/", "255.255.255.255"),
        ("http://0xffffffff/", "255.255.255.255"),
        ("http://0x.0x.0/", "0.0.0.0"),
        ("http://%30%78%63%30%2e%30%32%35%30.01/", "192.168.0.1"),
        ("http://%30%78%63%30%2e%30%32%35%30.01%2e/", "192.168.0.1"),
        ("http://１９２．１６８．０．１/", "192.168.0.1"),  # full-width digits and dots
        ("http://192\u3002168\u30020\u30021/", "192.168.0.1"),
        ("http://user:pass@10.0.0.1:80/", "10.0.0.1"),
        ("http://[::1]/", "::1"),
        ("http://[0:0::1]/", "::1"),
        ("http://[::127.0.0.1]/", "::7f00:1"),
        ("http://[1:0::]/", "1::"),
        ("http://[2001:DB8::1]:8080/", "2001:db8::1"),
        ("http://[::ffff:61.135.169.125]/", "::ffff:3d87:a97d"),
    ],
)
def test_every_ip_spelling_a_browser_accepts_is_an_ip(url: str, address: str) -> None:
    parsed = parse_url_host(url)
    assert parsed.ip == ipaddress.ip_address(address)
    assert HostRules(SpamList()).reason(url) == "ip"


@pytest.mark.parametrize(
    "url",
    [
        "http://0x100000000/", "http://4294967296/", "http://256.256.256.256/",
        "http://1.2.3.4.5/", "http://1.2.3.08/", "http://09.2.3.4/", "http://foo.09/",
        "http://foo.0x4/", "http://0..0x300/", "http://1.2.65536/", "http://0xffffffff1/",
        "http://[::1/", "http://[1::2::3]/", "http://[fe80::1%25eth0]/", "http://[v1.x]/",
        "http://a b/", "http://%zz.com/", "http://exa%00mple.com/", "http://a<b.com/",
        "http:///path", "http://:80/", "ftp://example.com/", "example.com", "",
        "http://x.com:65536/", "http://x.com:-1/", "http://x.com:8o/",
        # No DNS name (RFC 1035), nor a directory of the record tree: an empty label, more
        # than 253 characters, a label of more than 63.
        "http://a..b/", "http://../", "http://.a.com/", "http://a.com../",
        "http://" + ".".join(["a" * 63] * 4) + ".com/", "http://" + "x" * 64 + ".com/",
        "http://" + ".".join(["a" * 63] * 3) + "." + "b" * 62 + "/",
    ],
)
def test_a_host_a_browser_refuses_is_malformed(url: str) -> None:
    with pytest.raises(MalformedURL):
        parse_url_host(url)
    assert HostRules(SpamList()).reason(url) == "malformed"


@pytest.mark.parametrize(
    "url, host",
    [
        ("http://192.168.257.com/", "192.168.257.com"),  # last label not a number: a domain
        ("http://foo.0x1g/", "foo.0x1g"),
        ("http://WWW.PKU.EDU.CN/", "www.pku.edu.cn"),
        ("http://b\u00fccher.de/", "xn--bcher-kva.de"),
        ("http://www.pku.edu.cn./", "www.pku.edu.cn."),  # the root's dot: still a name
        ("http://" + ".".join(["a" * 63] * 3) + "." + "b" * 61 + "/",  # 253: the most
         ".".join(["a" * 63] * 3) + "." + "b" * 61),
    ],
)
def test_domains_stay_domains(url: str, host: str) -> None:
    parsed = parse_url_host(url)
    assert (parsed.host, parsed.ip) == (host, None)


@pytest.mark.parametrize(
    "url, reason",
    [
        ("http://www.pku.edu.cn/", None),
        ("http://www.pku.edu.cn:80/", None),
        ("http://www.pku.edu.cn:/", None),
        ("http://www.pku.edu.cn:080/", None),
        ("https://www.pku.edu.cn/", None),
        ("https://www.pku.edu.cn:443/", None),
        ("http://www.pku.edu.cn:8080/", "port"),
        ("http://www.pku.edu.cn:443/", "port"),
        ("http://www.pku.edu.cn:0443/", "port"),
        ("https://www.pku.edu.cn:80/", "port"),
        ("http://www.pku.edu.cn:81/", "port"),
        ("http://www.pku.edu.cn:0/", "port"),
        ("http://396393918.fangwen.com/", "digit"),
        ("http://3com.com/", "digit"),
        ("http://www.163.com/", None),
        ("http://a2329115.fangwen.com/", None),
    ],
)
def test_port_and_digit_rules(url: str, reason: str | None) -> None:
    assert HostRules(SpamList()).reason(url) == reason


# Names of this machine or its network (RFC 6761, 6762, 8375, ICANN's .internal, the hosts
# file's), and names beside them that are the public web's.
LOCAL = ["localhost", "LOCALHOST", "localhost.", "localhost.localdomain", "ip6-localhost",
         "ip6-loopback", "localhost6.localdomain6", "www.localhost", "printer.local",
         "metadata.google.internal", "instance-data.ec2.internal", "instance-data", "metadata",
         "router.home.arpa", "nas.lan", "wiki.corp", "intranet"]
PUBLIC = ["www.pku.edu.cn", "localhost.com", "local.com", "www.internal.org", "home.com",
          "metadata.google.com", "arpa.cn", "www.lan.com.cn", "locals.net", "xn--bcher-kva.de"]


@pytest.mark.parametrize("host", LOCAL)
def test_names_of_this_machine_and_its_network_are_refused(host: str) -> None:
    url = f"http://{host}/"
    assert HostRules(SpamList(), drop_local_names=True).reason(url) == "private"
    assert HostRules(SpamList()).reason(url) is None  # only when asked (TIANWANG_BLOCK_PRIVATE)


@pytest.mark.parametrize("host", PUBLIC)
def test_names_of_the_public_web_are_not_local(host: str) -> None:
    assert HostRules(SpamList(), drop_local_names=True).reason(f"http://{host}/") is None


def test_ip_beats_port_and_spam_beats_digit() -> None:
    rules = HostRules(SpamList.from_lines(["fangwen.com"]))
    assert rules.reason("http://10.0.0.1:8080/") == "ip"
    assert rules.reason("http://396393918.fangwen.com/") == "spam"


SPAM = """\
# a comment, then a blank line

fangwen.com
*.free-home.net
.bokee.cn
^u[0-9]+\\.a8blog\\.cn$
casino
"""


@pytest.mark.parametrize(
    "host, spam",
    [
        ("fangwen.com", True),
        ("a2329115.fangwen.com", True),
        ("x.y.fangwen.com", True),
        ("fangwen.com.", True),
        ("notfangwen.com", False),
        ("fangwen.com.cn", False),
        ("free-home.net", True),
        ("a.free-home.net", True),
        ("z.bokee.cn", True),
        ("u123.a8blog.cn", True),
        ("U123.A8BLOG.CN", True),
        ("x.u123.a8blog.cn", False),
        ("www.a8blog.cn", False),
        ("casino", True),
        ("www.casino", True),
        ("www.casino.com", False),  # a bare word is a domain (a TLD here), not a regex
    ],
)
def test_spam_list_domains_cover_subdomains_and_regexes_search(host: str, spam: bool) -> None:
    assert SpamList.from_lines(SPAM.splitlines()).matches(host) is spam


def test_a_bad_regex_names_its_line() -> None:
    with pytest.raises(SpamListError, match=r"line 3: bad regex '\(\[x'"):
        SpamList.from_lines(["# spam", "fangwen.com", "([x"])


def test_an_empty_list_matches_nothing() -> None:
    assert not SpamList.from_lines(["# only a comment", "  "])
    assert not SpamList().matches("fangwen.com")


@pytest.mark.parametrize(
    "address, public",
    [
        ("8.8.8.8", True), ("61.135.169.125", True), ("2606:4700::1111", True),
        ("10.1.2.3", False), ("172.16.0.1", False), ("192.168.0.10", False),
        ("127.0.0.1", False), ("127.8.9.10", False), ("169.254.169.254", False),
        ("0.0.0.0", False), ("100.64.0.1", False), ("224.0.0.1", False),
        ("224.0.1.1", False), ("255.255.255.255", False), ("240.0.0.1", False),
        ("::1", False), ("::", False), ("fe80::1", False), ("fc00::1", False),
        ("ff02::1", False), ("ff0e::1", False), ("::ffff:10.0.0.1", False),
        ("::ffff:127.0.0.1", False), ("::ffff:8.8.8.8", True), ("2001:db8::1", False),
    ],
)
def test_is_public(address: str, public: bool) -> None:
    assert is_public(ipaddress.ip_address(address)) is public


@settings(max_examples=500, deadline=None)
@given(st.text(max_size=80))
def test_no_text_makes_the_rules_raise(text: str) -> None:
    rules = HostRules(SpamList.from_lines(SPAM.splitlines()))
    for url in (text, "http://" + text, "https://" + text):
        assert rules.reason(url) in (None, "malformed", "ip", "port", "spam", "digit")
    local = HostRules(SpamList(), drop_local_names=True)
    assert local.reason("http://" + text) in (None, "malformed", "ip", "port", "private")


HOSTISH = st.text(alphabet="0123456789abcdefxX.:[]%@-_\uff10\u3002", max_size=30)


@settings(max_examples=500, deadline=None)
@given(HOSTISH, st.sampled_from(["", ":80", ":8080", ":", ":99999"]))
def test_no_host_like_text_makes_the_parser_raise_but_malformed(host: str, port: str) -> None:
    try:
        parsed = parse_url_host(f"http://{host}{port}/")
    except MalformedURL:
        return
    assert parsed.host == parsed.host.lower() and parsed.host.isascii()
    assert 0 <= parsed.port <= 65535
