"""The online dedup's index of a record tree: body MD5 -> kept url (issue 5, docs/design.md 7).

`<data dir>/md5.sqlite` indexes the bodies stored in that tree, so it lives with the tree and
not in JOBDIR: a second crawl into the same tree (resumed or not) never stores a body the tree
already holds, and a JOBDIR of another tree cannot mislead it. sqlite3 (stdlib, embedded,
no server) was picked by measurement (bench/dedup_store.py, bench/RESULTS.md): its memory
does not grow with the pages, where an in-memory map costs 140-220 bytes per page.

The record tree and mirrors.tsv are the truth; the index is a cache of them that catches up on
open. It remembers, per page.dat and for mirrors.tsv, the offset up to which it has read
them; on open it reads whatever lies past those offsets (records a crash stored but never
indexed, mirror lines never committed) and indexes it. So commits can be batched, a kill -9
at any point loses nothing, and a lost or stale index (a file shorter than its offset, or
gone) is rebuilt from the tree.

It also remembers each page.dat's mtime when it last indexed it and the damaged bytes it
had. A file changed since (a crash, or damage done in place) is read through once on open;
if it holds damage the index did not know, the index is rebuilt from the records, so a body
whose record was lost is no longer "stored" and its page is fetched and stored again. A
rebuild also drops the mirror lines whose kept url no longer has a record. The crawl's own
path costs nothing more: the mtime comes from the stat it already makes per stored page.
Pure logic: no Scrapy import.
"""

from __future__ import annotations

import hashlib
import logging
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path

from tianwang.formats.http import parse_http_head
from tianwang.formats.lines import encode_line, prune_lines
from tianwang.formats.mirrors import MIRRORS_FILE, MirrorTable
from tianwang.formats.record import Record, RecordError, check_file, iter_records
from tianwang.formats.store import record_files

logger = logging.getLogger(__name__)

INDEX_FILE = "md5.sqlite"
_SCHEMA = """
CREATE TABLE IF NOT EXISTS bodies (md5 BLOB PRIMARY KEY, url TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS mirrored (url TEXT PRIMARY KEY) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS files (name TEXT PRIMARY KEY, indexed INTEGER NOT NULL);
"""
# Added to `files` after its first release: an older index gets them, and reads every
# file once (an unknown mtime never matches).
_FILE_COLUMNS = (
    ("mtime", "INTEGER NOT NULL DEFAULT -1"),
    ("damaged", "INTEGER NOT NULL DEFAULT 0"),
)


