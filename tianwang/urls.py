"""Pure URL functions (no Scrapy import)."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from w3lib.url import safe_url_string

_DEFAULT_PORTS = {"http": 80, "https": 443}


# An http(s) url whose host is already lowercase, with no port, user or IPv6 brackets, and
# no tab or line break anywhere (urlsplit removes those): its host is what follows "://".
# Most urls are like this; urlsplit costs several microseconds each, which a million-page
# site partition (tianwang partition plan) pays several times per url.
_SIMPLE_HOST = re.compile(r"https?://([a-z0-9.\-_]+)(?=[/?#]|\Z)")


def _simple_host(url: str) -> tuple[str, int] | None:
    """(host, where the host ends) for a url urlsplit would agree on; None for any other."""
    match = _SIMPLE_HOST.match(url)
    if match is None or "\t" in url or "\n" in url or "\r" in url:
        return None
    return match.group(1), match.end(1)


def url_host(url: str) -> str:
    """The host a url's records are filed under: lowercase, a port only if not the default.

    ValueError for a url with no host or a bad port.
    """
    simple = _simple_host(url)
    if simple is not None:
        return simple[0]
    parts = urlsplit(url)
    host = parts.hostname
    if not host:
        raise ValueError(f"URL {url!r} has no host")
    if ":" in host:  # an IPv6 address keeps its brackets, so a port stays distinguishable
        host = f"[{host}]"
    port = parts.port
    if port is None or port == _DEFAULT_PORTS.get(parts.scheme):
        return host
    return f"{host}:{port}"


# URLs w3lib's safe_url_string leaves as they are: lowercase host, a port without leading
# zeros (w3lib drops an empty port and strips zeros), only unreserved or sub-delim
# characters and valid %XX escapes after it, and no "?" at the end (w3lib drops it). Most
# links on the web are like this, and the check is far cheaper than safe_url_string itself.
_ALREADY_SAFE = re.compile(
    r"https?://[a-z0-9.\-_~]*(?::(?:0|[1-9][0-9]*))?"
    r"(?:[/?](?:[A-Za-z0-9\-._~:/?@!$&'()*+,;=]|%[0-9A-Fa-f]{2})*)?(?<!\?)\Z"
)


def safe_url(url: str, encoding: str = "utf-8") -> str:
    """w3lib's safe_url_string(url, encoding), with a fast path for already-safe urls."""
    if _ALREADY_SAFE.match(url):
        return url
    return safe_url_string(url, encoding=encoding)


# The scheme's own port written out: "http://h:80/" is "http://h/" to a server, but not to
# Scrapy's request fingerprint, so a crawl seeded with one spelling and linked with the
# other would fetch every page twice. Lazy, so "http://a:80@h/" (userinfo) is not a port.
_DEFAULT_PORT = re.compile(r"(http://[^/?#]*?):80(?=[/?#]|\Z)|(https://[^/?#]*?):443(?=[/?#]|\Z)")


def canonical_url(url: str, encoding: str = "utf-8") -> str:
    """The one spelling a crawl keeps of a url: safe_url's, without the scheme's default port
    (the form of every request, stored record and link graph line)."""
    url = safe_url(url, encoding)
    if ":80" not in url and ":443" not in url:  # nearly every url: skip the regex
        return url
    match = _DEFAULT_PORT.match(url)
    if match is None:
        return url
    return (match.group(1) or match.group(2)) + url[match.end():]


# --- URL weight, directory depth, URL type, path key (docs/design.md sections 2 and 4) ---------
#
# These take a url as a string and split it by hand: url_weight runs once per enqueued
# request (about 1.7 us here), and urlsplit alone costs twice that on a url it has not cached.

PENALTY_WORDS = ("search", "proxy", "gate")


def _after_scheme(url: str) -> str:
    """Everything after `scheme://`, without the fragment (the whole url if it has no scheme)."""
    start = url.find("://")
    rest = url[start + 3 :] if start >= 0 else url
    hash_at = rest.find("#")
    return rest if hash_at < 0 else rest[:hash_at]


def _localpath(rest: str) -> str:
    """The localpath of an after-scheme string: from the first "/" or "?" after the host."""
    slash, query = rest.find("/"), rest.find("?")
    if slash < 0:
        return "" if query < 0 else rest[query:]
    return rest[slash:] if query < 0 or slash < query else rest[query:]


def _path_depth(path: str) -> int:
    if path.endswith("/"):
        path = path[:-1]
    return path.count("/")


def directory_depth(url: str) -> int:
    """The number of "/" in the url's path after removing one trailing "/" (seed 000).

    http://a.com and http://a.com/ -> 0, http://a.com/cs and /cs/ -> 1, /cs/a.html -> 2.
    The query and the fragment do not count.
    """
    return _path_depth(_localpath(_after_scheme(url)).split("?", 1)[0])


