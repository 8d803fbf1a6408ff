"""The request schema of a shared crawl: what a request is in Redis, and nothing more.

Anyone who can write a job's keys must not be able to run code on its nodes (pickle and
marshal would let them: scrapy-redis's queues have that flaw, and a malformed marshal chunk
can crash the interpreter). So a request in Redis is data of a fixed shape, msgpack after a
version byte, holding what a fetch needs:

    [url, depth, priority, callback, errback, parent, flags, referer, extra]

- callback and errback by the name of the spider's method (as Request.to_dict), or nil;
- parent (meta tianwang_parent, the link graph's parent) written short: its path when it is
  on the url's own scheme and host, else whole;
- flags: 1 dont_filter, 2 the Referer header is the parent (RefererMiddleware's usual one);
- referer: the Referer header when it is not the parent, else nil;
- extra: the other meta keys the project's spiders and middlewares pass on a request, each of
  a known type (EXTRA below), and the revisit headers of the refresh spider.

The weight is not in it: it is the request's place in its queue (tianwang/order.py).

What is not in the schema is refused at enqueue (SchemaError, saying which key and what the
schema holds): a meta key no component here sets, another method than GET, a body, cookies,
cb_kwargs, a Request subclass. What a downloader middleware sets again on every attempt
(PER_ATTEMPT meta keys, private ``_`` keys, the headers of PER_ATTEMPT_HEADERS) is dropped:
a redirect or a retry carries them from the attempt before. A blob that does not decode, of
another version or shape, raises SchemaError: the scheduler sets it aside.
"""

from __future__ import annotations

from typing import Any

import msgpack
from scrapy import Request, Spider

from tianwang import meta

VERSION = 1
_VERSION_BYTE = bytes([VERSION])
DONT_FILTER, REFERER_IS_PARENT = 1, 2


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _ints(value: Any) -> bool:
    return isinstance(value, (list, tuple)) and all(_is_int(v) for v in value)


def _strs(value: Any) -> bool:
    return isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value)


def _str_int_pair(value: Any) -> bool:
    return (isinstance(value, (list, tuple)) and len(value) == 2 and isinstance(value[0], str)
            and _is_int(value[1]))


def _reasons(value: Any) -> bool:
    return isinstance(value, (list, tuple)) and all(_is_int(v) or isinstance(v, str)
                                                    for v in value)


def _bool(value: Any) -> bool:
    return isinstance(value, bool)


def _text(value: Any) -> bool:
    return isinstance(value, str)


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _optional_text(value: Any) -> bool:
    return value is None or isinstance(value, str)


# The meta keys a request of the shared crawl may carry besides depth and parent, with the
# type each must have; a tuple comes back as a tuple (SITEMAP), a list as a list.
EXTRA = {
    meta.BOOST: _is_int,
    meta.SITEMAP: _str_int_pair,
    meta.LASTMOD: _text,
    meta.SITE: _text,
    meta.BACKOFF_PAUSES: _is_int,
    meta.SENT_BACK: _bool,
    meta.DOWNLOAD_SLOT: _text,
    meta.REDIRECT_URLS: _strs,
    "redirect_reasons": _reasons,
    "redirect_times": _is_int,
    "redirect_ttl": _is_int,
    "retry_times": _is_int,
    "max_retry_times": _is_int,
    "dont_redirect": _bool,
    "dont_retry": _bool,
    "dont_obey_robotstxt": _bool,
    "handle_httpstatus_all": _bool,
    "handle_httpstatus_list": _ints,
    "depth_reset": _bool,
    "is_start_request": _bool,
    "proxy": _optional_text,
    "download_timeout": _number,
    "download_maxsize": _is_int,
}
TUPLES = frozenset({meta.SITEMAP})
FIELDS = frozenset({meta.DEPTH, meta.PARENT})  # meta keys that are fields of their own
# Set again on each attempt, or read once at enqueue: dropped. STORED is the Redis
# scheduler's own mark of a request taken, OUTLINKS the share its push carried, SEED_HOST
# its push's seed flag, QUEUED the place a local frontier held it at (a shared one weighs it
# again as it pushes), LEASE the lease of the node that handed it out, DONT_FILTER a sent-back
# request's own dont_filter (its node gives it back as it keeps the request).
PER_ATTEMPT = frozenset({"download_latency", meta.STORED, meta.OUTLINKS, meta.SEED_HOST,
                         meta.QUEUED, meta.LEASE, meta.ROBOTS_FETCHES, meta.DONT_FILTER})
