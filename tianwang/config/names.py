"""Refusing TIANWANG_* names that are no setting.

Scrapy keeps any name it is given: `-s TIANWANG_MAX_LEVEL=1` (for TIANWANG_MAX_LEVELS) would
be stored, read by nothing, and the crawl would run with the default without a word. Every
TIANWANG_* setting has a default (tianwang/default_settings.py), so a name without one is a
mistake: the crawl stops at start naming it and the closest known name.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

from tianwang.config import SettingError

PREFIX = "TIANWANG_"
# Settings renamed: the old name stops the crawl with the new one, rather than being ignored.
RENAMED = {"TIANWANG_VALIDATE_RETRIES": "TIANWANG_VALIDATE_TRIES (attempts in all, wget -t)"}


class UnknownSettingError(SettingError):
    """A TIANWANG_* name that is no setting."""

    def __init__(self, name: str, hint: str) -> None:
        ValueError.__init__(self, f"unknown setting {name}: {hint}")
        self.name = name


def check_names(given: Iterable[str], known: Iterable[str]) -> None:
    """Raise UnknownSettingError for the first TIANWANG_* name of `given` not in `known`."""
    known = sorted(set(known))
    for name in sorted(given):
        if name.startswith(PREFIX) and name not in known:
            raise UnknownSettingError(name, _hint(name, known))


def _hint(name: str, known: list[str]) -> str:
    if name in RENAMED:
        return f"renamed, give {RENAMED[name]}"
    close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
    if close:
        return f"did you mean {close[0]}?"
    return "no such tianwang setting (they are listed in docs/settings.md)"