def url_weight(
    url: str,
    initial: int = 10,
    words: tuple[str, ...] | list[str] = PENALTY_WORDS,
    word_penalty: int = 2,
    index_pages: frozenset[str] = frozenset(),
) -> int:
    """Seed 000's URL weight: initial, minus one per directory level, "?" and "&" in the
    localpath, minus word_penalty per occurrence of a penalty word after `scheme://` (host
    included, case-insensitive, non-overlapping); never below 0. The fragment never counts.

    index_pages: lowercase names of a directory's default document ("index.html"); a url
    ending in one, with no query, weighs as its directory (/cs/index.html as /cs/). Empty
    (the default) is seed 000's weight exactly.
    """
    rest = _after_scheme(url)
    local = _localpath(rest)
    query_at = local.find("?")
    path = local if query_at < 0 else local[:query_at]
    if index_pages and query_at < 0:
        path = _index_as_directory(path, index_pages)
    weight = initial - _path_depth(path) - local.count("?") - local.count("&")
    if words:
        lowered = rest.lower()
        for word in words:
            weight -= word_penalty * lowered.count(word.lower())
    return weight if weight > 0 else 0


def _index_as_directory(path: str, index_pages: frozenset[str]) -> str:
    """/cs/index.html -> /cs/ when "index.html" is in index_pages; any other path as it is."""
    slash = path.rfind("/")
    if slash >= 0 and path[slash + 1 :].lower() in index_pages:
        return path[: slash + 1]
    return path


def url_type(url: str) -> str:
    """The url's type, one of root, subroot, path, file (seeds 001, 002; docs/design.md 4).

    file: the last path segment holds a "." or the url has a query ("?", even empty);
    otherwise root (localpath "" or "/"), subroot (one directory: /cs, /cs/) or path (two or
    more directories: /cs/a, /cs/a/).
    """
    local = _localpath(_after_scheme(url))
    if "?" in local:
        return "file"
    if "." in local[local.rfind("/") + 1 :]:
        return "file"
    depth = _path_depth(local)
    if depth == 0:
        return "root"
    return "subroot" if depth == 1 else "path"


def path_key(url: str) -> str:
    """Seed 002's path key: host + "/" + first segment when that segment is a directory
    (followed by "/"), else host + "/". The host as url_host gives it.

    http://today.hit.edu.cn/articles/1/2.html -> today.hit.edu.cn/articles;
    http://www.hit.edu.cn/index.html and http://www.hit.edu.cn -> www.hit.edu.cn/.
    """
    simple = _simple_host(url)
    if simple is None:
        host, path = url_host(url), urlsplit(url).path
    else:
        host, start = simple
        stop = len(url)
        for mark in "?#":
            at = url.find(mark, start, stop)
            if at >= 0:
                stop = at
        path = url[start:stop]
    end = path.find("/", 1)
    first = path[1:end] if path.startswith("/") and end > 1 else ""
    return f"{host}/{first}"


# --- session ids (issue 16: crawler traps) ---------------------------------------------------
#
# A site that writes a fresh session id into every link ("?sid=9f2c...", ";jsessionid=...")
# gives each page endless urls. The id is dropped before dedup, so they are one url again.


def session_id_pattern(names: list[str] | tuple[str, ...]) -> re.Pattern[str] | None:
    """What finds a session-id parameter of one of `names` (case-insensitive) in a url:
    a path parameter (";jsessionid=...") or a query parameter ("?sid=...", "&sid=...").
    None when there are no names (nothing is stripped)."""
    if not names:
        return None
    alternatives = "|".join(re.escape(name) for name in sorted(set(names), key=len, reverse=True))
    return re.compile(rf"([;?&])(?:{alternatives})=[^;?&#]*", re.IGNORECASE)


def strip_session_ids(url: str, pattern: re.Pattern[str] | None) -> str:
    """The url without its session-id parameters (see session_id_pattern); most urls have
    none and are returned as they are after one regex search."""
    if pattern is None or pattern.search(url) is None:
        return url
    hash_at = url.find("#")
    fragment = url[hash_at:] if hash_at >= 0 else ""
    rest = url[:hash_at] if hash_at >= 0 else url
    base, question, query = rest.partition("?")
    base = pattern.sub(lambda m: "" if m.group(1) == ";" else m.group(0), base)
    if question:
        kept = [pair for pair in query.split("&") if not pattern.fullmatch("&" + pair)]
        query = "&".join(kept)
    return base + ("?" + query if query else "") + fragment
