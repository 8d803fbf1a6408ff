"""The architecture is checked, not only drawn: import-linter's contracts (pyproject.toml).

Pure modules import no Scrapy, Twisted or Redis; a module imports only from layers below its
own; no two modules of a package import each other, directly or round a loop.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

from tests.conftest import ROOT


def test_the_import_contracts_hold() -> None:
    lint = shutil.which("lint-imports") or os.path.join(os.path.dirname(sys.executable),
                                                        "lint-imports")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}  # this checkout's tianwang, not another
    result = subprocess.run([lint, "--no-cache"], cwd=ROOT, env=env, capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout
