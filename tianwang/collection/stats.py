"""`tianwang stats` (not built yet: a placeholder so the command tree assembles)."""

from __future__ import annotations

from typing import Any


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("stats", help="(not built yet)")
    parser.set_defaults(func=lambda args: parser.error("not built yet"))
