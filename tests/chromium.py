"""Debian's Chromium, headless, for the tests that look at a page as a person would.

Installed with apt the first time (as root, under the file lock the Redis install uses:
test workers may all ask at once).
"""

from __future__ import annotations

import fcntl
import shutil
import subprocess
from pathlib import Path

from tests.redis_server import APT_ENV, APT_LOCK


def ensure_chromium() -> str:
    found = shutil.which("chromium")
    if found:
        return found
    with open(APT_LOCK, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not shutil.which("chromium"):
            install = ["apt-get", "install", "-y", "--no-install-recommends", "chromium"]
            if subprocess.run(install, env=APT_ENV, capture_output=True).returncode != 0:
                subprocess.run(["apt-get", "update"], env=APT_ENV, capture_output=True,
                               check=True)
                subprocess.run(install, env=APT_ENV, capture_output=True, check=True)
    found = shutil.which("chromium")
    assert found, "chromium is not on PATH after apt-get install"
    return found


def headless(page: Path, *flags: str, size: tuple[int, int] = (1200, 2400)) -> str:
    """Run headless Chromium on a local page with `flags`; its stdout."""
    command = [ensure_chromium(), "--headless", "--no-sandbox", "--disable-gpu",
               "--hide-scrollbars", "--no-first-run", f"--window-size={size[0]},{size[1]}",
               "--virtual-time-budget=5000", *flags, page.resolve().as_uri()]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout
