"""tests/process_usage.py: a command's own peak memory, whatever its parent holds."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from tests.process_usage import run_measured

ROOT = Path(__file__).resolve().parent.parent
HOLD = "x = bytearray({mb} << 20); x[::4096] = b'1' * len(x[::4096])"


def measured_from_a_parent_holding(mb: int, child: str) -> dict:
    """run_measured called in a process that holds `mb` MB itself (not this worker)."""
    script = (f"{HOLD.format(mb=mb)}\nimport json, sys\n"
              "from tests.process_usage import run_measured\n"
              f"usage = run_measured([sys.executable, '-c', {child!r}], '.', None, None)\n"
              "print(json.dumps(usage._asdict()))")
    out = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True,
                         text=True, check=True).stdout
    return json.loads(out)


def test_a_commands_peak_is_its_own_not_its_parents() -> None:
    # Started straight from a parent of 400 MB, a child doing nothing reported over 400 MB.
    idle = measured_from_a_parent_holding(400, "pass")
    assert idle["returncode"] == 0 and idle["max_rss_kb"] < 100 << 10
    busy = measured_from_a_parent_holding(400, HOLD.format(mb=150) + "\nraise SystemExit(3)")
    assert busy["returncode"] == 3 and 150 << 10 <= busy["max_rss_kb"] < 250 << 10


def test_a_command_past_its_timeout_is_killed_with_its_launcher(tmp_path: Path) -> None:
    token = f"process-usage-{uuid.uuid4().hex}"  # names the child in /proc while it lives
    child = f"import time; time.sleep(60)  # {token}"
    with open(tmp_path / "out", "wb") as out, pytest.raises(subprocess.TimeoutExpired):
        run_measured([sys.executable, "-c", child], tmp_path, None, out, timeout=1)
    # The launcher and its child are killed before the error comes: none left, at once.
    left = [cmdline for cmdline in Path("/proc").glob("[0-9]*/cmdline")
            if token in _read(cmdline)]
    assert left == []


def _read(path: Path) -> str:
    try:
        return path.read_bytes().decode(errors="replace")
    except OSError:  # the process ended while the listing was read
        return ""
