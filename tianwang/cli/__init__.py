"""The tianwang command: test web, record tools and the demo crawl.

Each package registers its own subcommands, so this module only assembles them.
"""

from __future__ import annotations

import argparse
import sys


def build_parser() -> argparse.ArgumentParser:
    from tianwang.cli import changes as changes_commands
    from tianwang.cli import dedup as analysis_commands
    from tianwang.cli import demo
    from tianwang.cli import feed as feed_command
    from tianwang.cli import firstcrawl as first_crawl_command
    from tianwang.cli import frontier as frontier_command
    from tianwang.cli import hosts as collection_commands
    from tianwang.cli import importance as importance_command
    from tianwang.cli import partition as partition_commands
    from tianwang.cli import records as record_commands
    from tianwang.cli import report as report_command
    from tianwang.cli import sample as sample_command
    from tianwang.cli import stats as stats_command
    from tianwang.cli import testweb as testweb_commands

    parser = argparse.ArgumentParser(prog="tianwang", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    testweb_commands.register(sub)
    record_commands.register(sub)
    analysis_commands.register(sub)
    importance_command.register(sub)
    changes_commands.register(sub)
    partition_commands.register(sub)
    collection_commands.register(sub)
    sample_command.register(sub)
    stats_command.register(sub)
    demo.register(sub)
    first_crawl_command.register(sub)
    feed_command.register(sub)
    frontier_command.register(sub)
    report_command.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except BrokenPipeError:  # `tianwang records ls DIR | head` is normal use
        return 0


if __name__ == "__main__":
    sys.exit(main())
