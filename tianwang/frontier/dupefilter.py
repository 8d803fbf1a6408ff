"""Request dedup: pybloom-live Bloom filters of request fingerprints, a stage more each time
the last one is full.

The first stage is sized for TIANWANG_EXPECTED_URLS at TIANWANG_BLOOM_ERROR_RATE: about
1.44 * log2(1/error_rate) bits a url, 36 MB for 10 million urls at 1e-6. A crawl that sees
more urls does not overfill it: a fixed filter past its size refuses new urls as seen more
and more often (at 1e-6, 0.3% of them at twice its size, 28% at four times, nearly all at
ten), and a month-long crawl would starve without a word. Each new stage holds twice the
urls of the one before at half its error rate (Almeida et al., "Scalable Bloom Filters"),
so the rate of the whole stays under twice the setting's, and the memory follows the urls
seen; each stage added is said, with the memory in all. pybloom-live's own scalable filter
tightens by 0.9 a stage, and its error rates add up to ten times the first's (0.49%
measured at a nominal 0.1%).

Under JOBDIR the filter is a cache of the frontier's log: a checkpoint file (written whole,
synced, then renamed into place) records how many log records it covers, and resuming adds
the fingerprints of the records after those. A url whose push a kill lost is therefore never
in the filter either. Once the log is compacted (requestlog.py), the checkpoint is the only
record of the urls done before.
"""

from __future__ import annotations

import logging
import math
import os
import struct
from pathlib import Path
from typing import BinaryIO

from pybloom_live import BloomFilter

logger = logging.getLogger(__name__)

_CHECKPOINT = struct.Struct("<8sQ")  # magic, log records covered
_MAGIC_V1 = b"twbloom1"  # one filter, to the file's end
_MAGIC = b"twbloom2"  # a count of stages, then each one as pybloom-live writes it
_STAGES = struct.Struct("<Q")
_STAGE_HEADER = struct.Struct(BloomFilter.FILE_FMT)  # error rate, slices, bits a slice, ...
MAX_STAGES = 48  # 2**47 times the first stage's urls: a count past it is damage


class BloomDupeFilter:
    """Fingerprints seen so far, in Bloom filter stages of doubling capacity."""

    def __init__(self, expected: int, error_rate: float) -> None:
        self.expected = expected
        self.error_rate = error_rate
        self.stages = [BloomFilter(capacity=expected, error_rate=error_rate)]

    def __contains__(self, fingerprint: bytes) -> bool:
        key = fingerprint.hex()
        for stage in self.stages:  # a loop, not any(): asked once a link
            if key in stage:
                return True
        return False

    def add(self, fingerprint: bytes) -> None:
        last = self.stages[-1]
        if last.count >= last.capacity:
            last = self._grow()
        last.add(fingerprint.hex(), skip_check=True)

    def _grow(self) -> BloomFilter:
        last = self.stages[-1]
        stage = BloomFilter(capacity=2 * last.capacity, error_rate=last.error_rate / 2)
        self.stages.append(stage)
        logger.warning(
            "The request Bloom filter is full at %d urls (TIANWANG_EXPECTED_URLS=%d): a stage "
            "for %d more added, %d MB in all; its false positive rate stays under %g",
            len(self) - stage.count, self.expected, stage.capacity, self.memory >> 20,
            2 * self.error_rate)
        return stage

    def __len__(self) -> int:
        return sum(stage.count for stage in self.stages)

    @property
    def memory(self) -> int:
        """Bytes of the stages' bits."""
        return sum(_bytes_of(stage) for stage in self.stages)

    def save(self, path: Path, covered: int) -> None:
        """Write the filter and the count of log records it covers, atomically."""
        partial = path.with_name(path.name + ".partial")
        try:
            with open(partial, "wb") as f:
                f.write(_CHECKPOINT.pack(_MAGIC, covered) + _STAGES.pack(len(self.stages)))
                for stage in self.stages:
                    stage.tofile(f)
                f.flush()
                os.fsync(f.fileno())  # once the log is compacted, this is the urls' only copy
            os.replace(partial, path)
        except OSError:  # a full disk: the checkpoint before stays, and the log covers the rest
            partial.unlink(missing_ok=True)
            raise

    def load(self, path: Path) -> int:
        """Read a checkpoint, its stages as it was saved with (a job resumed with another
        TIANWANG_EXPECTED_URLS keeps what it knows); the records it covers (0 if none, or
        if it does not read: the log rebuilds the filter)."""
        if not path.exists():
            return 0
        try:
            covered, stages = _read(path)
        except (OSError, ValueError, struct.error) as error:
            logger.warning("Bloom filter checkpoint %s cannot be read (%s): rebuilt from the "
                           "log", path, error)
            return 0
        self.stages = stages
        return covered


def _read(path: Path) -> tuple[int, list[BloomFilter]]:
    """The records a checkpoint covers and its stages. Each stage's header is checked
    against the file before pybloom-live reads it: pybloom-live sizes what it builds by the
    header (damaged, by petabytes)."""
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        magic, covered = _CHECKPOINT.unpack(f.read(_CHECKPOINT.size))
        if magic == _MAGIC_V1:
            count = 1
        elif magic == _MAGIC:
            (count,) = _STAGES.unpack(f.read(_STAGES.size))
        else:
            raise ValueError("not a checkpoint")
        if not 1 <= count <= MAX_STAGES:
            raise ValueError(f"{count} stages")
        stages = [_read_stage(f, size) for _ in range(count)]
        if f.tell() != size:
            raise ValueError(f"{size} bytes, {f.tell()} expected")
    return covered, stages


def _read_stage(f: BinaryIO, size: int) -> BloomFilter:
    start = f.tell()
    header = f.read(_STAGE_HEADER.size)
    rate, slices, bits_per_slice, capacity, count = _STAGE_HEADER.unpack(header)
    bits = slices * bits_per_slice
    length = _STAGE_HEADER.size + (bits + 7) // 8
    if not (0 < rate < 1 and slices and bits_per_slice and capacity) or count > bits \
            or start + length > size:
        raise ValueError(f"a stage's header does not fit the file ({slices} x {bits_per_slice} "
                         f"bits)")
    f.seek(start)
    return BloomFilter.fromfile(f, length)


def _bytes_of(stage: BloomFilter) -> int:
    return math.ceil(stage.num_bits / 8)
