"""A request sent back to the frontier to wait for its host, and taken in again.

A downloader middleware whose request must wait (its host's robots.txt to come, a
Retry-After) returns a copy of it, marked SENT_BACK: the frontier keeps it until the host is
ready, instead of it holding one of the crawl's CONCURRENT_REQUESTS slots. The copy must pass
the frontier's filter again, so it has dont_filter set, and keeps its own in DONT_FILTER;
the frontier gives that back as it queues the request again, or a redirect made from it
would inherit dont_filter and queue its target past the dedup (after a node's death, the
target stored twice).
"""

from __future__ import annotations

from scrapy import Request

from tianwang import meta


def send_back(request: Request) -> Request:
    """The copy of request a middleware returns to send it back to wait."""
    again = request.replace(dont_filter=True)  # the frontier's filter saw it already
    again.meta[meta.SENT_BACK] = True
    again.meta.setdefault(meta.DONT_FILTER, request.dont_filter)
    return again


def restore_dont_filter(request: Request) -> None:
    """A request sent back, queued again: its own dont_filter back."""
    request.dont_filter = request.meta.pop(meta.DONT_FILTER, request.dont_filter)
