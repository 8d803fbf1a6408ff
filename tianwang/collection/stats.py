"""`tianwang stats DIR`: seed 004's chapter 4 tables for a record tree, as Markdown.

Size (table 4.1): pages, sites, bytes, average page size, pages and bytes per site. Bytes are
the pages' HTTP bodies as served (what a reader downloads), not the compressed records.
A site is a host directory `data_<k>/<host>` of the tree; a page is a record.
Domain types (table 4.2): share of the pages, pages, dynamic pages, sites.
Provinces (table 4.4): the same per province, the 31 and "other"; a site's province from its
domain, or from --provinces FILE (registered domain -> province): tianwang/collection/provinces.py.
Page forms (table 4.3): pages and dynamic pages of each form, most common first.
Site sizes (section 3.1's log-log figure): the number of sites of each size, the slope of
its power law fitted by maximum likelihood (tianwang/collection/sizefit.py), and with --plot
a PNG of the sizes on log-log axes with the fitted line.
Domain types, page forms and what counts as dynamic: tianwang/collection/pageclass.py.
"""

from __future__ import annotations

import multiprocessing
import os
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO
from urllib.parse import urlsplit

from tianwang.analysis.globaldedup import DONE_FILE, WORK_DIR
from tianwang.collection.pageclass import DOMAIN_TYPES, domain_type, is_dynamic, page_form
from tianwang.collection.provinces import (
    LABELS,
    province_of,
    report_order,
)
from tianwang.collection.sizefit import SizeFit
from tianwang.formats.http import body_start
from tianwang.formats.record import iter_records
from tianwang.formats.store import record_files
from tianwang.progress import Progress

MAX_FORMS = 30  # rows of the page-form table; rarer forms are summed into one row


@dataclass
class Row:
    pages: int = 0
    dynamic: int = 0
    bytes: int = 0
    sites: int = 0


@dataclass
class Stats:
    total: Row = field(default_factory=Row)
    domains: dict[str, Row] = field(default_factory=lambda: {t: Row() for t in DOMAIN_TYPES})
    forms: dict[str, Row] = field(default_factory=dict)
    sizes: list[int] = field(default_factory=list)  # pages of each site
    provinces: dict[str, Row] = field(default_factory=lambda: {p: Row() for p in LABELS})
    stored_bytes: int = 0  # the page.dat files on disk
    damaged: list[str] = field(default_factory=list)  # each damaged span skipped, said


class StatsError(Exception):
    """Something the user must fix; the message says what."""


# -- counting ----------------------------------------------------------------------------


def collect(tree: Path, workers: int = 1, progress: Progress | None = None,
            registry: dict[str, str] | None = None) -> Stats:
    """Every record of the tree, counted by site, domain type, province and page form."""
    stats = Stats()
    files = [str(path) for path in record_files(tree)]
    for done, count in enumerate(_counts(files, workers), 1):
        if count.site.pages:
            stats.sizes.append(count.site.pages)
            _add(stats.domains[domain_type(count.host)], count.site)
            _add(stats.provinces[province_of(count.host, registry)], count.site)
            _add(stats.total, count.site)
            for form, row in count.forms.items():
                _add(stats.forms.setdefault(form, Row()), row)
        stats.stored_bytes += count.stored_bytes
        stats.damaged.extend(count.damaged)
        if progress is not None:
            progress("stats", done, len(files))
    return stats


@dataclass
class FileCount:
    """One host's page.dat counted: the site's row and its pages by form."""

    host: str
    site: Row
    forms: dict[str, Row]
    stored_bytes: int
    damaged: list[str] = field(default_factory=list)


def count_file(path: str) -> FileCount:
    site, forms, host = Row(sites=1), {}, ""
    damaged: list[str] = []  # text: it crosses from a worker process
    for record in iter_records(path, on_damage=lambda span: damaged.append(str(span))):
        host = host or _host(record.url, path)
        form = page_form(record.url)
        dynamic = is_dynamic(record.url, form)
        size = body_size(record.data)
        for row in (site, forms.setdefault(form, Row())):
            row.pages += 1
            row.dynamic += dynamic
            row.bytes += size
    return FileCount(host, site, forms, os.path.getsize(path), damaged)


