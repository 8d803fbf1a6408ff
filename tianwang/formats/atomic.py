"""Writing a file whole or not at all: a tool never leaves a half file in place of a good one.

Pure python.
"""

from __future__ import annotations

import os
from pathlib import Path


def write_atomic(path: Path, data: bytes) -> None:
    """A small file, whole or not at all."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)
