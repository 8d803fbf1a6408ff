"""`tianwang hosts count | clean | dealias | filter | homepage`, `tianwang sample`,
`tianwang stats`.

Each step's module registers its own subcommand; this module only assembles them.
"""

from __future__ import annotations

from typing import Any


def register(subparsers: Any) -> None:
    from tianwang.collection import (
        dealias,
        homepage,
        hostcount,
        hostnames,
        sample,
        spamfilter,
        stats,
    )

    hosts = subparsers.add_parser("hosts", help="host lists for a collection: D0 to D4")
    steps = hosts.add_subparsers(dest="hosts_command", required=True)
    for step in (hostcount, hostnames, dealias, spamfilter, homepage):
        step.register(steps)
    sample.register(subparsers)
    stats.register(subparsers)