# Headers the downloader middlewares set on every attempt (a redirect or a retry copies
# them), dropped; and the revisit headers a request may carry.
PER_ATTEMPT_HEADERS = frozenset({b"user-agent", b"accept", b"accept-language",
                                 b"accept-encoding", b"cookie"})
CARRIED_HEADERS = {b"if-none-match": "If-None-Match", b"if-modified-since": "If-Modified-Since"}
_HEADERS = "headers"  # the revisit headers' place in extra


class SchemaError(ValueError):
    """A request the schema cannot carry, or a blob that is no request of it."""


def schema_keys() -> str:
    return ", ".join(["depth", meta.PARENT, *sorted(EXTRA)])


def encode(request: Request, spider: Spider) -> bytes:
    """The request as the schema's bytes; SchemaError for one it cannot carry."""
    if type(request) is not Request:
        raise SchemaError(f"{type(request).__name__} {request.url}: a shared crawl carries "
                          "plain GET Requests only")
    if request.method != "GET" or request.body or request.cookies or request.cb_kwargs:
        raise SchemaError(f"request {request.url}: a shared crawl carries GET requests without "
                          "body, cookies or cb_kwargs")
    if request.encoding != "utf-8" or request.flags:
        raise SchemaError(f"request {request.url}: a shared crawl carries no encoding other "
                          "than utf-8 and no flags")
    extra: dict[str, Any] = {}
    for key, value in request.meta.items():
        if key in FIELDS or key in PER_ATTEMPT or key.startswith("_"):
            continue
        check = EXTRA.get(key)
        if check is None:
            raise SchemaError(
                f"request {request.url}: meta key {key!r} is not in the shared crawl's request "
                f"schema (tianwang/distributed/schema.py), which carries {schema_keys()}")
        if not check(value):
            raise SchemaError(f"request {request.url}: meta key {key!r} = {value!r} is not of "
                              "the type the shared crawl's request schema carries")
        extra[key] = value
    parent = request.meta.get(meta.PARENT)
    if parent is not None and not isinstance(parent, str):
        raise SchemaError(f"request {request.url}: meta {meta.PARENT!r} must be a url")
    depth = request.meta.get(meta.DEPTH, 0)
    if not _is_int(depth):
        raise SchemaError(f"request {request.url}: meta 'depth' must be an int")
    flags = DONT_FILTER if request.dont_filter else 0
    referer, headers = _headers(request)
    if referer is not None and referer == parent:
        flags |= REFERER_IS_PARENT
        referer = None
    if headers:
        extra[_HEADERS] = headers
    fields = [request.url, depth, request.priority, _method(request.callback, spider),
              _method(request.errback, spider), _short_parent(parent, request.url), flags,
              referer, extra or None]
    return _VERSION_BYTE + msgpack.packb(fields, use_bin_type=True)