def _counts(files: list[str], workers: int) -> Iterator[FileCount]:
    """count_file of each file, in order, on `workers` processes."""
    if workers == 1 or len(files) < 2:
        yield from map(count_file, files)
        return
    # forkserver, as tianwang dedup: a fork of a process with threads may inherit held locks.
    context = multiprocessing.get_context("forkserver")
    with context.Pool(min(workers, len(files))) as pool:
        yield from pool.imap(count_file, files, chunksize=max(1, len(files) // (workers * 32)))
        pool.close()  # let the workers end; leaving the block would terminate them
        pool.join()


def body_size(data: bytes) -> int:
    """The bytes of the page a record's DATA carries: the HTTP body (after the first blank
    line, as the record reader splits it), or all of DATA if it is not an HTTP response."""
    if not data.startswith(b"HTTP/"):
        return len(data)
    end = body_start(data)
    return len(data) - end if end is not None else 0


def _host(url: str, path: str) -> str:
    """The site's host name: its first record's, else the directory's (`host_8080`)."""
    return urlsplit(url).hostname or Path(path).parent.name.rsplit("_", 1)[0]


def _add(total: Row, part: Row) -> None:
    total.pages += part.pages
    total.dynamic += part.dynamic
    total.bytes += part.bytes
    total.sites += part.sites


# -- the report --------------------------------------------------------------------------


def write_report(out: TextIO, tree: Path, stats: Stats, fit: SizeFit | None,
                 plot: Path | None) -> None:
    total = stats.total
    out.write(f"# Collection statistics: {tree}\n\n")
    _size_table(out, stats)
    out.write("\n## Domain types\n\n| domain type | share | pages | dynamic pages | sites |\n"
              "|---|---:|---:|---:|---:|\n")
    # Most pages first; sorted() is stable, so ties keep the order.
    for name, row in sorted(stats.domains.items(), key=lambda item: -item[1].pages):
        out.write(f"| {name} | {_share(row.pages, total.pages)} | {row.pages:,} | "
                  f"{row.dynamic:,} | {row.sites:,} |\n")
    out.write("\n## Provinces\n\n| province | share | pages | dynamic pages | sites |\n"
              "|---|---:|---:|---:|---:|\n")
    for name in report_order({p: row.pages for p, row in stats.provinces.items()}):
        row = stats.provinces[name]
        out.write(f"| {name} | {_share(row.pages, total.pages)} | {row.pages:,} | "
                  f"{row.dynamic:,} | {row.sites:,} |\n")
    out.write("\n## Page forms\n\n| page form | share | pages | dynamic pages |\n"
              "|---|---:|---:|---:|\n")
    for name, row in _form_rows(stats.forms):
        out.write(f"| {name} | {_share(row.pages, total.pages)} | {row.pages:,} | "
                  f"{row.dynamic:,} |\n")
    out.write("\n## Site sizes\n\n")
    _size_section(out, stats.sizes, fit, plot)


def _size_table(out: TextIO, stats: Stats) -> None:
    total = stats.total
    rows = [
        ("pages", f"{total.pages:,}"),
        ("sites", f"{total.sites:,}"),
        ("bytes", f"{total.bytes:,} ({total.bytes / 1024:,.0f} KB)"),
        ("average page size", f"{total.bytes / total.pages:,.0f} bytes/page"),
        ("pages per site", f"{total.pages / total.sites:,.1f} pages/site"),
        ("bytes per site", f"{total.bytes / total.sites / 1024:,.1f} KB/site"),
        ("dynamic pages", f"{total.dynamic:,} ({_share(total.dynamic, total.pages)})"),
        ("stored", f"{stats.stored_bytes:,} bytes of page.dat files"),
    ]
    out.write("## Size\n\n| | |\n|---|---:|\n")
    out.writelines(f"| {name} | {value} |\n" for name, value in rows)


def _form_rows(forms: dict[str, Row]) -> list[tuple[str, Row]]:
    rows = sorted(forms.items(), key=lambda item: (-item[1].pages, item[0]))
    if len(rows) <= MAX_FORMS:
        return rows
    rest = Row()
    for _name, row in rows[MAX_FORMS - 1 :]:
        _add(rest, row)
    return [*rows[: MAX_FORMS - 1], (f"({len(rows) - MAX_FORMS + 1} rarer forms)", rest)]


def _size_section(out: TextIO, sizes: list[int], fit: SizeFit | None, plot: Path | None) -> None:
    counts = Counter(sizes)
    if fit is None:
        out.write(f"fitted slope: n/a (the {len(sizes)} sites have fewer than two distinct "
                  "sizes)\n")
    else:
        out.write(f"fitted slope: {fit.slope:.3f} (sites of size s ~ s^{fit.slope:.3f}; "
                  f"discrete power-law maximum likelihood on sizes {fit.smin}..{fit.smax}, "
                  f"{fit.sites:,} sites)\n")
    out.write(f"\ndistinct sizes: {len(counts):,}; largest site: {max(sizes):,} pages; "
              f"sites under 10 pages: {sum(1 for s in sizes if s < 10):,}\n")
    if plot is not None:
        out.write(f"\n![site sizes on log-log axes]({plot})\n")


def _share(part: int, whole: int) -> str:
    return f"{100 * part / whole:.3f}%" if whole else "-"


def draw_plot(path: Path, sizes: list[int], fit: SizeFit | None) -> None:
    """Sites of each size on log-log axes, and the fitted law's line; written whole."""
    import matplotlib

    matplotlib.use("Agg")  # no display: a file only
    from matplotlib import pyplot
    from matplotlib.ticker import FuncFormatter

    counts = sorted(Counter(sizes).items())
    figure, axes = pyplot.subplots(figsize=(6, 4.5))
    axes.scatter([s for s, _n in counts], [n for _s, n in counts], s=10, label="sites")
    title = f"{len(sizes):,} sites"
    if fit is not None:
        ends = [fit.smin, fit.smax]
        axes.plot(ends, [fit.expected(s) for s in ends], color="C1",
                  label=f"fitted slope {fit.slope:.3f}")
        title += f", fitted slope {fit.slope:.3f}"
        axes.legend()
    axes.set_xscale("log")
    axes.set_yscale("log")
    # 20, not 2 x 10^1; between powers of ten only 2 and 5 are labelled, or labels overlap.
    major = FuncFormatter(lambda value, _position: f"{value:g}")
    minor = FuncFormatter(lambda value, _position: f"{value:g}" if f"{value:g}"[0] in "25"
                          else "")
    for axis in (axes.xaxis, axes.yaxis):
        axis.set_major_formatter(major)
        axis.set_minor_formatter(minor)
    axes.set_xlabel("site size (pages)")
    axes.set_ylabel("number of sites")
    axes.set_title(title)
    figure.tight_layout()
    tmp = path.with_name(path.name + ".tmp")
    figure.savefig(tmp, format="png")
    pyplot.close(figure)
    tmp.replace(path)


# -- the command -------------------------------------------------------------------------


def stats_of(tree: Path, workers: int, progress: Progress | None,
             registry: dict[str, str] | None = None) -> Stats:
    if not tree.is_dir():
        raise StatsError(f"{tree}: {'not a directory' if tree.exists() else 'no such directory'}")
    if (tree / WORK_DIR).exists() and not (tree / DONE_FILE).exists():
        raise StatsError(f"{tree} is an unfinished dedup output; finish it first")
    stats = collect(tree, workers, progress, registry)
    if not stats.total.pages:
        raise StatsError(f"{tree} holds no records (no data_*/<host>/page.dat)")
    return stats
