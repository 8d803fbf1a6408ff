"""Which hosts a crawl refuses: ports, IP literals, spam domains, digit-led names (seed 004),
names no DNS can hold, and names of the crawler's own machine or network.

Pure python (no Scrapy, no Twisted). The host of a url is read the way a browser reads it
(the WHATWG URL standard's host parser), so a link cannot slip an IP address past the
filter by spelling it http://2130706433/, http://0x7f.1/ or http://0177.0.0.1/. A domain
must also be one DNS can hold (RFC 1035: at most 253 characters, labels of 1 to 63), which
the URL standard does not ask: a longer one never resolves, and its name cannot even be a
directory of the record tree (255 bytes at most), nor can "..".
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import unquote_to_bytes

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

DEFAULT_PORTS = {"http": 80, "https": 443}
# Code points the URL standard forbids in a domain (after percent-decoding).
_FORBIDDEN = re.compile(r"[\x00-\x20#%/:<>?@\[\\\]^|\x7f]")
MAX_NAME, MAX_LABEL = 253, 63  # RFC 1035 2.3.4, without the root's trailing dot
# Names of this machine, and the ones the machine's own resolver answers from its hosts file
# or search domains, never the public DNS: a page linking to them points the crawler at its
# own network, whatever proxy it fetches through. The special-use names of RFC 6761
# (localhost), RFC 6762 (local: multicast DNS), RFC 8375 (home.arpa), ICANN's private-use
# TLD (internal, 2024: metadata.google.internal, *.ec2.internal), the hosts-file domains of
# Linux distributions (localdomain, localdomain6), and the private TLDs RFC 6762 appendix G
# found in use (intranet, private, corp, home, lan): none is, or will be, a public TLD.
LOCAL_SUFFIXES = ("localhost", "local", "internal", "home.arpa", "localdomain",
                  "localdomain6", "intranet", "private", "corp", "home", "lan")
# A spam-list line made only of these is a domain; anything else is a regex.
_DOMAIN_LINE = re.compile(r"^(?:\*\.|\.)?[a-z0-9_-]+(?:\.[a-z0-9_-]+)*\.?$")


class MalformedURL(ValueError):
    """A url whose host a browser would refuse to parse."""


@dataclass(frozen=True, slots=True)
class UrlHost:
    scheme: str
    host: str  # lowercase ASCII; an IP literal in its canonical form
    port: int  # the effective port (the scheme's default when none is written)
    ip: IPAddress | None  # set when the host is an IP literal


def parse_url_host(url: str) -> UrlHost:
    """The scheme, host and port of an absolute http(s) url; MalformedURL if unparsable."""
    scheme, sep, rest = url.partition("://")
    scheme = scheme.lower()
    if not sep or scheme not in DEFAULT_PORTS:
        raise MalformedURL(f"not an absolute http(s) url: {url!r}")
    authority = re.split(r"[/?#\\]", rest, maxsplit=1)[0]
    hostport = authority.rpartition("@")[2]
    if hostport.startswith("["):
        inside, bracket, after = hostport[1:].partition("]")
        if not bracket or (after and not after.startswith(":")):
            raise MalformedURL(f"bad IPv6 host in {url!r}")
        port = _port(after[1:] if after else "", scheme, url)
        address = _ipv6(inside, url)
        return UrlHost(scheme, str(address), port, address)
    raw_host, colon, raw_port = hostport.partition(":")
    port = _port(raw_port if colon else "", scheme, url)
    host = _domain(raw_host, url)
    address = ipv4_literal(host, url)
    if address is not None:
        return UrlHost(scheme, str(address), port, address)
    return UrlHost(scheme, host, port, None)


def _port(text: str, scheme: str, url: str) -> int:
    if not text:
        return DEFAULT_PORTS[scheme]
    if not (text.isascii() and text.isdigit()) or int(text) > 65535:
        raise MalformedURL(f"bad port {text!r} in {url!r}")
    return int(text)


def _ipv6(text: str, url: str) -> ipaddress.IPv6Address:
    if "%" in text:  # a zone id: browsers refuse it
        raise MalformedURL(f"IPv6 zone id in {url!r}")
    try:
        return ipaddress.IPv6Address(text)
    except ValueError:
        raise MalformedURL(f"bad IPv6 host in {url!r}") from None


def _domain(raw: str, url: str) -> str:
    """Percent-decoded, mapped to lowercase ASCII (IDNA), checked for forbidden characters."""
    try:
        host = unquote_to_bytes(raw).decode("utf-8") if "%" in raw else raw
        if not host.isascii():
            # Python's IDNA codec maps full-width digits and the ideographic full stops as
            # browsers do, so http://１２７。０。０。１/ becomes 127.0.0.1 here as there.
            host = host.encode("idna").decode("ascii")
    except UnicodeError:
        raise MalformedURL(f"bad host in {url!r}") from None
    host = host.lower()
    if not host or host == "." or _FORBIDDEN.search(host):
        raise MalformedURL(f"bad host in {url!r}")
    name = host[:-1] if host.endswith(".") else host
    if len(name) > MAX_NAME or any(not 0 < len(label) <= MAX_LABEL for label in name.split(".")):
        raise MalformedURL(f"host is no DNS name (253 characters, labels of 1 to 63) in {url!r}")
    return host


def is_local_name(host: str) -> bool:
    """Whether a domain (lowercase, as parse_url_host gives it) names this machine or its
    network: a single label (localhost, ip6-localhost, metadata, instance-data: found only in
    the hosts file or through the resolver's search domains) or a name under LOCAL_SUFFIXES
    (localhost.localdomain, printer.local, metadata.google.internal)."""
    name = host.rstrip(".")
    if "." not in name:
        return True
    return name.endswith(_LOCAL_ENDINGS) or name in LOCAL_SUFFIXES


_LOCAL_ENDINGS = tuple(f".{suffix}" for suffix in LOCAL_SUFFIXES)


def ipv4_literal(host: str, url: str = "") -> ipaddress.IPv4Address | None:
    """The IPv4 address a host spells, None for a domain; MalformedURL if it cannot be either.

    The URL standard: a host whose last label is a number (decimal, or hex after 0x) is an
    IPv4 address of 1 to 4 parts, each decimal, octal (leading 0) or hex (0x); the last part
    fills the remaining bytes. Such a host that does not parse is an invalid url.
    """
    parts = host.split(".")
    if parts[-1] == "" and len(parts) > 1:
        parts.pop()
    if not _is_number(parts[-1]):
        return None
    if len(parts) > 4:
        raise MalformedURL(f"IPv4 host with more than 4 parts in {url or host!r}")
    numbers = [_ipv4_number(part, url or host) for part in parts]
    if any(n > 255 for n in numbers[:-1]) or numbers[-1] >= 256 ** (5 - len(numbers)):
        raise MalformedURL(f"IPv4 part out of range in {url or host!r}")
    value = numbers[-1]
    for i, n in enumerate(numbers[:-1]):
        value += n * 256 ** (3 - i)
    return ipaddress.IPv4Address(value)


def _is_number(label: str) -> bool:
    if label.isascii() and label.isdigit():
        return True
    return label[:2] in ("0x", "0X") and all(c in "0123456789abcdefABCDEF" for c in label[2:])


def _ipv4_number(part: str, url: str) -> int:
    if not part:
        raise MalformedURL(f"empty IPv4 part in {url!r}")
    radix, digits = 10, part
    if part[:2] in ("0x", "0X"):
        radix, digits = 16, part[2:]
    elif len(part) > 1 and part[0] == "0":
        radix, digits = 8, part[1:]
    if not digits:
        return 0
    if not digits.isascii() or not digits.isalnum() or "_" in digits:
        raise MalformedURL(f"bad IPv4 part {part!r} in {url!r}")
    try:
        return int(digits, radix)
    except ValueError:
        raise MalformedURL(f"bad IPv4 part {part!r} in {url!r}") from None


def is_public(address: IPAddress) -> bool:
    """False for private, loopback, link-local, multicast, reserved and unspecified addresses."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_global and not address.is_multicast


class SpamListError(ValueError):
    """A spam list line that is neither a domain nor a valid regex."""


class SpamList:
    """Domains (each also matching its subdomains) and host regexes, one a line.

    A line of only letters, digits, dots, hyphens and underscores (optionally led by "*." or
    ".") is a domain; any other line is a regular expression searched in the host. Blank
    lines and lines starting with "#" are skipped.
    """

    def __init__(self, domains: Iterable[str] = (), patterns: Iterable[str] = ()) -> None:
        self.domains = frozenset(domains)
        self.patterns = [re.compile(p, re.IGNORECASE) for p in patterns]

    @classmethod
    def from_lines(cls, lines: Iterable[str]) -> SpamList:
        domains, patterns = [], []
        for number, raw in enumerate(lines, 1):
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            if _DOMAIN_LINE.match(line.lower()):
                domains.append(line.lower().removeprefix("*.").strip("."))
                continue
            try:
                re.compile(line)
            except re.error as exc:
                raise SpamListError(f"line {number}: bad regex {line!r}: {exc}") from None
            patterns.append(line)
        return cls(domains, patterns)

    def __bool__(self) -> bool:
        return bool(self.domains or self.patterns)

    def matches(self, host: str) -> bool:
        if self.domains:
            labels = host.rstrip(".").split(".")
            for i in range(len(labels)):
                if ".".join(labels[i:]) in self.domains:
                    return True
        return any(p.search(host) for p in self.patterns)


@dataclass(frozen=True, slots=True)
class HostRules:
    """The checks that need no network: the reason a url is dropped, or None."""

    spam: SpamList
    drop_other_ports: bool = True
    drop_digit_hosts: bool = True
    drop_local_names: bool = False  # is_local_name: refused as "private"

    def reason(self, url: str) -> str | None:
        try:
            parsed = parse_url_host(url)
        except MalformedURL:
            return "malformed"
        return self.reason_for(parsed)

    def reason_for(self, parsed: UrlHost) -> str | None:
        if parsed.ip is not None:
            return "ip"
        if self.drop_local_names and is_local_name(parsed.host):
            return "private"
        if self.drop_other_ports and parsed.port != DEFAULT_PORTS[parsed.scheme]:
            return "port"
        if self.spam and self.spam.matches(parsed.host):
            return "spam"
        if self.drop_digit_hosts and parsed.host[:1].isdigit():
            return "digit"
        return None
