"""Visit histories: every visit of every url, in `<data dir>/changes.sqlite`.

No Scrapy import. One row a visit (time from the server's Date header, status, body MD5,
content hash of the page's content blocks, ETag, Last-Modified, whether it saw a change,
whether the page was an entry page at that visit and its share of new links), one row a
url with what the next visit compares against (its last content hash and block links), and
one row a url a sitemap gave a `lastmod` (its latest).

sqlite in WAL mode: a crash loses at most the visits since the last commit (every
COMMIT_EVERY visits and at close), never the file; readers (the refresh spider, the report)
see the last commit while a crawl writes.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from tianwang.errors import StartupError

FILE_NAME = "changes.sqlite"
COMMIT_EVERY = 200

_SCHEMA = """
CREATE TABLE IF NOT EXISTS visits (
    url TEXT NOT NULL, time REAL NOT NULL, status INTEGER NOT NULL, md5 TEXT,
    content_hash TEXT, etag TEXT, last_modified TEXT, changed INTEGER NOT NULL,
    entry INTEGER NOT NULL, new_share REAL
);
CREATE INDEX IF NOT EXISTS visits_url ON visits (url, time);
CREATE TABLE IF NOT EXISTS pages (
    url TEXT PRIMARY KEY, time REAL NOT NULL, md5 TEXT, content_hash TEXT, etag TEXT,
    last_modified TEXT, links TEXT NOT NULL, entry INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS sitemap_lastmod (url TEXT PRIMARY KEY, lastmod REAL NOT NULL);
"""


@dataclass(frozen=True)
class Visit:
    url: str
    time: float  # epoch seconds, the server's clock when it sent a Date header
    status: int
    md5: str | None  # of the body as received (None for a 304: no body came)
    content_hash: str | None  # of the content blocks (tianwang/analysis/blocks.py)
    etag: str | None
    last_modified: str | None
    changed: bool  # the content hash differs from the previous visit's
    entry: bool  # an entry page at this visit (docs/design.md section 4)
    new_share: float | None  # share of its block links not seen at the previous visit


@dataclass(frozen=True)
class PageState:
    """What the last visit of a url left for the next one to compare against."""

    url: str
    time: float
    md5: str | None
    content_hash: str | None
    etag: str | None
    last_modified: str | None
    links: tuple[str, ...]
    entry: bool


class HistoryDamaged(StartupError):
    """The history file is no sqlite database (any more). Not rebuilt, as the MD5 index is:
    the records do not hold what it holds (ETags, content hashes, every visit's time)."""

    def __init__(self, path: Path, error: sqlite3.DatabaseError) -> None:
        super().__init__(f"the visit history {path} is damaged ({error}): restore it, or move "
                         f"it aside to start a new history")


class HistoryStore:
    def __init__(self, data_dir: str | os.PathLike[str], readonly: bool = False) -> None:
        self.path = Path(data_dir) / FILE_NAME
        try:
            self._db = self._open(readonly)
        except sqlite3.OperationalError as error:  # cannot be opened or written: not damage
            raise OSError(None, str(error), str(self.path)) from None
        except sqlite3.DatabaseError as error:
            raise HistoryDamaged(self.path, error) from None
        self._uncommitted = 0

    def _open(self, readonly: bool) -> sqlite3.Connection:
        if readonly:
            db = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True)
            db.execute("SELECT count(*) FROM sqlite_master").fetchone()  # reads the header
            return db
        self.path.parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(self.path)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        db.executescript(_SCHEMA)
        return db

    def page(self, url: str) -> PageState | None:
        row = self._db.execute(
            "SELECT url, time, md5, content_hash, etag, last_modified, links, entry "
            "FROM pages WHERE url = ?", (url,)).fetchone()
        return _state(row) if row else None

    def pages(self) -> Iterator[PageState]:
        rows = self._db.execute(
            "SELECT url, time, md5, content_hash, etag, last_modified, links, entry "
            "FROM pages ORDER BY url")
        for row in rows:
            yield _state(row)

    def add(self, visit: Visit, links: list[str] | None) -> None:
        """Record a visit; links None keeps the url's known links (a 304 brings none)."""
        self._db.execute(
            "INSERT INTO visits VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (visit.url, visit.time, visit.status, visit.md5, visit.content_hash, visit.etag,
             visit.last_modified, int(visit.changed), int(visit.entry), visit.new_share))
        joined = None if links is None else "\t".join(links)
        self._db.execute(
            "INSERT INTO pages VALUES (?, ?, ?, ?, ?, ?, coalesce(?, ''), ?) "
            "ON CONFLICT (url) DO UPDATE SET time = excluded.time, md5 = excluded.md5, "
            "content_hash = excluded.content_hash, etag = excluded.etag, "
            "last_modified = excluded.last_modified, entry = excluded.entry, "
            "links = coalesce(?, pages.links)",
            (visit.url, visit.time, visit.md5, visit.content_hash, visit.etag,
             visit.last_modified, joined, int(visit.entry), joined))
        self._uncommitted += 1
        if self._uncommitted >= COMMIT_EVERY:
            self.commit()

    def set_lastmod(self, url: str, lastmod: float) -> None:
        """A sitemap says url changed at lastmod (epoch seconds); the latest such word is kept."""
        self._db.execute(
            "INSERT INTO sitemap_lastmod VALUES (?, ?) ON CONFLICT (url) DO UPDATE SET "
            "lastmod = max(lastmod, excluded.lastmod)", (url, lastmod))
        self._uncommitted += 1
        if self._uncommitted >= COMMIT_EVERY:
            self.commit()

    def lastmods(self) -> dict[str, float]:
        """url -> the latest time a sitemap said it changed (none for a history without)."""
        try:
            rows = self._db.execute("SELECT url, lastmod FROM sitemap_lastmod").fetchall()
        except sqlite3.OperationalError:  # a history written before sitemaps, read-only
            return {}
        return dict(rows)

    def visits(self, url: str | None = None) -> Iterator[Visit]:
        """Visits of one url, or of all (by url, then time)."""
        query = "SELECT * FROM visits"
        args: tuple[str, ...] = ()
        if url is not None:
            query, args = query + " WHERE url = ?", (url,)
        for row in self._db.execute(query + " ORDER BY url, time, rowid", args):
            yield Visit(row[0], row[1], row[2], row[3], row[4], row[5], row[6], bool(row[7]),
                        bool(row[8]), row[9])

    def commit(self) -> None:
        self._db.commit()
        self._uncommitted = 0

    def close(self) -> None:
        if self._db is not None:
            self._db.commit()
            self._db.close()
            self._db = None  # type: ignore[assignment]

    def __enter__(self) -> HistoryStore:
        return self

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


def _state(row: tuple) -> PageState:
    links = tuple(row[6].split("\t")) if row[6] else ()
    return PageState(row[0], row[1], row[2], row[3], row[4], row[5], links, bool(row[7]))
