"""The wider site lists of D2 and D3, read and written (a site list with more tab columns).

Pure python. D0 and D1 are site lists, `<site>\\t<pages>` (tianwang/collection/sitelist.py);
the later steps add columns after those two, so every file from D0 to D4 starts the same way:

    D2 (the validate spider)  <site>\\t<pages>\\t<status>\\t<md5>\\t<final_url>
    D3 (hosts dealias)        <site>\\t<pages>\\t<status>\\t<md5>\\t<final_url>\\t<aliases>
    D4 (hosts filter)         <site>\\t<pages>             (a plain site list: the crawl's seeds)

status is the homepage's HTTP status (200), md5 the hex MD5 of its body, final_url the url
that answered after redirects, aliases the number of other names D3 folded into the site.
Removals files keep sitelist's shape, `<site>\\t<pages>\\t<reason>`; the aliases file of D3
is `<alias site>\\t<pages>\\t<kept site>`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tianwang.collection.sitelist import SiteListError, valid_site_and_pages
from tianwang.progress import Progress

D2_COLUMNS = ("site", "pages", "status", "md5", "final_url")
D3_COLUMNS = (*D2_COLUMNS, "aliases")
_MD5 = re.compile(r"[0-9a-f]{32}")
PROGRESS_LINES = 65536  # lines between two progress calls


class TableError(SiteListError):
    """A file that cannot be read as the table asked for; the message names file and line."""


@dataclass(frozen=True, slots=True)
class Checked:
    """One reachable site: its homepage's status, body MD5 and final url (a D2 or D3 row)."""

    site: str
    pages: int
    status: int
    md5: str
    final_url: str
    aliases: int = 0

    def d2_line(self) -> str:
        return f"{self.site}\t{self.pages}\t{self.status}\t{self.md5}\t{self.final_url}\n"

    def d3_line(self) -> str:
        return self.d2_line()[:-1] + f"\t{self.aliases}\n"


def read_rows(path: str | Path, columns: tuple[str, ...],
              progress: Progress | None = None) -> Iterator[list[str]]:
    """The lines of a table of at least these columns, split on tabs; site and pages checked.

    A missing or unreadable file, or a line without the columns, raises TableError with the
    file and the line number. progress("read", characters read, file size) is called every
    PROGRESS_LINES lines and at the end (characters: bytes, for ASCII site lists).
    """
    want = _want(columns)
    try:
        total, done = os.path.getsize(path), 0
        with open(path, encoding="utf-8", newline="\n") as lines:
            for number, line in enumerate(lines, 1):
                done += len(line)
                if progress is not None and number % PROGRESS_LINES == 0:
                    progress("read", done, total)
                parts = line.rstrip("\n").split("\t")
                if len(parts) < len(columns) or not valid_site_and_pages(parts):
                    raise TableError(f"{path}: line {number}: expected {want}, "
                                     f"got {line.rstrip(chr(10))!r}")
                yield parts
        if progress is not None:
            progress("read", total, total)
    except UnicodeDecodeError as exc:
        raise TableError(f"{path}: not UTF-8 (byte {exc.start})") from None
    except OSError as exc:
        raise TableError(f"{path}: {exc.strerror or exc}") from None


def read_checked(path: str | Path, columns: tuple[str, ...] = D2_COLUMNS,
                 progress: Progress | None = None) -> Iterator[Checked]:
    """The rows of a D2 (or D3) file."""
    for number, parts in enumerate(read_rows(path, columns, progress), 1):
        status, md5 = parts[2], parts[3]
        aliases = parts[5] if len(columns) > 5 else "0"
        if not (status.isdigit() and _MD5.fullmatch(md5) and aliases.isdigit()
                and parts[4].startswith(("http://", "https://"))):
            got = "\t".join(parts)
            raise TableError(f"{path}: line {number}: expected {_want(columns)}, got {got!r}")
        yield Checked(parts[0], int(parts[1]), int(status), md5, parts[4], int(aliases))


def _want(columns: tuple[str, ...]) -> str:
    return "\\t".join(f"<{name}>" for name in columns)


def removal_line(site: str, pages: int, reason: str) -> str:
    return f"{site}\t{pages}\t{reason}\n"
