"""What the test web's server sends for a url, and the small pieces every part builds it with.

Its own module so that the parts the model plugs in (junk, changing pages, mirrors, https
hosts, the graph web) import these without importing the model that imports them.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from tianwang.testweb import render
from tianwang.testweb.sitebuilder import Entry, Site


@dataclass(frozen=True, slots=True)
class Response:
    """What the server sends for a url: status, headers (Content-Type first) and body."""

    status: int
    headers: list[tuple[str, str]]
    body: bytes

    def header(self, name: str) -> str | None:
        name = name.lower()
        return next((value for key, value in self.headers if key.lower() == name), None)


def entry_response(site: Site, entry: Entry) -> Response:
    headers = [("Content-Type", render.content_type(entry))]
    if entry.location is not None:
        headers.append(("Location", entry.location))
    return Response(entry.status, headers, render.body(site, entry))


def status_response(status: int, path: str) -> Response:
    headers = [("Content-Type", "text/html; charset=utf-8")]
    return Response(status, headers, render.status_page(status, path))


K = TypeVar("K")
V = TypeVar("V")


class LRU(Generic[K, V]):
    """A small least-recently-used map: hosts and bodies are cached, not kept forever."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._items: OrderedDict[K, V] = OrderedDict()

    def get(self, key: K) -> V | None:
        value = self._items.get(key)
        if value is not None:
            self._items.move_to_end(key)
        return value

    def put(self, key: K, value: V) -> V:
        self._items[key] = value
        self._items.move_to_end(key)
        if len(self._items) > self.capacity:
            self._items.popitem(last=False)
        return value

    def __len__(self) -> int:
        return len(self._items)


def truth_record(site: Site, entry: Entry, bodies: bool = True) -> dict[str, Any]:
    record = {
        "url": entry.url,
        "host": site.host,
        "status": entry.status,
        "content_type": entry.mime,
        "links": list(dict.fromkeys(entry.links)),
        "kind": entry.kind,
        "location": entry.location,
        "charset": entry.charset,
        "robots_allowed": entry.robots_allowed,
        "distance": entry.distance,
    }
    if bodies:
        body = render.body(site, entry)
        record["bytes"] = len(body)
        record["md5"] = hashlib.md5(body).hexdigest()
    return record
