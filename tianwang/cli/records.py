"""`tianwang records ls|cat|verify|repair|to-warc`: list, print, check, repair and export a
record tree."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable
from pathlib import Path

from tianwang.formats.http import parse_http_response
from tianwang.formats.pagefile import PageFile
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
    repair = sub.add_parser("repair", help="cut off records left unfinished by a crash")
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
    for path in record_files(root):
        try:
            for record in iter_records(path):
                _out(_text(_ls_line(root, path, record) + "\n"))
        except RecordError as exc:
            _err(f"records ls: {exc}")
            return 1
    return 0


def _ls_line(root: Path, path: Path, record: Record) -> str:
    try:
        message = record.http
        status, body = str(message.status), str(len(message.body))
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
    """The latest record of url (a revisit appends a newer one); bad files are reported, skipped."""
    found = None
    for path in paths:
        try:
            for record in iter_records(path):
                if url in (record.url, record.origin):
                    found = record
        except RecordError as exc:
            _err(f"records cat: skipping the rest of a bad file: {exc}")
    return found


def _print_record(record: Record, body_only: bool) -> int:
    if body_only:
        try:
            _out(record.http.body)
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
    records, problems = 0, []
    for path in files:
        count, problem = _verify_file(root, path)
        records += count
        if problem is not None:
            problems.append(problem)
            _err(problem)
    if problems:
        _err(f"FAILED: {len(problems)} of {len(files)} files have a bad record")
        return 1
    size = sum(path.stat().st_size for path in files)
    print(f"OK: {records} records in {len(files)} files, {size} bytes")
    return 0


def _verify_file(root: Path, path: Path) -> tuple[int, str | None]:
    """Good records read, and the first problem of the file as `path: offset N: reason`."""
    count = 0
    try:
        for record in iter_records(path):
            reason = _record_problem(root, path, record)
            if reason is not None:
                return count, str(RecordError(str(path), record.offset, reason))
            count += 1
    except RecordError as exc:
        return count, str(exc)
    return count, None


def _record_problem(root: Path, path: Path, record: Record) -> str | None:
    try:
        parse_http_response(record.data)
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
        with PageFile(path) as page:  # opening repairs: one read of each file
            if page.repaired_bytes:
                repaired += 1
                print(
                    f"{path}: cut {page.repaired_bytes} bytes at offset {page.size} "
                    f"(kept in {path.name}.cut-{page.size})"
                )
    print(f"repaired {repaired} of {len(files)} files")
    return 0


# -- to-warc -----------------------------------------------------------------------------


def _add_to_warc(sub: argparse._SubParsersAction) -> None:
    to_warc = sub.add_parser(
        "to-warc", help="export a record tree to a gzipped WARC file (one response per page)"
    )
    to_warc.add_argument("dir", help="data directory (the one holding data_<k>/)")
    to_warc.add_argument("out", help="the WARC file to write, e.g. crawl.warc.gz")
    to_warc.set_defaults(func=cmd_to_warc)


def cmd_to_warc(args: argparse.Namespace) -> int:
    from tianwang.formats.warc import export_tree  # warcio is only needed here

    root = _data_dir("to-warc", args.dir)
    if root is None:
        return 2
    if not Path(args.out).parent.is_dir():
        _err(f"records to-warc: {Path(args.out).parent}: no such directory")
        return 2
    try:
        count = export_tree(root, args.out)
    except RecordError as exc:
        _err(f"records to-warc: {exc} (nothing written)")
        return 1
    print(f"wrote {count} response records to {args.out}")
    return 0
