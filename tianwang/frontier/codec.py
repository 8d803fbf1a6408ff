"""Requests to compact bytes and back, for the frontier's log under JOBDIR.

Only the fields that differ from a plain ``Request``'s defaults are kept, as a dict of
plain values dumped with marshal (fast and compact); a request whose meta holds objects
marshal cannot write falls back to pickle of that dict (what Scrapy's disk queues use).
Callbacks are stored by the name of the spider method, as ``Request.to_dict`` does.
Request subclasses go through Scrapy's own ``to_dict``/``request_from_dict``.
"""

from __future__ import annotations

import marshal
import pickle
from typing import Any

from scrapy import Request, Spider
from scrapy.utils.request import request_from_dict

_MARSHAL, _PICKLE = b"m", b"p"


class UnreadableRequest(ValueError):
    """Stored bytes that make no request: damaged on disk, or written by a spider whose
    callbacks have since changed name."""


def encode(request: Request, spider: Spider) -> bytes:
    """The request as bytes; ValueError if it cannot be (a callback not on the spider)."""
    if type(request) is not Request:
        return _dump(request.to_dict(spider=spider))
    fields: dict[str, Any] = {"url": request.url}
    if request.callback is not None:
        fields["callback"] = _method_name(request.callback, spider)
    if request.errback is not None:
        fields["errback"] = _method_name(request.errback, spider)
    if request.headers:
        fields["headers"] = dict(request.headers)
    if request.meta:
        fields["meta"] = request.meta
    # Spelled out rather than a loop over names: this runs for every request pushed.
    if request.method != "GET":
        fields["method"] = request.method
    if request.body:
        fields["body"] = request.body
    if request.cookies:
        fields["cookies"] = request.cookies
    if request.encoding != "utf-8":
        fields["encoding"] = request.encoding
    if request.priority:
        fields["priority"] = request.priority
    if request.dont_filter:
        fields["dont_filter"] = True
    if request.flags:
        fields["flags"] = request.flags
    if request.cb_kwargs:
        fields["cb_kwargs"] = request.cb_kwargs
    return _dump(fields)


def decode(blob: bytes, spider: Spider) -> Request:
    """The request encode() wrote, with its callbacks bound to this spider again;
    UnreadableRequest if the bytes make none."""
    try:
        return _decode(blob, spider)
    except Exception as error:  # damaged bytes make marshal, pickle or Request raise anything
        raise UnreadableRequest(f"{type(error).__name__}: {error}") from error


def _decode(blob: bytes, spider: Spider) -> Request:
    fields = marshal.loads(blob[1:]) if blob[:1] == _MARSHAL else pickle.loads(blob[1:])  # noqa: S301
    if "_class" in fields:
        return request_from_dict(fields, spider=spider)
    callback, errback = fields.pop("callback", None), fields.pop("errback", None)
    meta = fields.setdefault("meta", {})
    # The url was made safe when the request was first built, and safe_url_string (most of
    # what building a Request costs) would return it unchanged: skip it for this build.
    was_verbatim = "verbatim_url" in meta
    meta.setdefault("verbatim_url", True)
    request = Request(
        callback=getattr(spider, callback) if callback else None,
        errback=getattr(spider, errback) if errback else None,
        **fields,
    )
    if not was_verbatim:
        del request.meta["verbatim_url"]
    return request


def _dump(fields: dict[str, Any]) -> bytes:
    try:
        return _MARSHAL + marshal.dumps(fields)
    except ValueError:
        pass
    try:
        return _PICKLE + pickle.dumps(fields, protocol=5)
    except (pickle.PicklingError, TypeError, AttributeError) as error:
        raise ValueError(f"request cannot be serialized: {error}") from error


def _method_name(func: Any, spider: Spider) -> str:
    """The name under which the spider holds this bound method (as Request.to_dict)."""
    name = getattr(func, "__name__", None)
    if getattr(func, "__self__", None) is spider and name and getattr(spider, name) == func:
        return name
    raise ValueError(f"callback {func!r} is not a method of the spider {spider.name!r}")
