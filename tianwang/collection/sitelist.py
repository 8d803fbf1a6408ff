"""The site list files of a collection build (D0 to D4) and their removals files.

A site list: UTF-8 text, one line per site, `<site>\\t<pages>\\n`, sorted by site in code point
order (the byte order of the file: `LC_ALL=C sort` agrees), each site once. A site is written
`scheme://host:port/`: scheme http or https, the host lowercase (a domain in ASCII, IDNA
`xn--` labels for non-ASCII names; an IPv4 address dotted-decimal; an IPv6 address in
brackets), the port always written (`http://www.pku.edu.cn:80/`). Pages is a decimal integer
>= 1. A removals file lists what a step dropped: `<site>\\t<pages>\\t<reason>\\n`, same order.

Files are written whole or not at all (a temp file beside the target, then os.replace).
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path

_SITE = re.compile(r"(https?)://([^\t\n/]+):(\d{1,5})/")


class SiteListError(ValueError):
    """A site list line that does not follow the format; the message names file and line."""


def format_site(scheme: str, host: str, port: int) -> str:
    return f"{scheme}://{host}:{port}/"


def split_site(site: str) -> tuple[str, str, int]:
    """(scheme, host, port) of a site written `scheme://host:port/`; ValueError if not."""
    match = _SITE.fullmatch(site)
    if match is None or int(match[3]) > 65535:
        raise ValueError(f"not a site (scheme://host:port/): {site!r}")
    return match[1], match[2], int(match[3])


def read_sites(path: str | Path, fields: int = 2) -> Iterator[list[str]]:
    """The lines of a site list (fields=2) or removals file (fields=3), split on tabs.

    Each line's site and page count are checked; SiteListError names the file and line.
    """
    with open(path, "rb") as lines:
        for number, raw in enumerate(lines, 1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError:
                raise SiteListError(f"{path}: line {number}: not UTF-8: {raw!r}") from None
            parts = line.rstrip("\n").split("\t")
            if len(parts) != fields or not valid_site_and_pages(parts):
                raise SiteListError(f"{path}: line {number}: expected {_shape(fields)}, "
                                    f"got {line.rstrip(chr(10))!r}")
            yield parts


def valid_site_and_pages(parts: list[str]) -> bool:
    """Whether a split line starts with a well-formed site and a page count >= 1."""
    try:
        split_site(parts[0])
    except ValueError:
        return False
    return parts[1].isascii() and parts[1].isdigit() and int(parts[1]) >= 1


def _shape(fields: int) -> str:
    return "<site>\\t<pages>" + ("\\t<reason>" if fields == 3 else "")


def check_out_dir(path: str | Path) -> None:
    """Fail before the work, not after it, when the output cannot be written there."""
    folder = Path(path).parent
    if not folder.is_dir():
        raise NotADirectoryError(f"{folder}: no such directory for {path}")
    if Path(path).is_dir():
        raise IsADirectoryError(f"{path}: is a directory")


def write_lines(path: str | Path, lines: Iterable[str]) -> None:
    """Write the lines to path whole or not at all."""
    path = Path(path)
    fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, 0o666 & ~_umask())  # as open() would create it, not mkstemp's 0600
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as out:
            out.writelines(lines)
        os.replace(temp, path)
    except BaseException:
        os.unlink(temp)
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
