"""Debian's Chromium, headless, for the tests that look at a page as a person would.

Installed with apt the first time (as root, under the file lock the Redis install uses:
test workers may all ask at once).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.redis_server import ensure_debian


def ensure_chromium() -> str:
    return ensure_debian("chromium", "chromium")


def headless(page: Path, *flags: str, size: tuple[int, int] = (1200, 2400)) -> str:
    """Run headless Chromium on a local page with `flags`; its stdout."""
    command = [ensure_chromium(), "--headless", "--no-sandbox", "--disable-gpu",
               "--hide-scrollbars", "--no-first-run", f"--window-size={size[0]},{size[1]}",
               "--virtual-time-budget=5000", *flags, page.resolve().as_uri()]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout
