import re
from urllib.parse import urlsplit

import pytest
from hypothesis import given
from hypothesis import strategies as st
from w3lib.url import canonicalize_url, safe_url_string

import tianwang.default_settings as defaults
from tianwang.urls import (
    already_canonical,
    canonical_url,
    directory_depth,
    hostname,
    path_extension,
    path_key,
    safe_url,
    session_id_pattern,
    strip_session_ids,
    url_host,
    url_type,
    url_weight,
)


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
        "http://a.com:/x",  # w3lib drops an empty port
        "http://a.com:080/x",  # and a port's leading zeros
        "http://:/",
        "http://a.com/x?",  # and an empty query's "?"
    ],
)
def test_safe_url_examples_match_w3lib(url: str) -> None:
    assert safe_url(url) == safe_url_string(url)


@pytest.mark.parametrize(
    ("url", "canonical"),
    [
        ("http://www.a.com:80/x", "http://www.a.com/x"),
        ("http://www.a.com:80", "http://www.a.com"),
        ("https://www.a.com:443/?q=1", "https://www.a.com/?q=1"),
        ("http://www.a.com:8080/x", "http://www.a.com:8080/x"),
        ("https://www.a.com:80/", "https://www.a.com:80/"),  # not https's own port
        ("http://www.a.com:443/", "http://www.a.com:443/"),
        ("http://www.a.com/x:80", "http://www.a.com/x:80"),  # a path, not a port
        ("http://u:80@www.a.com/", "http://u:80@www.a.com/"),  # a password, not a port
        ("HTTP://WWW.A.COM:80/a b", "http://www.a.com/a%20b"),
    ],
)
def test_canonical_url_drops_only_the_schemes_own_port(url: str, canonical: str) -> None:
    assert canonical_url(url) == canonical


@given(host=st.from_regex(r"[a-z0-9.\-]{1,12}", fullmatch=True),
       port=st.one_of(st.none(), st.integers(1, 65535)), rest=url_chars)
def test_canonical_url_is_w3libs_form_with_the_default_port_read_as_none(
    host: str, port: int | None, rest: str
) -> None:
    netloc = host if port is None else f"{host}:{port}"
    try:
        expected = safe_url_string(f"http://{netloc}/{rest}")
    except (ValueError, UnicodeError):
        return
    if port == 80:
        expected = expected.replace(f"{host}:80", host, 1)
    assert canonical_url(f"http://{netloc}/{rest}") == expected


# --- URL weight, directory depth, URL type, path key (docs/design.md sections 2 and 4) ---------

# docs/design.md section 2's table, as it stands there.
DESIGN_WEIGHTS = [
    ("http://www.25yi.com", 10),
    ("http://www.25yi.com/", 10),
    ("http://www.25yi.com/cs", 9),
    ("http://www.25yi.com/cs/", 9),
    ("http://www.25yi.com/cs/index.html", 8),
    ("http://bbs.example.com/viewthread.php?tid=1&page=2", 7),
    ("http://www.example.com/search?q=a", 6),
    ("http://proxy.example.com/", 8),
    ("http://www.example.com/a/b/c/d/e/f/g/h/i/j/k.html", 0),
]


@pytest.mark.parametrize(("url", "weight"), DESIGN_WEIGHTS)
def test_url_weight_design_table(url: str, weight: int) -> None:
    assert url_weight(url) == weight


@pytest.mark.parametrize(
    ("url", "weight"),
    [
        ("http://a.com/x/#/y/z?q&r", 9),  # the fragment never counts
        ("http://a.com/SEARCH/Gate.html", 4),  # words are case-insensitive
        ("http://searchproxy.gate.com/", 4),  # and counted in the host
        ("http://a.com/searchsearch", 5),  # non-overlapping occurrences
        ("http://a.com/gategate?x=1", 4),
        ("http://a.com:8080/proxy", 7),  # the port is not a directory
        ("http://a.com?a=1&b=2&c=3", 7),  # a query straight after the host
        ("http://a.com/x?u=http://b.com/c/d", 8),  # "/" in the query is no directory
        ("http://a.com/a&b/c", 7),  # "&" counts wherever it is in the localpath
        ("http://a.com/x??y", 7),  # every "?" counts
        ("https://a.com/a/b/", 8),
        ("http://a.com//", 9),  # one trailing "/" is dropped, the other counts
        ("http://a.com/search/search/search/search/search", 0),  # never below zero
    ],
)
def test_url_weight_edge_cases(url: str, weight: int) -> None:
    assert url_weight(url) == weight


@pytest.mark.parametrize(
    ("url", "kwargs", "weight"),
    [
        ("http://a.com/cs/", {"initial": 20}, 19),
        ("http://a.com/search/", {"words": ()}, 9),
        ("http://a.com/search/", {"word_penalty": 5}, 4),
        ("http://a.com/news/bbs.html", {"words": ("BBS", "news")}, 4),
        ("http://a.com/a/b/c", {"initial": 2}, 0),
    ],
)
def test_url_weight_settings(url: str, kwargs: dict, weight: int) -> None:
    assert url_weight(url, **kwargs) == weight


INDEX_PAGES = frozenset({"index.html", "default.asp"})


@pytest.mark.parametrize(
    ("url", "weight"),
    [
        ("http://www.25yi.com/cs/index.html", 9),  # as /cs/
        ("http://www.25yi.com/cs/INDEX.HTML", 9),  # file names compare case-insensitively
        ("http://www.25yi.com/index.html", 10),  # as the homepage
        ("http://www.25yi.com/a/b/default.asp", 8),  # as /a/b/
        ("http://www.25yi.com/cs/index.html#top", 9),
        ("http://www.25yi.com/cs/index.html?page=2", 7),  # a query: a program, not a document
        ("http://www.25yi.com/cs/index.htm", 8),  # not in the list
        ("http://www.25yi.com/cs/myindex.html", 8),
        ("http://www.25yi.com/index.html/cs", 8),  # only the last segment
    ],
)
def test_url_weight_weighs_an_index_page_as_its_directory(url: str, weight: int) -> None:
    assert url_weight(url, index_pages=INDEX_PAGES) == weight


@pytest.mark.parametrize(
    ("url", "depth", "kind"),
    [
        ("http://www.25yi.com", 0, "root"),
        ("http://www.25yi.com/", 0, "root"),
        ("http://www.25yi.com/cs", 1, "subroot"),
        ("http://www.25yi.com/cs/", 1, "subroot"),
        ("http://www.25yi.com/cs/a.html", 2, "file"),
        ("http://www.25yi.com/cs/a", 2, "path"),
        ("http://www.25yi.com/cs/a/", 2, "path"),
        ("http://www.25yi.com/cs/a/b/", 3, "path"),
        ("http://a.com/index.html", 1, "file"),
        ("http://a.com/?", 0, "file"),  # a query, even an empty one, makes a file
        ("http://a.com/?page=2", 0, "file"),
        ("http://a.com/cs/?page=2", 1, "file"),
        ("http://a.com/v1.0/", 1, "subroot"),  # a "." in a directory name is no file
        ("http://a.com/cs#top", 1, "subroot"),
        ("http://a.com/cs/#a.html", 1, "subroot"),  # nor is one in the fragment
        ("http://a.com:8080/", 0, "root"),
        ("http://a.com//", 1, "subroot"),
    ],
)
def test_directory_depth_and_url_type(url: str, depth: int, kind: str) -> None:
    assert directory_depth(url) == depth
    assert url_type(url) == kind


