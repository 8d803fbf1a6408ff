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


def hostname(url: str) -> str | None:
    """urlsplit(url).hostname for a url of the usual shape (lowercase host, no port, no
    userinfo), read without parsing it; None for any other url (parse it then)."""
    simple = _simple_host(url)
    return None if simple is None else simple[0]


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


# URLs w3lib's canonicalize_url leaves as they are: lowercase scheme and host, a port of at
# most four digits, a path with no %-escape, ";" or dot segment, no fragment, and no query
# or one of key=value pairs of unreserved characters in w3lib's order (it sorts them).
# Scrapy's request fingerprint canonicalizes every url it is given (some 10 us each); most
# links a crawl enqueues are like this, and the check costs about 1 us.
_UNRESERVED = r"[A-Za-z0-9\-._~]"
_CANONICAL = re.compile(
    r"https?://[a-z0-9][a-z0-9.\-]*(?::[1-9][0-9]{0,3})?/[A-Za-z0-9\-._~:/@!$&'()*+,=]*"
    rf"(?:\?({_UNRESERVED}+={_UNRESERVED}*(?:&{_UNRESERVED}+={_UNRESERVED}*)*))?\Z"
)


def already_canonical(url: str) -> bool:
    """Whether w3lib's canonicalize_url(url) is url itself (False: it may or may not be)."""
    match = _CANONICAL.match(url)
    if match is None or "/." in url:
        return False
    query = match.group(1)
    if query is None:
        return True
    pairs = [pair.split("=") for pair in query.split("&")]  # one "=" each, as matched
    return pairs == sorted(pairs)


def path_extension(url: str) -> str:
    """The extension of an absolute url's last path segment, lowercase with its dot ("" if
    none): what urlsplit(url).path would give, without splitting the whole url (a page's
    every link is asked)."""
    end = len(url)
    for mark in "?#":
        at = url.find(mark, 0, end)
        if at >= 0:
            end = at
    slash = url.rfind("/", 0, end)
    if slash < url.find("//") + 2:  # no path: the host's dots are no extension
        return ""
    dot = url.rfind(".", slash + 1, end)
    return url[dot:end].lower() if dot >= 0 else ""


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


# --- session ids (crawler traps) ---------------------------------------------------------
#
# A site that writes a fresh session id into every link ("?sid=9f2c...", ";jsessionid=...",
# "/(S(lit3py55t21z5v55vlm25s55))/", "/sid/9f2c.../") gives each page endless urls. The id is
# dropped before dedup, so they are one url again.

# The value of a session id written as a path pair (/sid/<id>/) with no pattern of its own:
# 16 letters or digits at least, as the ids of PHP, Java and ASP are, and no directory name.
_ID_LIKE = re.compile(r"[0-9a-z]{16,}", re.IGNORECASE)
# ASP.NET's cookieless sessions: /(S(id))/, /(A(..)S(id)F(..))/ (2.0 on), /(id)/ (1.x: 24
# characters of a-z and 0-5). No page's path has a segment of that form.
_ASPNET = r"/\((?:[a-z]\([^()/?#]*\))+\)(?=/)|/\([a-z0-5]{24}\)(?=/)"