class MD5Store:
    """MD5 of every body stored in data_dir's tree, with the url that was kept for it."""

    def __init__(self, data_dir: str | os.PathLike[str], commit_every: int = 1000,
                 expect_changes: bool = False) -> None:
        """`expect_changes`: the caller changed the files (records repair), so a rebuild is
        no news to log as a warning."""
        if commit_every < 1:
            raise ValueError(f"commit_every must be at least 1, not {commit_every}")
        self.data_dir = Path(data_dir)
        self.commit_every = commit_every
        self.expect_changes = expect_changes
        self.caught_up = 0  # records and mirror lines indexed on open (what a crash left)
        self.data_dir.mkdir(parents=True, exist_ok=True)
        path = self.data_dir / INDEX_FILE
        try:
            self._db, self._ends, self._marks = _open(path)
        except sqlite3.OperationalError as exc:  # cannot be opened or written: not damage
            raise OSError(None, str(exc), str(path)) from None
        except sqlite3.DatabaseError as exc:  # not a database (any more): rebuild it
            aside = path.with_name(f"{INDEX_FILE}.bad")
            logger.warning("%s: %s (moved to %s); rebuilding it from the records",
                           path, exc, aside.name)
            path.replace(aside)
            for suffix in ("-wal", "-shm"):
                path.with_name(INDEX_FILE + suffix).unlink(missing_ok=True)
            self._db, self._ends, self._marks = _open(path)
        self._dirty: set[str] = set()  # files whose end is written at the next commit
        self._uncommitted = 0
        self._db.execute("BEGIN")
        self._mirrors = MirrorTable(self.data_dir)  # repairs a cut last line first
        self._catch_up()

    # -- queries and updates ------------------------------------------------------------

    def kept(self, md5: bytes) -> str | None:
        """The url whose record holds this body, or None if the tree has no such body."""
        row = self._db.execute("SELECT url FROM bodies WHERE md5 = ?", (md5,)).fetchone()
        return row[0] if row else None

    def indexed_end(self, name: str) -> int:
        """How far a file of the tree (`data_k/host/page.dat`) has been indexed."""
        return self._ends.get(name, 0)

    def add(self, md5: bytes, url: str, name: str, end: int, mtime: int = -1) -> None:
        """A record of body md5 for url was stored in file `name`, which now ends at `end`
        and was last modified at `mtime` (ns; -1 if unknown: the file is read on open)."""
        self._db.execute("INSERT OR IGNORE INTO bodies VALUES (?, ?)", (md5, url))
        self._set_end(name, end)
        self._marks[name] = (mtime, self._marks.get(name, (-1, 0))[1])
        self._count()

    def is_mirrored(self, url: str) -> bool:
        """Whether the mirror table already has a line for this duplicate url."""
        row = self._db.execute("SELECT 1 FROM mirrored WHERE url = ?", (url,)).fetchone()
        return row is not None

    def add_mirror(self, md5: bytes, duplicate: str, kept: str) -> bool:
        """Append (md5, duplicate, kept) to mirrors.tsv once per duplicate url; True if new."""
        if self.is_mirrored(duplicate):
            return False
        self._mirrors.add(md5.hex(), duplicate, kept)
        end = self.indexed_end(MIRRORS_FILE) + len(encode_line((md5.hex(), duplicate, kept)))
        self._db.execute("INSERT OR IGNORE INTO mirrored VALUES (?)", (duplicate,))
        self._set_end(MIRRORS_FILE, end)
        self._count()
        return True

    def commit(self) -> None:
        # The ends go in the same transaction as the bodies they account for.
        self._db.executemany(
            "INSERT OR REPLACE INTO files (name, indexed, mtime, damaged) VALUES (?, ?, ?, ?)",
            [(name, self._ends[name], *self._marks.get(name, (-1, 0))) for name in self._dirty])
        self._dirty.clear()
        self._db.execute("COMMIT")
        self._db.execute("BEGIN")
        self._uncommitted = 0

    def close(self) -> None:
        if self._mirrors is None:
            return
        self.commit()
        self._db.execute("COMMIT")  # the transaction commit() began
        self._db.close()
        self._mirrors.close()
        self._mirrors = None  # type: ignore[assignment]

    def __enter__(self) -> MD5Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _set_end(self, name: str, end: int) -> None:
        self._ends[name] = end
        self._dirty.add(name)

    def _count(self) -> None:
        self._uncommitted += 1
        if self._uncommitted >= self.commit_every:
            self.commit()

    # -- catching up with the files -----------------------------------------------------

    def _catch_up(self) -> None:
        files = {path.relative_to(self.data_dir).as_posix(): path
                 for path in record_files(self.data_dir)}
        mirrors = self.data_dir / MIRRORS_FILE
        stale = [name for name, end in self._ends.items()
                 if _size(files.get(name, mirrors if name == MIRRORS_FILE else None)) < end]
        stale += [name for name, path in files.items() if self._newly_damaged(name, path)]
        if stale:
            log = logger.debug if self.expect_changes else logger.warning
            log("%s: %s shorter than indexed or newly damaged (changed outside the crawl): "
                "rebuilding the md5 index from the records",
                self.data_dir, ", ".join(sorted(set(stale))[:5]))
            self._db.execute("DELETE FROM bodies")
            self._db.execute("DELETE FROM mirrored")
            self._db.execute("DELETE FROM files")
            self._ends.clear()
            self._marks.clear()
            self._dirty.clear()
        for name, path in files.items():
            if path.stat().st_size > self.indexed_end(name):
                self._index_records(name, path)
        if stale:
            self._prune_mirrors(mirrors)
        if mirrors.exists() and mirrors.stat().st_size > self.indexed_end(MIRRORS_FILE):
            self._index_mirrors(mirrors)
        self.commit()
        if self.caught_up:
            logger.info("%s: indexed %d records and mirror lines not yet in %s",
                        self.data_dir, self.caught_up, INDEX_FILE)

    def _newly_damaged(self, name: str, path: Path) -> bool:
        """Whether a file indexed before holds, in its indexed part, damage the index did
        not know of: read only when the file changed since the index last saw it."""
        if name not in self._ends:
            return False
        mtime, damaged = self._marks.get(name, (-1, 0))
        if path.stat().st_mtime_ns == mtime:
            return False
        end = self._ends[name]
        valid, spans = check_file(path)
        if valid < end:  # an indexed record now at the damaged tail (the writer cuts it)
            return True
        found = sum(min(span.offset + (span.length or 0), end) - span.offset
                    for span in spans if span.offset < end)
        return found != damaged

    def _index_records(self, name: str, path: Path) -> None:
        mtime = path.stat().st_mtime_ns
        damaged = self._marks.get(name, (-1, 0))[1]
        for record, end, lost in _records_from(path, self.indexed_end(name)):
            self._set_end(name, end)
            damaged += lost
            if record is None:
                continue
            try:  # the body hashed where it lies in DATA, not copied out
                body = memoryview(record.data)[parse_http_head(record.data)[1] :]
            except ValueError:  # DATA that is not an HTTP response: no body to dedup
                continue
            self._db.execute("INSERT OR IGNORE INTO bodies VALUES (?, ?)",
                             (hashlib.md5(body).digest(), record.url))
            self.caught_up += 1
        self._marks[name] = (mtime, damaged)
        self._dirty.add(name)

    def _prune_mirrors(self, mirrors: Path) -> None:
        """After a rebuild: a mirror line whose kept url has no record any more is dropped
        (kept in mirrors.tsv.cut-pruned), so its duplicate can be stored in its place."""
        kept = {url for (url,) in self._db.execute("SELECT url FROM bodies")}
        dropped = prune_lines(mirrors, lambda fields: len(fields) != 3 or fields[2] in kept)
        if dropped:
            # The table was replaced by a new file: append to that one, not the old inode.
            self._mirrors.close()
            self._mirrors = MirrorTable(self.data_dir)
            logger.warning("%s: dropped %d mirror lines whose kept page is no longer stored",
                           mirrors, dropped)

    def _index_mirrors(self, path: Path) -> None:
        end = self.indexed_end(MIRRORS_FILE)
        with open(path, "rb") as file:
            file.seek(end)
            for raw in file:
                if not raw.endswith(b"\n"):
                    break  # cut by a crash; MirrorTable cut it off already
                end += len(raw)
                try:
                    fields = raw[:-1].decode("utf-8").split("\t")
                except UnicodeDecodeError:  # damage: the table writes UTF-8 urls
                    continue
                if len(fields) == 3:
                    self._db.execute("INSERT OR IGNORE INTO mirrored VALUES (?)", (fields[1],))
                    self.caught_up += 1
        self._set_end(MIRRORS_FILE, end)


