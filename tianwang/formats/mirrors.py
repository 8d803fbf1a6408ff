"""The mirror table: `<data dir>/mirrors.tsv`, one line per duplicate page.

    <md5 hex>\\t<duplicate url>\\t<kept url>\\n

The kept url is the one whose record is stored; the duplicate's body had the same MD5 and was
not stored again (docs/design.md section 7). Mirror degree of a stored page = 1 + the lines naming
it as kept url.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tianwang.formats.lines import LineLog, iter_lines

MIRRORS_FILE = "mirrors.tsv"


@dataclass(frozen=True, slots=True)
class Mirror:
    md5: str
    duplicate: str
    kept: str


def mirrors_path(data_dir: str | os.PathLike[str]) -> Path:
    return Path(data_dir) / MIRRORS_FILE


def iter_mirrors(data_dir: str | os.PathLike[str]) -> Iterator[Mirror]:
    """Every complete line of the tree's mirror table (none if it has no table)."""
    for fields in iter_lines(mirrors_path(data_dir)):
        if len(fields) == 3:
            yield Mirror(*fields)


def mirror_degrees(data_dir: str | os.PathLike[str]) -> Counter[str]:
    """Kept url -> number of urls sharing its body (itself included), for mirrored pages only."""
    degrees: Counter[str] = Counter()
    for mirror in iter_mirrors(data_dir):
        degrees[mirror.kept] += 1
    for kept in degrees:
        degrees[kept] += 1
    return degrees


class MirrorTable:
    """Appends (md5, duplicate url, kept url) lines to a tree's mirror table."""

    def __init__(self, data_dir: str | os.PathLike[str]) -> None:
        self._log = LineLog(mirrors_path(data_dir))

    def add(self, md5: str, duplicate: str, kept: str) -> None:
        self._log.append((md5, duplicate, kept))

    def close(self) -> None:
        self._log.close()

    def __enter__(self) -> MirrorTable:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