@pytest.mark.parametrize(
    ("url", "key"),
    [
        ("http://today.hit.edu.cn/articles/1/2.html", "today.hit.edu.cn/articles"),
        ("http://www.hit.edu.cn/index.html", "www.hit.edu.cn/"),
        ("http://www.hit.edu.cn", "www.hit.edu.cn/"),
        ("http://www.hit.edu.cn/", "www.hit.edu.cn/"),
        ("http://www.hit.edu.cn/cs", "www.hit.edu.cn/"),  # "cs" is not followed by "/"
        ("http://www.hit.edu.cn/cs/", "www.hit.edu.cn/cs"),
        ("http://WWW.Hit.edu.cn:80/News/a.html", "www.hit.edu.cn/News"),  # url_host's host
        ("http://a.com:8080/cs/x", "a.com:8080/cs"),
        ("http://a.com/list.asp?dir=cs/x", "a.com/"),  # "/" in the query is no directory
        ("http://a.com/cs?x#/y/", "a.com/"),
        ("http://a.com//x/", "a.com/"),
    ],
)
def test_path_key(url: str, key: str) -> None:
    assert path_key(url) == key


def test_path_key_rejects_a_url_without_host() -> None:
    with pytest.raises(ValueError):
        path_key("file:///etc/passwd")


# Urls as the spider hands them over: http(s), a host, maybe a port, then path, query and
# fragment made of url characters (penalty words and "/?&#." included on purpose).
_host = st.from_regex(r"[a-z0-9]([a-z0-9\-]{0,10}[a-z0-9])?(\.[a-z]{2,4}){1,2}", fullmatch=True)
_segment = st.one_of(
    st.sampled_from(["search", "proxy", "gate", "SeArCh", "cs", "a.html", "index.htm", ""]),
    st.from_regex(r"[A-Za-z0-9._~%!$'()*+,;=:@\-]{1,8}", fullmatch=True),
)
_query = st.lists(st.from_regex(r"[A-Za-z0-9=/?&.]{0,8}", fullmatch=True), max_size=3)
_fragment = st.from_regex(r"[A-Za-z0-9/?&#.]{0,10}", fullmatch=True)


@st.composite
def web_urls(draw: st.DrawFn) -> tuple[str, str, str]:
    """(scheme://host[:port], path, ?query or "") of a url without fragment."""
    base = f"{draw(st.sampled_from(['http', 'https']))}://{draw(_host)}"
    if draw(st.booleans()):
        base += f":{draw(st.integers(1, 65535))}"
    segments = draw(st.lists(_segment, max_size=12))
    path = "".join(f"/{s}" for s in segments) + draw(st.sampled_from(["", "/"]))
    queries = draw(_query)
    query = "?" + "&".join(queries) if queries else ""
    return base, path, query


@given(url=st.text(max_size=80))
def test_weight_is_within_0_and_10_for_any_text(url: str) -> None:
    assert 0 <= url_weight(url) <= 10


@given(parts=web_urls(), segment=_segment, trailing=st.booleans())
def test_adding_a_path_segment_never_raises_the_weight(
    parts: tuple[str, str, str], segment: str, trailing: bool
) -> None:
    base, path, query = parts
    longer = (path if path.endswith("/") else path + "/") + segment + ("/" if trailing else "")
    assert url_weight(base + longer + query) <= url_weight(base + path + query)
    assert directory_depth(base + longer + query) >= directory_depth(base + path + query)


@given(parts=web_urls(), name=st.sampled_from(sorted(INDEX_PAGES)), fragment=_fragment)
def test_an_index_page_weighs_as_its_directory(
    parts: tuple[str, str, str], name: str, fragment: str
) -> None:
    scheme_host, path, _query = parts
    directory = path[: path.rfind("/") + 1] or "/"
    assert url_weight(f"{scheme_host}{directory}{name}#{fragment}", index_pages=INDEX_PAGES) == (
        url_weight(f"{scheme_host}{directory}")
    )


@given(parts=web_urls(), fragment=_fragment)
def test_the_fragment_never_matters(parts: tuple[str, str, str], fragment: str) -> None:
    url = "".join(parts)
    with_fragment = f"{url}#{fragment}"
    assert url_weight(with_fragment) == url_weight(url)
    assert directory_depth(with_fragment) == directory_depth(url)
    assert url_type(with_fragment) == url_type(url)
    assert path_key(with_fragment) == path_key(url)


