"""A progress bar on a terminal, for the long offline commands (dedup, hosts, sample, stats).

A long step takes a `progress(phase, done, total)` callback, or None; the command opens
`terminal_progress()` around the step and gets a bar's callback only when stderr is a
terminal, so a pipe or a log file never fills with redrawn lines.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from typing import TextIO

Progress = Callable[[str, int, int], None]  # (phase, done, total)


class ProgressBar:
    """One line on a terminal, redrawn at most 5 times a second. A phase named in
    `byte_phases` counts bytes, and shows them in MB beside the share."""

    def __init__(self, stream: TextIO, byte_phases: Collection[str] = ()) -> None:
        self.stream = stream
        self.byte_phases = byte_phases
        self.drawn = 0.0
        self.started = time.monotonic()
        self.phase = ""

    def update(self, phase: str, done: int, total: int) -> None:
        now = time.monotonic()
        if phase != self.phase:
            self.phase, self.started = phase, now
        elif now - self.drawn < 0.2 and done < total:
            return
        self.drawn = now
        share = done / total if total else 1.0
        filled = int(30 * share)
        line = f"\r{phase:6} [{'#' * filled}{'.' * (30 - filled)}] {share:6.1%}"
        if phase in self.byte_phases and now > self.started:
            line += f" {done / (1 << 20):,.0f}/{total / (1 << 20):,.0f} MB"
        self.stream.write(line + "   ")
        self.stream.flush()

    def close(self) -> None:
        if self.drawn:
            self.stream.write("\n")
            self.stream.flush()


@contextmanager
def terminal_progress(byte_phases: Collection[str] = ()) -> Iterator[Progress | None]:
    """A bar's callback when stderr is a terminal, else None. The bar's line is ended on the
    way out, so a message printed after the block (an error too) starts a line of its own."""
    if not sys.stderr.isatty():
        yield None
        return
    bar = ProgressBar(sys.stderr, byte_phases)
    try:
        yield bar.update
    finally:
        bar.close()
