"""Which record of a body survives global dedup, and where the others' urls point.

A group is every entry spilled for one body MD5: records (md5, url, file, offset, length,
date, crc) and input mirror lines (md5, duplicate url, kept url). The outcome is a rule of the
group alone, so it does not depend on how the input was split into trees, files or workers:

- Two records of one url (overlapping crawls) are one page: the later date is kept, then the
  larger crc32 of the record bytes; the other is dropped without a mirror line.
- Among the urls that have a record, the shortest survives, then the first in code point
  order: seed 004's two kinds of duplicate, `/` beside `/default.htm` and a query string
  that does not change the page, both keep the plain url.
- Every other url of the group (records and mirror lines, either side) becomes a line
  (duplicate, survivor) of the mirror table.
- A group with mirror lines and no record (a table names a kept url no input holds) keeps
  its lines as they were.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from email.utils import mktime_tz, parsedate_tz

RECORD_FIELDS = 7  # md5, url, file index, offset, length, date, crc
MIRROR_FIELDS = 3  # md5, duplicate url, kept url


@dataclass(slots=True)
class Outcome:
    survivor: tuple | None  # the record entry kept; None when no input holds one
    lines: list[tuple[str, str]] = field(default_factory=list)  # (duplicate, kept), sorted
    same_url: int = 0  # records dropped as another record of the same url
    duplicates: int = 0  # records dropped for another url's


def shortest(urls: Iterable[str]) -> str:
    return min(urls, key=lambda url: (len(url), url))


def decide(group: list[tuple]) -> Outcome:
    records = [entry for entry in group if len(entry) == RECORD_FIELDS]
    mirrors = [entry for entry in group if len(entry) == MIRROR_FIELDS]
    if not records:
        return Outcome(None, sorted({(duplicate, kept) for _md5, duplicate, kept in mirrors}))
    latest: dict[str, tuple] = {}
    for record in records:
        url = record[1]
        if url not in latest or newer(record, latest[url]):
            latest[url] = record
    survivor = shortest(latest)
    urls = set(latest)
    for _md5, duplicate, kept in mirrors:
        urls.update((duplicate, kept))
    urls.discard(survivor)
    lines = [(url, survivor) for url in sorted(urls)]
    return Outcome(latest[survivor], lines, len(records) - len(latest), len(latest) - 1)


def newer(record: tuple, other: tuple) -> bool:
    """Of two records of one url and body, whether record is the one to keep."""
    return (epoch(record[5]), record[6]) > (epoch(other[5]), other[6])


def epoch(date: str) -> float:
    """An RFC 1123 date as seconds; a missing or unreadable date is older than any."""
    parsed = parsedate_tz(date) if date else None
    return float("-inf") if parsed is None else float(mktime_tz(parsed))
