"""Registered domains, by the Public Suffix List, from the snapshot bundled with tldextract.

A site owner can make subdomains without end (h1.farm.com, h2.farm.com, ...): the crawl's
bounds per registered domain (hosts, pages) and per cookie domain need to know that they
are one owner's, and that blogspot.com's or github.io's subdomains are each another's (the
list's private section). The list is read from the copy tldextract ships in its package:
nothing is ever downloaded (tldextract's default fetches the list from the internet on
first use, around any proxy the crawl was given), nothing is cached on disk.

Pure python (no Scrapy).
"""

from __future__ import annotations

from functools import lru_cache

import tldextract

_EXTRACT = tldextract.TLDExtract(suffix_list_urls=(), cache_dir=None,
                                 include_psl_private_domains=True)


@lru_cache(maxsize=65536)
def registered_domain(host: str) -> str:
    """The host's registered domain (eTLD+1): www.pku.edu.cn -> pku.edu.cn, a.b.blogspot.com
    -> b.blogspot.com. A name under no listed suffix takes the list's default rule (`*`, a
    one-label suffix): x.y.test -> y.test. An IP address or a one-label name is its own."""
    host = host.lower().rstrip(".")
    parts = _EXTRACT.extract_str(host)
    if parts.suffix and parts.domain:
        return f"{parts.domain}.{parts.suffix}"
    if parts.suffix:  # the host is a public suffix itself
        return host
    labels = host.split(".")
    if len(labels) <= 1 or labels[-1].isdigit():  # "localhost", an IPv4 address
        return host
    return ".".join(labels[-2:])


def is_public_suffix(name: str) -> bool:
    """Whether a cookie domain is a public suffix (com, edu.cn, blogspot.com): cookies set
    for it would reach every site under it."""
    name = name.lower().strip(".")
    parts = _EXTRACT.extract_str(name)
    return bool(parts.suffix) and not parts.domain
