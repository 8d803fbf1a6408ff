"""pywb, the web archive replay tool, in a virtual environment of its own for the tests.

pywb 2.10 pins redis 2.x and older cryptography, which would break the crawler's own
packages: it gets its own venv, made once per machine (under a file lock: test workers may
all ask at once) in ~/.cache/tianwang-tests, and runs as a subprocess on a loopback port.
"""

from __future__ import annotations

import fcntl
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

PYWB = "pywb==2.10.0"
VENV = Path.home() / ".cache" / "tianwang-tests" / "pywb-2.10.0"
LOCK = "/tmp/tianwang-tests-pywb.lock"


def ensure_pywb() -> Path:
    """The venv's bin directory, with wb-manager and wayback; made if missing."""
    with open(LOCK, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        ready = VENV / "ready"
        if not ready.exists():
            subprocess.run([sys.executable, "-m", "venv", "--clear", str(VENV)], check=True,
                           capture_output=True)
            subprocess.run([str(VENV / "bin" / "pip"), "install", "-q", PYWB], check=True,
                           capture_output=True, timeout=600)
            ready.write_text(PYWB)
    return VENV / "bin"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def replaying(warc: Path, workdir: Path) -> Iterator[str]:
    """pywb serving `warc` as collection "crawl"; yields its base url."""
    bin_dir = ensure_pywb()
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    env.pop("PYTHONPATH", None)
    subprocess.run([str(bin_dir / "wb-manager"), "init", "crawl"], cwd=workdir, env=env,
                   check=True, capture_output=True)
    subprocess.run([str(bin_dir / "wb-manager"), "add", "crawl", str(warc)], cwd=workdir,
                   env=env, check=True, capture_output=True)
    port = _free_port()
    server = subprocess.Popen([str(bin_dir / "wayback"), "-b", "127.0.0.1", "-p", str(port)],
                              cwd=workdir, env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        _wait(base)
        yield base
    finally:
        server.terminate()
        server.wait(timeout=10)


def _wait(base: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(f"{base}/", timeout=2).close()
            return
        except (urllib.error.URLError, ConnectionError, OSError):
            time.sleep(0.2)
    raise RuntimeError("pywb did not start")
