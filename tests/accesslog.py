"""The test web's access log, read while the web may still be serving.

The server writes and flushes one JSON line per request, yet a reader can see a line cut
short: Linux copies a write into the page cache a page at a time and moves the file's end
after each page, so a line that crosses a 4 KB boundary shows in part until its write ends.
Only lines that end in a newline are read.
"""

from __future__ import annotations

import json
from pathlib import Path


def complete_lines(path: Path) -> list[str]:
    text = path.read_text(encoding="utf-8")
    return text[: text.rfind("\n") + 1].splitlines()


def line_count(path: Path) -> int:
    return len(complete_lines(path))


def served_since(path: Path, start: int) -> list[dict]:
    """The requests served after the first `start` lines, in serving order."""
    return [json.loads(line) for line in complete_lines(path)[start:]]


def urls_since(path: Path, start: int) -> list[str]:
    """The urls served after the first `start` lines, in serving order."""
    return [line["url"] for line in served_since(path, start)]
