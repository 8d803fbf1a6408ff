"""`tianwang dedup`: global dedup of record trees by body MD5 (tianwang.analysis.globaldedup)."""

from __future__ import annotations

import argparse
import os
import sys

from tianwang.analysis.globaldedup import DONE_FILE, DedupError, Report, dedup
from tianwang.progress import terminal_progress

DEDUP_HELP = """\
Keep one record per body MD5 across the input trees (several crawls, several machines), as
the CWT200g thesis built CWT200g: sharded by MD5 mod 1024, on all cores, in bounded memory. The kept
url of a body is the shortest of those stored with it (then the first in code point order);
every other url with that body, and every line of the inputs' mirror tables, goes to
OUT_DIR/mirrors.tsv pointing at it. Records are copied byte for byte, sorted by url, with
their links.tsv lines. Interrupted (even by kill -9), the same command resumes; OUT_DIR is
complete once OUT_DIR/dedup.json exists."""


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


