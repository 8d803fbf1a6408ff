"""`tianwang dedup` and `tianwang importance`: the offline tools over stored record trees."""

from __future__ import annotations

import argparse
import csv
import json
import os
import sys
from pathlib import Path
from typing import TextIO

from tianwang.analysis.dedup import DONE_FILE, WORK_DIR, DedupError, Report, dedup
from tianwang.analysis.importance import Coefficients, csv_rows, importance, jsonl_records
from tianwang.formats.record import RecordError
from tianwang.progress import terminal_progress

DEDUP_HELP = """\
Keep one record per body MD5 across the input trees (several crawls, several machines), as
seed 004 built CWT200g: sharded by MD5 mod 1024, on all cores, in bounded memory. The kept
url of a body is the shortest of those stored with it (then the first in code point order);
every other url with that body, and every line of the inputs' mirror tables, goes to
OUT_DIR/mirrors.tsv pointing at it. Records are copied byte for byte, sorted by url, with
their links.tsv lines. Interrupted (even by kill -9), the same command resumes; OUT_DIR is
complete once OUT_DIR/dedup.json exists."""

IMPORTANCE_HELP = """\
Rank every stored page of DIR by seed 000's features: in-degree, the parent's in-degree,
mirror degree and directory depth, combined by default as
  weight = BASE + A*ln(1+indegree) + B*ln(1+parent_indegree) + C*ln(mirror) - D*depth
(BASE=10, A=1, B=0.5, C=1, D=1: with no links and no mirrors the weight is the crawl's URL
weight; e times the in-links or copies is worth one directory level; the parent's in-degree
is indirect evidence, worth half). In-degree counts distinct stored pages linking to a page,
self-links excluded. The parent is the page that first linked to it (links.tsv)."""


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add `dedup` and `importance` to the root parser's subparsers."""
    parser = subparsers.add_parser(
        "dedup", help="global dedup of record trees by body MD5", description=DEDUP_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("inputs", nargs="+", metavar="IN_DIR", help="record trees to dedup")
    parser.add_argument("--out", required=True, metavar="OUT_DIR",
                        help="new or empty directory (or an unfinished run's, to resume)")
    parser.add_argument("--workers", type=_positive, default=os.cpu_count() or 1,
                        help="processes to use (default: one per core)")
    parser.add_argument("--skip-damaged", action="store_true",
                        help="skip each damaged record, name it and use every record that "
                        "reads (default: stop at the first and name it, nothing written)")
    parser.set_defaults(func=cmd_dedup)
    _register_importance(subparsers)


def _register_importance(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "importance", help="rank stored pages by seed 000's importance features",
        description=IMPORTANCE_HELP, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("dir", metavar="DIR", help="record tree (with links.tsv, mirrors.tsv)")
    parser.add_argument("--out", metavar="FILE", help="write the table here (default: stdout)")
    parser.add_argument("--format", choices=("csv", "jsonl"), default="csv",
                        help="csv with a header line (default), or one JSON object a line")
    defaults = Coefficients()
    for name, flag, what in (
        ("base", "--base", "BASE, the weight of a depth-0 page with nothing else known"),
        ("indegree", "--indegree-coef", "A, per ln(1+indegree)"),
        ("parent_indegree", "--parent-coef", "B, per ln(1+parent_indegree)"),
        ("mirror", "--mirror-coef", "C, per ln(mirror)"),
        ("depth", "--depth-coef", "D, subtracted per directory level"),
    ):
        parser.add_argument(flag, dest=name, type=float, default=getattr(defaults, name),
                            help=f"{what} (default {getattr(defaults, name):g})")
    parser.set_defaults(func=cmd_importance)


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


# -- dedup -------------------------------------------------------------------------------


def cmd_dedup(args: argparse.Namespace) -> int:
    try:
        with terminal_progress(byte_phases=("hash",)) as progress:
            report = dedup(args.inputs, args.out, args.workers, args.skip_damaged, progress)
    except DedupError as exc:
        print(f"tianwang dedup: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"tianwang dedup: interrupted; {args.out} is unfinished (no {DONE_FILE}); run "
              "the same command again to resume", file=sys.stderr)
        return 130
    for line in report_lines(report):
        print(line)
    return 0


def report_lines(report: Report) -> list[str]:
    rate = report.records / report.seconds if report.seconds > 0 else 0.0
    lines = [
        f"records in: {report.records} ({report.bytes_in} bytes in {report.files} files)",
        f"distinct bodies: {report.distinct} (records written, {report.bytes_out} bytes)",
        f"duplicates: {report.duplicates} (other urls of a kept body, now in mirrors.tsv)",
        f"same-url copies: {report.same_url} (a url stored twice with one body, dropped)",
        f"mirror lines: {report.mirror_lines_in} in, {report.mirror_lines_out} out",
        f"time: {report.seconds:.1f} s, {rate:.0f} records/s"
        + (" (this run resumed an interrupted one)" if report.resumed else ""),
    ]
    for path, offset, reason in report.damaged:
        lines.append(f"skipped damaged: {path}: offset {offset}: {reason}")
    return lines


# -- importance --------------------------------------------------------------------------


def cmd_importance(args: argparse.Namespace) -> int:
    root = Path(args.dir)
    if not root.is_dir():
        what = "not a directory" if root.exists() else "no such directory"
        print(f"tianwang importance: {root}: {what}", file=sys.stderr)
        return 2
    if (root / WORK_DIR).exists() and not (root / DONE_FILE).exists():
        print(f"tianwang importance: {root} is an unfinished dedup output; finish it first "
              "(run the same tianwang dedup command again)", file=sys.stderr)
        return 1
    coefficients = Coefficients(args.base, args.indegree, args.parent_indegree, args.mirror,
                                args.depth)
    damaged: list[RecordError] = []

    def skip(span: RecordError) -> None:
        damaged.append(span)
        print(f"tianwang importance: damaged, skipped: {span}", file=sys.stderr)

    table = importance(root, coefficients, on_damage=skip)
    if args.out:  # written beside and renamed: never half a table in its place
        out = Path(args.out)
        temp = out.with_name(f".{out.name}.tmp")
        with open(temp, "w", encoding="utf-8", newline="",
                  errors="surrogateescape") as file:
            _write_table(file, table, args.format)
        temp.replace(out)
    else:
        _write_table(sys.stdout, table, args.format)
    return 1 if damaged else 0  # the table is whole, of every record that reads


def _write_table(file: TextIO, table: list, form: str) -> None:
    if form == "csv":
        csv.writer(file, lineterminator="\n").writerows(csv_rows(table))
    else:
        for record in jsonl_records(table):
            file.write(json.dumps(record, ensure_ascii=False) + "\n")