@given(parts=web_urls())
def test_depth_and_type_agree_with_urlsplit(parts: tuple[str, str, str]) -> None:
    url = "".join(parts)
    path, query = urlsplit(url).path, urlsplit(url).query
    stripped = path[:-1] if path.endswith("/") else path
    assert directory_depth(url) == stripped.count("/")
    kind = url_type(url)
    if "?" in url:
        assert kind == "file"
    elif "." in path.rsplit("/", 1)[-1]:
        assert kind == "file"
    else:
        assert kind == {0: "root", 1: "subroot"}.get(directory_depth(url), "path")
    assert not (kind == "root" and (query or path not in ("", "/")))


@given(parts=web_urls())
def test_weight_is_the_formula_over_depth(parts: tuple[str, str, str]) -> None:
    url = "".join(parts)
    after_scheme = url.split("://", 1)[1].lower()
    local = parts[1] + parts[2]
    words = sum(after_scheme.count(word) for word in ("search", "proxy", "gate"))
    penalty = directory_depth(url) + local.count("?") + local.count("&") + 2 * words
    assert url_weight(url) == max(0, 10 - penalty)
    assert url_weight(url, words=()) == max(0, 10 - penalty + 2 * words)


@given(parts=web_urls())
def test_path_key_is_the_host_and_the_first_directory(parts: tuple[str, str, str]) -> None:
    url = "".join(parts)
    segments = urlsplit(url).path.split("/")  # "/cs/a.html" -> ["", "cs", "a.html"]
    first_directory = segments[1] if len(segments) > 2 else ""  # a segment "/" follows
    assert path_key(url) == f"{url_host(url)}/{first_directory}"


def _path_key_by_urlsplit(url: str) -> str:
    """path_key as docs/design.md section 4 words it, through urlsplit alone (no fast path)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    if parts.port is not None and parts.port != {"http": 80, "https": 443}.get(parts.scheme):
        host = f"{host}:{parts.port}"
    path = parts.path
    end = path.find("/", 1)
    return f"{host}/{path[1:end] if path.startswith('/') and end > 1 else ''}"


@given(parts=web_urls(), fragment=_fragment,
       noise=st.sampled_from(["", "\t", "\n", "A", ":", "@", "_", "-", " "]),
       at=st.integers(0, 30))
def test_url_host_and_path_key_agree_with_urlsplit(
    parts: tuple[str, str, str], fragment: str, noise: str, at: int
) -> None:
    # the fast path (lowercase host, no port) against urlsplit, also with a character
    # dropped in anywhere that should send a url down the slow path
    url = "".join(parts) + (f"#{fragment}" if fragment else "")
    url = url[:at] + noise + url[at:]
    try:
        expected = _path_key_by_urlsplit(url)
    except ValueError:
        return  # a port urlsplit rejects: path_key raises too (tested above)
    if not urlsplit(url).hostname:  # as "http://a@:1": a port, no host
        with pytest.raises(ValueError):
            path_key(url)
        return
    assert path_key(url) == expected
    assert url_host(url) == expected.split("/", 1)[0]


@given(parts=web_urls(), fragment=_fragment,
       noise=st.sampled_from(["", "\t", "\n", "A", ":", "@", "_", "-", " ", "[", "%41"]),
       at=st.integers(0, 30))
def test_hostname_is_urlsplits_or_none(parts: tuple[str, str, str], fragment: str, noise: str,
                                       at: int) -> None:
    # what the downloader's slot key reads (urlparse's hostname), for the urls it reads
    url = "".join(parts) + (f"#{fragment}" if fragment else "")
    url = url[:at] + noise + url[at:]
    host = hostname(url)
    assert host is None or host == urlsplit(url).hostname


def test_hostname_reads_the_usual_urls_and_leaves_the_others() -> None:
    assert hostname("http://www.example.com/a?b#c") == "www.example.com"
    assert hostname("https://a-b_c.example.com") == "a-b_c.example.com"
    for url in ("http://Example.com/", "http://example.com:8080/", "http://u@example.com/",
                "http://[::1]/", "ftp://example.com/", "http://exa\tmple.com/"):
        assert hostname(url) is None


# -- session ids (issue 16) -----------------------------------------------------------------

SESSION_NAMES = ["jsessionid", "PHPSESSID", "sid", "sessionid"]


@pytest.mark.parametrize(
    "url, expected",
    [("http://a.com/x;jsessionid=AB12?id=3&sid=99", "http://a.com/x?id=3"),
     ("http://a.com/p1.html?sid=abc", "http://a.com/p1.html"),
     ("http://a.com/p?a=1&phpsessid=x&b=2#top", "http://a.com/p?a=1&b=2#top"),
     ("http://a.com/p?SessionID=1&sid=", "http://a.com/p"),
     ("http://a.com/p?sidebar=1&osid=2", "http://a.com/p?sidebar=1&osid=2"),
     ("http://a.com/sid=1/page.html", "http://a.com/sid=1/page.html"),
     ("http://a.com/p?a=1", "http://a.com/p?a=1")],
)
def test_strip_session_ids(url: str, expected: str) -> None:
    assert strip_session_ids(url, session_id_pattern(SESSION_NAMES)) == expected


def test_no_session_names_strip_nothing() -> None:
    assert session_id_pattern([]) is None
    assert strip_session_ids("http://a.com/?sid=1", None) == "http://a.com/?sid=1"


DEFAULT_SESSION_PARAMS = defaults.TIANWANG_SESSION_PARAMS
ID32 = "0123456789abcdef0123456789abcdef"


@pytest.mark.parametrize(
    "url, expected",
    [
        # osCommerce, vBulletin (32 hex only), SESSID, utm_*, classic ASP's ASPSESSIONID<x>
        (f"http://a.com/p.php?osCsid={ID32}&id=3", "http://a.com/p.php?id=3"),
        (f"http://a.com/f.php?s={ID32}&t=9", "http://a.com/f.php?t=9"),
        ("http://a.com/search.php?s=shoes", "http://a.com/search.php?s=shoes"),
        (f"http://a.com/search.php?s={ID32[:-1]}x", f"http://a.com/search.php?s={ID32[:-1]}x"),
        ("http://a.com/p?SESSID=k2c9a7fj3l", "http://a.com/p"),
        ("http://a.com/p?utm_source=x&utm_medium=y&utm_campaign=z&id=1", "http://a.com/p?id=1"),
        ("http://a.com/p?ASPSESSIONIDAQBSDSRT=EOHBLBDDPFCLHKPGGKLILNAM", "http://a.com/p"),
        # sid: an id (16 letters or digits and more), not an article number or a short value
        (f"http://a.com/p?sid={ID32[:16]}", "http://a.com/p"),
        ("http://a.com/article.pl?sid=06/12/23/1747235",
         "http://a.com/article.pl?sid=06/12/23/1747235"),
        ("http://a.com/list?sid=12", "http://a.com/list?sid=12"),
        # path-style ids
        ("http://a.com/(S(lit3py55t21z5v55vlm25s55))/default.aspx",
         "http://a.com/default.aspx"),
        ("http://a.com/(A(BCD-_x)S(lit3py55t21z5v55vlm25s55)F(f))/a/b.aspx?x=1",
         "http://a.com/a/b.aspx?x=1"),
        ("http://a.com/(lit3py55t21z5v55vlm25s55)/d.aspx", "http://a.com/d.aspx"),
        ("http://a.com/app(1)/(x)/page.html", "http://a.com/app(1)/(x)/page.html"),
        (f"http://a.com/sid/{ID32}/p.html", "http://a.com/p.html"),
        (f"http://a.com/sid/{ID32}/", "http://a.com/"),
        (f"http://a.com/shop/osCsid/{ID32}", "http://a.com/shop"),
        ("http://a.com/sid/about.html", "http://a.com/sid/about.html"),
        ("http://a.com/sid/about/index.html", "http://a.com/sid/about/index.html"),
        (f"http://sid/{ID32}/x", f"http://sid/{ID32}/x"),  # a host is no path
        (f"http://a.com/x;jsessionid={ID32}.node1?id=3", "http://a.com/x?id=3"),
        ("http://a.com/p?a=1#s=" + ID32, "http://a.com/p?a=1#s=" + ID32),
    ],
)
def test_the_default_session_ids_and_what_they_leave_alone(url: str, expected: str) -> None:
    assert strip_session_ids(url, session_id_pattern(DEFAULT_SESSION_PARAMS)) == expected


@pytest.mark.parametrize("entry", ["s=([", "=x", "a b", "utm_*=x", "s="])
def test_a_bad_session_entry_is_refused(entry: str) -> None:
    with pytest.raises(ValueError):
        session_id_pattern([entry])


@given(scheme=st.sampled_from(["http", "https"]),
       host=st.from_regex(r"[a-z0-9.\-]{1,30}(:[0-9]{1,6})?", fullmatch=True),
       path=st.text(alphabet="aZ09-._~:/@!$&'()*+,;=%?#", max_size=16))
def test_a_url_already_canonical_is_its_own_canonical_form(scheme: str, host: str,
                                                          path: str) -> None:
    url = f"{scheme}://{host}/{path}"
    if already_canonical(url):
        assert canonicalize_url(url) == url


@given(path=st.text(alphabet="aZ09-._~/", max_size=8),
       pairs=st.lists(st.tuples(st.text(alphabet="aAb.~-_z9", max_size=3),
                                st.text(alphabet="aAb.~-_z9%+= ", max_size=3)),
                      min_size=1, max_size=4),
       sort=st.booleans())
def test_a_url_with_a_query_already_canonical_is_its_own_canonical_form(
    path: str, pairs: list[tuple[str, str]], sort: bool
) -> None:
    """w3lib sorts a query's pairs (and writes a key with no "=" as "key="): a query of
    unreserved characters in that order is left as it is, and only such a query is said
    canonical; in any other order it is not."""
    query = "&".join(f"{key}={value}" for key, value in (sorted(pairs) if sort else pairs))
    url = f"http://a.example.com/{path}?{query}"
    if already_canonical(url):
        assert canonicalize_url(url) == url
    simple = all(re.fullmatch(r"[A-Za-z0-9._~-]+", key) and re.fullmatch(r"[A-Za-z0-9._~-]*",
                 value) for key, value in pairs)
    if simple and sort and "/." not in url:  # the fast path takes it
        assert already_canonical(url)


def _extension_by_urlsplit(url: str) -> str:
    name = urlsplit(url).path.rsplit("/", 1)[-1]
    return name[name.rfind("."):].lower() if "." in name else ""


@given(host=st.from_regex(r"[a-z0-9.]{1,12}(:[0-9]{1,4})?", fullmatch=True),
       path=st.text(alphabet="aZ.9/=&", max_size=12),
       tail=st.sampled_from(["", "?x=1.png", "#a.b", "?q#f.gif"]))
def test_path_extension_is_urlsplits(host: str, path: str, tail: str) -> None:
    for url in (f"http://{host}/{path}{tail}", f"http://{host}{tail}"):
        assert path_extension(url) == _extension_by_urlsplit(url), url


@pytest.mark.parametrize("url, extension", [
    ("http://a.com", ""), ("http://a.com/", ""), ("http://a.com/x.JPG", ".jpg"),
    ("http://a.com/x.tar.gz?y=1.2", ".gz"), ("http://a.com/a.b/c", ""),
    ("http://a.com?x=/y.png", ""), ("http://a.com/x#y.png", ""),
])
def test_path_extension_examples(url: str, extension: str) -> None:
    assert path_extension(url) == extension