class SessionIds:
    """The session-id rules of TIANWANG_SESSION_PARAMS, one entry each:

    - `name`: the parameter `name` (case-insensitive), whatever its value;
    - `prefix*`: any parameter whose name starts with prefix (`utm_*`, `aspsessionid*`);
    - `name=REGEX`: the parameter only when its whole value matches REGEX (vBulletin's
      `s=[0-9a-f]{32}`: a search's `s=shoes` is kept).

    Each is stripped as a query parameter (`?sid=..`, `&sid=..`) or a path parameter
    (`;jsessionid=..`); a name (not a prefix) also as a path pair, `/sid/<id>/`, when the id
    matches its REGEX, or else is 16 letters or digits at least (so `/sid/about/` stays).
    ASP.NET's cookieless ids in the path are stripped whenever there are rules.
    ValueError for an entry that is not one of these.
    """

    def __init__(self, entries: list[str] | tuple[str, ...]) -> None:
        self.any_value: set[str] = set()
        self.prefixes: list[str] = []
        self.valued: dict[str, re.Pattern[str]] = {}
        for entry in entries:
            name, equals, value = entry.strip().lower().partition("=")
            if not name or not re.fullmatch(r"[a-z0-9_.\-\[\]]+\*?", name) or \
                    (equals and (name.endswith("*") or not value)):
                raise ValueError(f"not a parameter name, name* or name=REGEX: {entry!r}")
            if equals:
                try:
                    self.valued[name] = re.compile(value, re.IGNORECASE)
                except re.error as exc:
                    raise ValueError(f"bad REGEX in {entry!r}: {exc}") from None
            elif name.endswith("*"):
                self.prefixes.append(name[:-1])
            else:
                self.any_value.add(name)
        names = sorted(self.any_value | set(self.valued), key=len, reverse=True)
        named = "|".join(re.escape(name) for name in names)
        params = "|".join([named] * bool(named)
                          + [re.escape(p) + r"[^=;?&#/]*" for p in self.prefixes])
        # Most urls hold none: three searches of the lowercased url say so (case-sensitive
        # and one pattern each: a fifth of the cost of one IGNORECASE alternation of all).
        never = r"(?!)"
        self.find_param = re.compile(rf"[;?&](?:{params})=" if params else never)
        self.find_pair = re.compile(rf"/(?:{named})/" if named else never)
        self.path_param = re.compile(r";([^;=/?#]*)=([^;/?#]*)")
        self.path_pair = re.compile(rf"/({named})/([^/?#;]+)(?=[/;]|\Z)" if named else never,
                                    re.IGNORECASE)
        self.aspnet = re.compile(_ASPNET, re.IGNORECASE)

    def is_session(self, name: str, value: str) -> bool:
        """Whether the parameter name=value is a session id by these rules."""
        name = name.lower()
        if name in self.any_value:
            return True
        pattern = self.valued.get(name)
        if pattern is not None:
            return pattern.fullmatch(value) is not None
        return any(name.startswith(prefix) for prefix in self.prefixes)

    def strip(self, url: str) -> str:
        """The url without its session ids; most urls have none and are returned as they
        are after one regex search."""
        lowered = url.lower()
        if self.find_param.search(lowered) is None and "/(" not in url and \
                self.find_pair.search(lowered) is None:
            return url
        hash_at = url.find("#")
        fragment = url[hash_at:] if hash_at >= 0 else ""
        rest = url[:hash_at] if hash_at >= 0 else url
        base, question, query = rest.partition("?")
        path_at = base.find("/", base.find("://") + 3) if "://" in base else 0
        site, path = (base[:path_at], base[path_at:]) if path_at >= 0 else (base, "")
        path = self.aspnet.sub("", path)
        path = self.path_pair.sub(self._pair, path)
        path = self.path_param.sub(lambda m: "" if self.is_session(*m.groups()) else m[0], path)
        if not path and path_at >= 0:
            path = "/"
        if question:
            kept = [pair for pair in query.split("&")
                    if not ("=" in pair and self.is_session(*pair.split("=", 1)))]
            query = "&".join(kept)
        return site + path + ("?" + query if query else "") + fragment

    def _pair(self, match: re.Match[str]) -> str:
        name, value = match.group(1).lower(), match.group(2)
        pattern = self.valued.get(name, _ID_LIKE)
        return "" if pattern.fullmatch(value) else match.group(0)


def session_id_pattern(entries: list[str] | tuple[str, ...]) -> SessionIds | None:
    """The rules of these TIANWANG_SESSION_PARAMS entries (see SessionIds); None when there
    are none (nothing is stripped). ValueError for a bad entry."""
    return SessionIds(entries) if entries else None


def strip_session_ids(url: str, rules: SessionIds | None) -> str:
    """The url without its session ids (see SessionIds); as it is when there are no rules."""
    return url if rules is None else rules.strip(url)
