"""`tianwang importance`: rank stored pages by the Tianwang paper's importance features
(tianwang.analysis.importance)."""

from __future__ import annotations

import argparse
import csv
import json
import sys
from pathlib import Path
from typing import TextIO

from tianwang.analysis.globaldedup import DONE_FILE, WORK_DIR
from tianwang.analysis.importance import Coefficients, csv_rows, importance, jsonl_records
from tianwang.formats.record import RecordError

IMPORTANCE_HELP = """\
Rank every stored page of DIR by the Tianwang paper's features: in-degree, the parent's in-degree,
mirror degree and directory depth, combined by default as
  weight = BASE + A*ln(1+indegree) + B*ln(1+parent_indegree) + C*ln(mirror) - D*depth
(BASE=10, A=1, B=0.5, C=1, D=1: with no links and no mirrors the weight is the crawl's URL
weight; e times the in-links or copies is worth one directory level; the parent's in-degree
is indirect evidence, worth half). In-degree counts distinct stored pages linking to a page,
self-links excluded. The parent is the page that first linked to it (links.tsv)."""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "importance", help="rank stored pages by the Tianwang paper's importance features",
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
