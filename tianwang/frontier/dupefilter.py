"""Request dedup: a fixed-size pybloom-live Bloom filter of request fingerprints.

Fixed size, not pybloom-live's scalable filter, whose error rates add up (0.49% measured at
a nominal 0.1%). Memory is about 1.44 * log2(1/error_rate) bits per expected url: 36 MB for
10 million urls at 1e-6. Past the expected count the filter keeps working and its error
rate rises; a warning says so once.

Under JOBDIR the filter is a cache of the frontier's log: a checkpoint file (written whole,
then renamed into place) records how many log records it covers, and resuming adds the
fingerprints of the records after those. A url whose push a kill lost is therefore never
in the filter either.
"""

from __future__ import annotations

import logging
import os
import struct
from pathlib import Path

from pybloom_live import BloomFilter

logger = logging.getLogger(__name__)

_CHECKPOINT = struct.Struct("<8sQ")
_MAGIC = b"twbloom1"


class BloomDupeFilter:
    """Fingerprints seen so far, in a Bloom filter of fixed capacity and error rate."""

    def __init__(self, expected: int, error_rate: float) -> None:
        self.expected = expected
        self.error_rate = error_rate
        self.bloom = BloomFilter(capacity=expected, error_rate=error_rate)
        self._warned = False

    def __contains__(self, fingerprint: bytes) -> bool:
        return fingerprint.hex() in self.bloom

    def add(self, fingerprint: bytes) -> None:
        if self.bloom.count >= self.expected and not self._warned:
            self._warned = True
            logger.warning(
                "More than TIANWANG_EXPECTED_URLS=%d urls seen: the Bloom filter's false "
                "positive rate now rises above %g and new urls may be dropped as seen",
                self.expected,
                self.error_rate,
            )
        if self.bloom.count >= self.bloom.capacity:
            self.bloom.capacity = 2 * self.bloom.capacity  # pybloom-live refuses past it
        self.bloom.add(fingerprint.hex(), skip_check=True)

    def __len__(self) -> int:
        return self.bloom.count

    def save(self, path: Path, covered: int) -> None:
        """Write the filter and the count of log records it covers, atomically."""
        partial = path.with_name(path.name + ".partial")
        try:
            with open(partial, "wb") as f:
                f.write(_CHECKPOINT.pack(_MAGIC, covered))
                self.bloom.tofile(f)
            os.replace(partial, path)
        except OSError:  # a full disk: the checkpoint before stays, and the log covers the rest
            partial.unlink(missing_ok=True)
            raise

    def load(self, path: Path) -> int:
        """Read a checkpoint made with the same size; the records it covers (0 if none)."""
        if not path.exists():
            return 0
        with open(path, "rb") as f:
            magic, covered = _CHECKPOINT.unpack(f.read(_CHECKPOINT.size))
            bloom = BloomFilter.fromfile(f)
        if magic != _MAGIC or (bloom.num_bits, bloom.num_slices) != (
            self.bloom.num_bits,
            self.bloom.num_slices,
        ):
            logger.info("Bloom filter checkpoint %s has another size: rebuilt from the log", path)
            return 0
        bloom.capacity = max(bloom.capacity, self.bloom.capacity)
        self.bloom = bloom
        return covered
