"""Run the tianwang command as a user does: at a terminal (a pty: progress bars are drawn
only there), or in this process for the many quick error cases."""

from __future__ import annotations

import os
import pty
import subprocess
import sys

import pytest

from tests.conftest import ROOT
from tianwang.cli import main


def on_terminal(*args: str) -> tuple[int, bytes, bytes]:
    """Run `tianwang ARGS` with stderr on a terminal: exit code, stdout, what the terminal
    showed."""
    screen, terminal = pty.openpty()
    run = subprocess.Popen([sys.executable, "-m", "tianwang.cli", *args],
                           stdout=subprocess.PIPE, stderr=terminal,
                           env={**os.environ, "PYTHONPATH": str(ROOT)})
    os.close(terminal)
    stdout, _ = run.communicate(timeout=120)
    shown = b""
    while True:
        try:
            chunk = os.read(screen, 65536)
        except OSError:  # the terminal's other end is closed: all is read
            break
        if not chunk:
            break
        shown += chunk
    os.close(screen)
    return run.returncode, stdout, shown


def run_in_process(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """The command run as `tianwang ARGS` would run it, in this process (fast for error cases)."""
    try:
        code = main(list(args))
    except SystemExit as exc:  # argparse's usage errors
        code = int(exc.code or 0)
    captured = capsys.readouterr()
    return code, captured.out, captured.err
