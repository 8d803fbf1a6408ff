"""`tianwang records ls|cat|verify|repair|to-warc`: list, print, check, repair and export a
record tree."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable
from pathlib import Path

from tianwang.formats.http import parse_http_head
from tianwang.formats.linksfile import LINKS_FILE, prune_links
from tianwang.formats.md5store import agree_indexes
from tianwang.formats.pagefile import repair_file
from tianwang.formats.record import (
    Record,
    RecordError,
    encode_header,
    header_fields,
    iter_records,
)
from tianwang.formats.store import page_path, record_files
from tianwang.urls import url_host


def register(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add the `records` command and its subcommands to the root parser's subparsers."""
    parser = subparsers.add_parser("records", help="list, print and verify Tianwang record files")
    sub = parser.add_subparsers(dest="records_command", required=True)
    ls = sub.add_parser("ls", help="one line per record: path, offset, status, body length, url")
    ls.add_argument("dir", help="data directory (the one holding data_<k>/)")
    ls.set_defaults(func=cmd_ls)
    _add_cat(sub)
    verify = sub.add_parser("verify", help="read every record in full and check where it is filed")
    verify.add_argument("dir", help="data directory (the one holding data_<k>/)")
    verify.set_defaults(func=cmd_verify)
    repair = sub.add_parser(
        "repair", help="take damaged records and unfinished tails out of every file (kept aside)"
    )
    repair.add_argument("dir", help="data directory (the one holding data_<k>/)")
    repair.set_defaults(func=cmd_repair)
    _add_to_warc(sub)
    return parser


def _add_cat(sub: argparse._SubParsersAction) -> None:
    cat = sub.add_parser("cat", help="print one record: its header lines, then its HTTP response")
    cat.add_argument("path", help="data directory, or one page.dat file")
    which = cat.add_mutually_exclusive_group(required=True)
    which.add_argument("--url", help="the record of this url (or origin); the latest if several")
    which.add_argument("--offset", type=int, help="the record at this byte offset of PATH (a file)")
    cat.add_argument("--body", action="store_true", help="print only the HTTP body")
    cat.set_defaults(func=cmd_cat)


# -- output ------------------------------------------------------------------------------


def _out(data: bytes) -> None:
    # Bytes, not text: bodies are in any charset, and urls may hold undecodable bytes.
    sys.stdout.buffer.write(data)


def _err(message: str) -> None:
    sys.stdout.flush()
    sys.stdout.buffer.flush()  # what was listed so far comes before the error
    print(message, file=sys.stderr)


def _text(line: str) -> bytes:
    return line.encode("utf-8", "surrogateescape")


def _data_dir(command: str, name: str) -> Path | None:
    """The data directory a command was given, or None after saying why it is not one."""
    root = Path(name)
    if not root.is_dir():
        what = "not a directory" if root.exists() else "no such directory"
        _err(f"records {command}: {root}: {what}")
        return None
    return root


# -- ls ----------------------------------------------------------------------------------


def cmd_ls(args: argparse.Namespace) -> int:
    root = _data_dir("ls", args.dir)
    if root is None:
        return 2
    damaged = _Damage("ls")
    for path in record_files(root):
        for record in iter_records(path, on_damage=damaged):
            _out(_text(_ls_line(root, path, record) + "\n"))
    return damaged.summary()


class _Damage:
    """Says each damaged span on stderr as the reading goes past it, and counts them."""

    def __init__(self, command: str) -> None:
        self.command = command
        self.spans = 0

    def __call__(self, span: RecordError) -> None:
        self.spans += 1
        _err(f"records {self.command}: damaged: {span}")

    def summary(self) -> int:
        """Exit status: 1 after saying how many spans were skipped, if any."""
        if self.spans:
            _err(f"records {self.command}: {self.spans} damaged span(s) skipped "
                 "(`tianwang records repair` takes them out)")
            return 1
        return 0


def _ls_line(root: Path, path: Path, record: Record) -> str:
    try:
        message, start = parse_http_head(record.data)
        status, body = str(message.status), str(len(record.data) - start)
    except ValueError:  # a record whose DATA is not HTTP is still listed; verify flags it
        status = body = "-"
    relative = path.relative_to(root).as_posix()
    return "\t".join((relative, str(record.offset), status, body, record.url))


# -- cat ---------------------------------------------------------------------------------


def cmd_cat(args: argparse.Namespace) -> int:
    path = Path(args.path)
    if not path.exists():
        _err(f"records cat: {path}: no such file or directory")
        return 2
    if args.offset is not None and not path.is_file():
        _err(f"records cat: --offset needs a page.dat file, and {path} is a directory")
        return 2
    try:
        record = _by_url(path, args.url) if args.offset is None else _at_offset(path, args.offset)
    except RecordError as exc:
        _err(f"records cat: {exc}")
        return 1
    if record is None:
        wanted = f"at offset {args.offset}" if args.url is None else f"for {args.url}"
        _err(f"records cat: no record {wanted} in {path}")
        return 1
    return _print_record(record, args.body)


def _at_offset(path: Path, offset: int) -> Record | None:
    with open(path, "rb") as file:
        file.seek(offset)
        return next(iter_records(file, str(path)), None)


def _by_url(path: Path, url: str) -> Record | None:
    if path.is_file():
        return _last_match([path], url)
    direct = _direct_path(path, url)
    found = _last_match([direct], url) if direct else None
    # Records filed elsewhere (an old layout, a host given differently) are still found.
    others = [file for file in record_files(path) if file != direct]
    return found or _last_match(others, url)


