"""`tianwang sample`: the CWT200g thesis's size-stratified sample of a record tree
(collection.sample)."""

from __future__ import annotations

import argparse
import sys

from tianwang.collection import sample as sampling
from tianwang.progress import terminal_progress


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "sample", help="the CWT200g thesis's size-stratified sample of a record tree",
        description=sampling.__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dir", metavar="DIR", help="record tree (e.g. a tianwang dedup output)")
    parser.add_argument("--out", required=True, metavar="OUT", help="new directory to write")
    parser.add_argument("--seed", type=int, default=0,
                        help="seed of the draw (default 0); the same seed, the same sample")
    parser.add_argument("--force", action="store_true", help="replace OUT if it exists")
    parser.set_defaults(func=cmd_sample)


def cmd_sample(args: argparse.Namespace) -> int:
    try:
        with terminal_progress() as progress:
            result = sampling.sample(args.dir, args.out, args.seed, args.force, progress)
    except sampling.SampleError as exc:
        print(f"tianwang sample: {exc}", file=sys.stderr)
        return 1
    drawn = sum(len(band.drawn) for band in result.bands)
    distinct = sum(len(band.sizes) for band in result.bands)
    print(f"sample: kept {result.kept_sites} of {result.sites} sites, {result.kept_pages} of "
          f"{result.pages} pages ({drawn} of {distinct} distinct sizes in "
          f"{len(result.bands)} groups of {sampling.GROUP}, seed {args.seed}), "
          f"{result.mirror_lines} mirror lines -> {args.out}")
    return 0
