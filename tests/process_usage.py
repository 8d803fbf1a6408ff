"""Run a command and read what it used: its exit code, its own peak RSS and its CPU seconds.

Linux's ru_maxrss of a process counts the memory it had before its exec. A crawl started
straight from a pytest worker (vfork, then exec) reports the worker's own peak when that is
higher: 546 MB of a worker against the crawl's 185 (a bare `python -c pass` started from a
parent holding 500 MB reports 513). So a small launcher forks the command, whose peak then
starts from the launcher's few MB, waits for it and writes what wait4 says of it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import IO, NamedTuple

_LAUNCHER = """import os, sys
pid = os.fork()
if pid == 0:
    os.execvp(sys.argv[2], sys.argv[2:])
_pid, status, usage = os.wait4(pid, 0)
with open(sys.argv[1], "w") as out:
    out.write(f"{usage.ru_maxrss} {usage.ru_utime + usage.ru_stime}")
sys.exit(os.waitstatus_to_exitcode(status))
"""


class Usage(NamedTuple):
    returncode: int
    max_rss_kb: int  # the command's own peak RSS
    cpu_seconds: float  # user and system


def run_measured(command: list[str], cwd: Path | str, env: dict[str, str] | None,
                 output: IO[bytes] | None, timeout: float | None = None) -> Usage:
    """Run the command, its stdout and stderr into `output`. Past `timeout` seconds (or on
    Ctrl-C) it is killed with its launcher, their own process group, and the error raised."""
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "usage"
        proc = subprocess.Popen([sys.executable, "-c", _LAUNCHER, str(report), *command],
                                cwd=cwd, env=env, stdout=output, stderr=output,
                                start_new_session=True)
        try:
            proc.wait(timeout)
        except BaseException:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            raise
        max_rss, cpu = report.read_text().split()
    return Usage(proc.returncode, int(max_rss), float(cpu))