def _direct_path(root: Path, url: str) -> Path | None:
    try:
        candidate = page_path(root, url_host(url))
    except ValueError:
        return None
    return candidate if candidate.is_file() else None


def _last_match(paths: Iterable[Path], url: str) -> Record | None:
    """The latest record of url (a revisit appends a newer one); damage is reported, skipped."""
    found = None
    damaged = _Damage("cat")
    for path in paths:
        for record in iter_records(path, on_damage=damaged):
            if url in (record.url, record.origin):
                found = record
    return found


def _print_record(record: Record, body_only: bool) -> int:
    if body_only:
        try:
            _out(memoryview(record.data)[parse_http_head(record.data)[1] :])
        except ValueError as exc:
            _err(f"records cat: record at offset {record.offset} has no HTTP body: {exc}")
            return 1
        return 0
    fields = header_fields(record) + [("length", str(len(record.data)))]
    _out(encode_header(fields) + record.data)
    return 0


# -- verify ------------------------------------------------------------------------------


def cmd_verify(args: argparse.Namespace) -> int:
    root = _data_dir("verify", args.dir)
    if root is None:
        return 2
    files = record_files(root)
    records, problems, bad_files = 0, 0, 0
    for path in files:
        count, found = _verify_file(root, path)
        records += count
        problems += found
        bad_files += found > 0
    if problems:
        _err(f"FAILED: {problems} bad records or damaged spans in {bad_files} of {len(files)} "
             f"files ({records} good records read)")
        return 1
    size = sum(path.stat().st_size for path in files)
    print(f"OK: {records} records in {len(files)} files, {size} bytes")
    return 0


def _verify_file(root: Path, path: Path) -> tuple[int, int]:
    """Good records read, and problems found, each said as `path: offset N: reason`."""
    count, problems = 0, 0

    def damaged(span: RecordError) -> None:
        nonlocal problems
        problems += 1
        _err(str(span))

    for record in iter_records(path, on_damage=damaged):
        reason = _record_problem(root, path, record)
        if reason is None:
            count += 1
        else:
            damaged(RecordError(str(path), record.offset, reason))
    return count, problems


def _record_problem(root: Path, path: Path, record: Record) -> str | None:
    try:
        parse_http_head(record.data)  # checks the head; the body is not copied out to check it
    except ValueError as exc:
        return f"DATA is not an HTTP response: {exc}"
    try:
        expected = page_path(root, url_host(record.url))
    except ValueError as exc:
        return f"cannot tell where the record belongs: {exc}"
    if expected != path:
        found, wanted = path.relative_to(root).parent, expected.relative_to(root).parent
        return f"record of {record.url} belongs in {wanted}/, not {found}/"
    return None


# -- repair ------------------------------------------------------------------------------


def cmd_repair(args: argparse.Namespace) -> int:
    """What a crawl does on opening a file, for every file: after a crash, before verify."""
    root = _data_dir("repair", args.dir)
    if root is None:
        return 2
    files, repaired = record_files(root), 0
    for path in files:
        spans = repair_file(path)
        for span in spans:
            print(f"{path}: cut {span.length} bytes at offset {span.offset} ({span.reason}; "
                  f"kept in {path.name}.cut-{span.offset})")
        if spans:
            repaired += 1
            _prune_links(path)
    if repaired:
        agree_indexes(root)
    print(f"repaired {repaired} of {len(files)} files")
    return 0


def _prune_links(path: Path) -> None:
    """links.tsv beside a repaired file keeps the lines of the urls it still holds."""
    held = {record.url for record in iter_records(path)}
    dropped = prune_links(path.with_name(LINKS_FILE), held)
    if dropped:
        print(f"{path.with_name(LINKS_FILE)}: dropped {dropped} lines of pages no longer held")


# -- to-warc -----------------------------------------------------------------------------


def _redirects(count: int) -> str:
    if not count:
        return "no redirect"
    # The record format keeps the page a redirect led to and the url first asked for, not
    # the 3xx itself: the export makes one, so a replay finds the page by the first url.
    return (f"{count:,} redirect{'s' if count != 1 else ''} rebuilt (a 302 from the url "
            "first asked for to the page stored)")


def _add_to_warc(sub: argparse._SubParsersAction) -> None:
    to_warc = sub.add_parser(
        "to-warc",
        help="export a record tree to a WARC file (a response per page; .gz name: gzipped)",
    )
    to_warc.add_argument("dir", help="data directory (the one holding data_<k>/)")
    to_warc.add_argument("out", help="the WARC file to write, e.g. crawl.warc.gz")
    to_warc.add_argument(
        "--skip-damaged",
        action="store_true",
        help="export every record that reads and name each one skipped (default: a damaged "
        "record stops the export, and nothing is written)",
    )
    to_warc.set_defaults(func=cmd_to_warc)


def cmd_to_warc(args: argparse.Namespace) -> int:
    from tianwang.formats.warc import export_tree  # warcio is only needed here

    root = _data_dir("to-warc", args.dir)
    if root is None:
        return 2
    if not Path(args.out).parent.is_dir():
        _err(f"records to-warc: {Path(args.out).parent}: no such directory")
        return 2
    damaged = _Damage("to-warc") if args.skip_damaged else None
    try:
        exported = export_tree(root, args.out, on_damage=damaged)
    except RecordError as exc:
        _err(f"records to-warc: {exc} (nothing written; --skip-damaged exports the rest)")
        return 1
    print(f"wrote {exported.responses:,} response records to {args.out}: "
          f"{exported.pages:,} pages and {_redirects(exported.redirects)}, after a warcinfo "
          "record")
    if damaged is not None and damaged.spans:
        print(f"skipped {damaged.spans} damaged records or spans")
    return 0
