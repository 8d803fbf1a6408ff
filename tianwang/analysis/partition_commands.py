"""`tianwang partition plan | simulate` (not built yet: a placeholder)."""

from __future__ import annotations

from typing import Any


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("partition", help="(not built yet)")
    parser.set_defaults(func=lambda args: parser.error("not built yet"))
