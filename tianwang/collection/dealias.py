"""`tianwang hosts dealias D2 -o D3 [--aliases FILE]`: one name per site (seed 004's D3).

Sites of D2 whose homepages have the same body MD5 are one site served under several names
(seed 004 section 3.2, step 3). One name is kept, chosen in this order:
  1. a named host on its scheme's default port (so D4's port and IP rules do not drop the
     whole site when one of its names would pass them);
  2. a `www.` name;
  3. the name with the most pages;
  4. the smallest site string (a stable tie-break).
The kept row's pages are the group's sum: every url the lists held under any of the names
was a page of this one site, and D4's fewer-than-10 rule should see the whole site.

Input: D2 (tianwang/collection/hosttable.py), sorted, each site once.
Output, D3: D2's columns with pages summed and a last column, the number of aliases folded
in: `<site>\\t<pages>\\t<status>\\t<md5>\\t<final_url>\\t<aliases>`, sorted by site. The aliases
file (default D3.aliases): `<alias site>\\t<pages>\\t<kept site>`, sorted, the alias's own pages.
Both are written whole or not at all; one count line on stdout.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from tianwang.collection.hosttable import Checked, TableError, read_checked
from tianwang.collection.sitelist import split_site
from tianwang.hosts import DEFAULT_PORTS, MalformedURL, ipv4_literal
from tianwang.progress import Progress


def keep_key(row: Checked) -> tuple[bool, bool, int, str]:
    """Sorts a group's names: the kept one first (the order of the module docstring)."""
    scheme, host, port = split_site(row.site)
    informal = port != DEFAULT_PORTS.get(scheme) or is_ip(host)
    return (informal, not host.startswith("www."), -row.pages, row.site)


def is_ip(host: str) -> bool:
    """An IP literal as a site list writes it (dotted IPv4, bracketed IPv6)."""
    if host.startswith("["):
        return True
    try:
        return ipv4_literal(host) is not None
    except MalformedURL:
        return False


def dealias(rows: Iterable[Checked]) -> tuple[list[Checked], list[tuple[Checked, str]]]:
    """The kept rows (pages summed, aliases counted) and each alias with its kept site."""
    groups: dict[str, list[Checked]] = {}
    for row in rows:
        groups.setdefault(row.md5, []).append(row)
    kept: list[Checked] = []
    aliases: list[tuple[Checked, str]] = []
    for group in groups.values():
        if len(group) == 1:  # most sites have one name: nothing to choose
            kept.append(group[0])
            continue
        group.sort(key=keep_key)
        first = group[0]
        kept.append(replace(first, pages=sum(r.pages for r in group), aliases=len(group) - 1))
        aliases += [(row, first.site) for row in group[1:]]
    kept.sort(key=lambda r: r.site)
    aliases.sort(key=lambda pair: pair[0].site)
    return kept, aliases


def read_unique(path: str, progress: Progress | None = None) -> list[Checked]:
    """The rows of D2; TableError on a site written twice."""
    rows, seen = [], set()
    for number, row in enumerate(read_checked(path, progress=progress), 1):
        if row.site in seen:
            raise TableError(f"{path}: line {number}: site {row.site} written twice")
        seen.add(row.site)
        rows.append(row)
    return rows
