"""`tianwang hosts clean D0 --out D1`: drop the malformed host names (seed 004's D1).

Reads a site list (D0, the format of tianwang.collection.sitelist: `<site>\\t<pages>\\n`,
sorted) and writes D1 in the same format with the well-formed sites, and a removals file
(default D1.removed) `<site>\\t<pages>\\t<reason>\\n` with the others. The host of each
site gets the first reason that applies, checked in this order:
  bad-ip       an IP literal that is not one: `[::1` or `1.2.3.456` (a name whose last label
               is a number is read as IPv4, as browsers read it)
  bad-char     an ASCII character other than a-z, 0-9, `-` and `.` (`_`, `<`, `*`, an
               upper-case letter: D0 is lowercase), in any label: host names are letters,
               digits and hyphens (RFC 952/1123)
  bad-idna     a non-ASCII label IDNA cannot encode (or maps to such a character: a
               full-width `<`), or an `xn--` label that does not decode and encode back
  empty-label  two dots in a row, or a leading dot
  long-label   a label longer than 63 characters (in its ASCII, `xn--` form)
  long-name    a name longer than 253 characters (ASCII form)
  bad-hyphen   a label that starts or ends with `-`
  no-dot       a single label (`localhost`, `intranet`)
  bad-tld      a last label that is not a top-level domain of the IANA root zone list
               bundled here (tlds-alpha-by-domain.txt, version in its first line; no network
               is asked); `--tlds FILE` reads another list in the same format
IP addresses (`http://127.0.0.1:80/`, `http://[::1]:8080/`) are well-formed and stay:
`hosts filter` drops IP hosts later, with its own reason. Valid IDN names (`xn--` labels,
which `hosts count` writes for non-ASCII names) stay. Nothing is merged or renamed here:
`hosts count` already lowercased and IDNA-encoded every name.
"""

from __future__ import annotations

import ipaddress
import re
from collections import Counter
from encodings import idna
from pathlib import Path

from tianwang.collection.sitelist import (
    SiteListError,
    read_sites,
    split_site,
)
from tianwang.hosts import MalformedURL, ipv4_literal

REASONS = ("bad-ip", "bad-char", "bad-idna", "empty-label", "long-label", "long-name",
           "bad-hyphen", "no-dot", "bad-tld")
TLD_FILE = Path(__file__).with_name("tlds-alpha-by-domain.txt")
_LDH = re.compile(r"[a-z0-9-]*")
# An ASCII character other than a-z, 0-9, - and the dot (non-ASCII ones are IDNA's to judge).
_BAD_ASCII = re.compile(r"[\x00-\x2c/:-`{-\x7f]")


def load_tlds(path: str | Path = TLD_FILE) -> frozenset[str]:
    """The lowercase top-level domains of an IANA-format list (one a line, # comments)."""
    with open(path, encoding="ascii") as lines:
        tlds = frozenset(line.strip().lower() for line in lines
                         if line.strip() and not line.startswith("#"))
    if not tlds:
        raise ValueError(f"{path}: no top-level domains in it")
    return tlds


def malformed(host: str, tlds: frozenset[str]) -> str | None:
    """Why a D0 host is not a well-formed host name, or None when it is."""
    if host.startswith("["):
        return None if _ipv6(host) else "bad-ip"
    try:
        if ipv4_literal(host) is not None:
            return None
    except MalformedURL:
        return "bad-ip"
    if _BAD_ASCII.search(host):
        return "bad-char"
    labels = host.split(".")
    ascii_labels = [_to_ascii(label) for label in labels]
    if None in ascii_labels:
        return "bad-idna"
    return _name_reason(ascii_labels, tlds)  # type: ignore[arg-type]


def _ipv6(host: str) -> bool:
    if not host.endswith("]"):
        return False
    try:
        ipaddress.IPv6Address(host[1:-1])
    except ValueError:
        return False
    return True


def _to_ascii(label: str) -> str | None:
    """The label's ASCII form (IDNA 2003, as tianwang.hosts reads names), None if it has none.

    Unlike Python's idna codec this does not refuse a long label: that is long-label's job.
    """
    try:
        if label.isascii():
            if label.startswith("xn--"):
                idna.ToUnicode(label.encode("ascii"))  # raises unless it round-trips
            return label
        prepared = idna.nameprep(label)
        if not _LDH.fullmatch("".join(c for c in prepared if c.isascii())):
            return None  # mapped to a character no host name has (full-width < becomes <)
        if prepared.isascii():
            return prepared
        return "xn--" + prepared.encode("punycode").decode("ascii")
    except UnicodeError:
        return None


def _name_reason(labels: list[str], tlds: frozenset[str]) -> str | None:
    if any(not label for label in labels):
        return "empty-label"
    if any(len(label) > 63 for label in labels):
        return "long-label"
    if len(".".join(labels)) > 253:
        return "long-name"
    if any(label.startswith("-") or label.endswith("-") for label in labels):
        return "bad-hyphen"
    if len(labels) == 1:
        return "no-dot"
    if labels[-1] not in tlds:
        return "bad-tld"
    return None


def clean(d0: str | Path, tlds: frozenset[str]) -> tuple[list[str], list[str]]:
    """(D1 lines, removals lines) of a D0 file; SiteListError if D0 is not a site list."""
    kept, removed, seen = [], [], set()
    for site, pages in read_sites(d0):
        if site in seen:
            raise SiteListError(f"{d0}: {site} is listed twice")
        seen.add(site)
        reason = malformed(split_site(site)[1], tlds)
        if reason is None:
            kept.append(f"{site}\t{pages}\n")
        else:
            removed.append(f"{site}\t{pages}\t{reason}\n")
    return sorted(kept), sorted(removed)


# -- the command -------------------------------------------------------------------------


def count_line(kept: int, removed: list[str]) -> str:
    reasons = Counter(line.rstrip("\n").rsplit("\t", 1)[1] for line in removed)
    detail = ", ".join(f"{reason} {reasons[reason]}" for reason in REASONS if reasons[reason])
    return f"D1: {kept} sites kept, {len(removed)} removed" + (f" ({detail})" if detail else "")
