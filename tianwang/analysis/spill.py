"""Sectioned spill files: the work files global dedup passes from one phase to the next.

A spill file holds N sections (one per MD5 shard, or per output bucket) of Python values,
then an index of where each section starts. It is written to `<name>.tmp` and renamed when
complete, so a file with its final name is always whole: an interrupted run never leaves a
half file that a rerun would trust. Reading sections i..j is one contiguous read.
marshal is the encoding: it is the fastest one Python has for tuples of str, bytes and int,
and these files never outlive the run that wrote them (nor leave this machine).
"""

from __future__ import annotations

import marshal
import os
import struct
from pathlib import Path
from typing import Any

MAGIC = b"TWSPILL1"
_TRAILER = struct.Struct("<8sQ")  # magic, number of sections


class SpillError(Exception):
    """A spill file that is not whole (it should never exist under its final name)."""


def write_spill(path: str | os.PathLike[str], sections: list[Any]) -> int:
    """Write one value per section to path (atomically); return the file's size."""
    path = Path(path)
    blobs = [marshal.dumps(section) for section in sections]
    offsets = [0]
    for blob in blobs:
        offsets.append(offsets[-1] + len(blob))
    index = struct.pack(f"<{len(offsets)}Q", *offsets)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as file:
        file.writelines(blobs)
        file.write(index)
        file.write(_TRAILER.pack(MAGIC, len(blobs)))
    os.replace(tmp, path)
    return offsets[-1] + len(index) + _TRAILER.size


def _index(file: Any, path: Path) -> list[int]:
    size = file.seek(0, os.SEEK_END)
    if size < _TRAILER.size:
        raise SpillError(f"{path}: not a spill file (too short)")
    file.seek(size - _TRAILER.size)
    magic, count = _TRAILER.unpack(file.read(_TRAILER.size))
    if magic != MAGIC:
        raise SpillError(f"{path}: not a spill file (bad trailer)")
    width = 8 * (count + 1)
    file.seek(size - _TRAILER.size - width)
    return list(struct.unpack(f"<{count + 1}Q", file.read(width)))


def section_sizes(path: str | os.PathLike[str]) -> list[int]:
    """The size in bytes of each section (what a reader of it will load)."""
    with open(path, "rb") as file:
        offsets = _index(file, Path(path))
    return [end - start for start, end in zip(offsets, offsets[1:], strict=False)]


def read_sections(path: str | os.PathLike[str], first: int, stop: int) -> list[Any]:
    """The values of sections first..stop-1, read in one go."""
    with open(path, "rb") as file:
        offsets = _index(file, Path(path))
        if not 0 <= first <= stop < len(offsets):
            raise SpillError(f"{path}: no sections {first}..{stop - 1}")
        file.seek(offsets[first])
        blob = file.read(offsets[stop] - offsets[first])
    base = offsets[first]
    return [
        marshal.loads(blob[offsets[i] - base : offsets[i + 1] - base]) for i in range(first, stop)
    ]