def decode(blob: bytes, spider: Spider) -> Request:
    """The request encode() wrote, its callbacks bound to this spider; SchemaError for a blob
    that is none (another version, another shape, a type out of place, no such method)."""
    if blob[:1] != _VERSION_BYTE:
        raise SchemaError(f"not a request of schema version {VERSION}")
    try:
        fields = msgpack.unpackb(blob[1:], raw=False, use_list=True, strict_map_key=True)
        url, depth, priority, callback, errback, parent, flags, referer, extra = fields
    except (ValueError, TypeError, msgpack.UnpackException, msgpack.ExtraData) as error:
        raise SchemaError(f"no request of the schema ({error})") from None
    if not (isinstance(url, str) and _is_int(depth) and _is_int(priority) and _is_int(flags)
            and _optional_text(callback) and _optional_text(errback)
            and _optional_text(parent) and _optional_text(referer)
            and (extra is None or isinstance(extra, dict))):
        raise SchemaError("a request's fields are not of the schema's types")
    request_meta: dict[str, Any] = {meta.DEPTH: depth}
    headers: dict[str, str] = {}
    for key, value in (extra or {}).items():
        if key == _HEADERS and isinstance(value, dict) and all(
                name in CARRIED_HEADERS.values() and isinstance(text, str)
                for name, text in value.items()):
            headers.update(value)
            continue
        check = EXTRA.get(key)
        if check is None or not check(value):
            raise SchemaError(f"meta key {key!r} is not in the schema, or not of its type")
        request_meta[key] = tuple(value) if key in TUPLES else value
    if parent is not None:
        request_meta[meta.PARENT] = _long_parent(parent, url)
    if flags & REFERER_IS_PARENT:
        referer = request_meta.get(meta.PARENT)
    if referer is not None:
        headers["Referer"] = referer
    # The url was made safe when the request was first built: safe_url_string (most of what
    # building a Request costs) would return it unchanged, so it is skipped for this build.
    request_meta["verbatim_url"] = True
    request = Request(url, callback=_bound(spider, callback), errback=_bound(spider, errback),
                      priority=priority, dont_filter=bool(flags & DONT_FILTER), meta=request_meta,
                      headers=headers or None)
    del request.meta["verbatim_url"]
    return request


def _headers(request: Request) -> tuple[str | None, dict[str, str]]:
    """(the Referer, the revisit headers); SchemaError for a header the schema has not."""
    referer, carried = None, {}
    if not request.headers:
        return referer, carried
    for name, values in dict.items(request.headers):  # (Headers.items() copies each list)
        lower = name.lower()
        if lower in PER_ATTEMPT_HEADERS:
            continue
        value = values[-1].decode("latin-1") if values else ""
        if lower == b"referer":
            referer = value
        elif lower in CARRIED_HEADERS:
            carried[CARRIED_HEADERS[lower]] = value
        else:
            raise SchemaError(f"request {request.url}: header {name.decode('latin-1')!r} is not "
                              "in the shared crawl's request schema (it carries Referer, "
                              "If-None-Match and If-Modified-Since)")
    return referer, carried


def _method(func: Any, spider: Spider) -> str | None:
    """The name under which the spider holds this bound method (as Request.to_dict)."""
    if func is None:
        return None
    name = getattr(func, "__name__", None)
    if getattr(func, "__self__", None) is spider and name and getattr(spider, name) == func:
        return name
    raise SchemaError(f"callback {func!r} is not a method of the spider {spider.name!r}")


def _bound(spider: Spider, name: str | None) -> Any:
    if name is None:
        return None
    method = getattr(spider, name, None)
    if not callable(method) or name.startswith("_"):
        raise SchemaError(f"the spider {spider.name!r} has no method {name!r}")
    return method


def _origin(url: str) -> str:
    """scheme://host[:port] of an absolute url (urlsplit costs more than a request's
    whole encoding)."""
    start = url.find("//") + 2
    end = url.find("/", start)
    for mark in "?#":
        cut = url.find(mark, start)
        if cut >= 0 and (end < 0 or cut < end):
            end = cut
    return url if end < 0 else url[:end]


def _short_parent(parent: str | None, url: str) -> str | None:
    """The parent's path when it is on the url's origin (it then starts with "/")."""
    if parent is None:
        return None
    origin = _origin(url)
    if parent.startswith(origin + "/"):
        return parent[len(origin):]
    return parent


def _long_parent(parent: str, url: str) -> str:
    return _origin(url) + parent if parent.startswith("/") else parent