def _open(
    path: Path,
) -> tuple[sqlite3.Connection, dict[str, int], dict[str, tuple[int, int]]]:
    db = sqlite3.connect(path, isolation_level=None)
    try:
        # No fsync, ever: a killed process loses nothing the OS has, and the index is a cache
        # of the records, which are not fsynced either. With synchronous=NORMAL every WAL
        # checkpoint fsyncs (one per commit once the index outgrows sqlite's cache), and
        # an fsync on a busy disk stalls the whole crawl.
        # A power cut can leave it stale or unreadable: both are detected and rebuilt.
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=OFF")
        db.executescript(_SCHEMA)
        columns = {row[1] for row in db.execute("PRAGMA table_info(files)")}
        for column, kind in _FILE_COLUMNS:
            if column not in columns:
                db.execute(f"ALTER TABLE files ADD COLUMN {column} {kind}")
        rows = db.execute("SELECT name, indexed, mtime, damaged FROM files").fetchall()
        return (db, {name: end for name, end, _m, _d in rows},
                {name: (mtime, damaged) for name, _e, mtime, damaged in rows})
    except sqlite3.DatabaseError:
        db.close()
        raise


def _size(path: Path | None) -> int:
    try:
        return path.stat().st_size if path is not None else -1
    except FileNotFoundError:
        return -1


def _records_from(path: Path, offset: int) -> Iterator[tuple[Record | None, int, int]]:
    """(record, offset it ends at, 0) for the complete records of a file from offset on,
    and (None, end of the span, its length) for a damaged span a good record follows.

    An unfinished tail ends the reading: the storage's repair cuts it off.
    """
    spans: list[RecordError] = []
    with open(path, "rb") as file:
        file.seek(offset)
        for record in iter_records(file, str(path), on_damage=spans.append):
            for span in spans:
                yield None, span.offset + (span.length or 0), span.length or 0
            spans.clear()
            yield record, file.tell(), 0


def agree_indexes(data_dir: str | os.PathLike[str]) -> None:
    """After records were taken out of a tree: bring its md5 index and mirror table back
    in line with the records (opening the index finds the change and rebuilds)."""
    data_dir = Path(data_dir)
    if (data_dir / INDEX_FILE).exists() or (data_dir / MIRRORS_FILE).exists():
        MD5Store(data_dir, expect_changes=True).close()
