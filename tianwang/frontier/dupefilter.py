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
                f.flush()
                os.fsync(f.fileno())  # once the log is compacted, this is the urls' only copy
            os.replace(partial, path)
        except OSError:  # a full disk: the checkpoint before stays, and the log covers the rest
            partial.unlink(missing_ok=True)
            raise

    def load(self, path: Path) -> int:
        """Read a checkpoint made with the same size; the records it covers (0 if none, or
        if it does not read: the log rebuilds the filter)."""
        if not path.exists():
            return 0
        try:
            covered = self._read(path)
        except (OSError, ValueError, struct.error) as error:
            logger.warning("Bloom filter checkpoint %s cannot be read (%s): rebuilt from the "
                           "log", path, error)
            return 0
        if covered is None:
            logger.info("Bloom filter checkpoint %s has another size: rebuilt from the log", path)
            return 0
        return covered

    def _read(self, path: Path) -> int | None:
        """The records a checkpoint covers, its filter now this one's; None if it was made
        for another size. Its header is checked against this filter's before pybloom-live
        reads it: pybloom-live sizes what it builds by the header (damaged, by petabytes)."""
        bloom, header = self.bloom, struct.Struct(BloomFilter.FILE_FMT)
        expected = _CHECKPOINT.size + header.size + (bloom.num_bits + 7) // 8
        with open(path, "rb") as f:
            magic, covered = _CHECKPOINT.unpack(f.read(_CHECKPOINT.size))
            _rate, slices, bits_per_slice, _capacity, count = header.unpack(f.read(header.size))
            if magic != _MAGIC:
                raise ValueError("not a checkpoint")
            if (slices, bits_per_slice) != (bloom.num_slices, bloom.bits_per_slice):
                return None
            size = os.fstat(f.fileno()).st_size
            if size != expected or count > bloom.num_bits:
                raise ValueError(f"{size} bytes, {expected} expected")
            f.seek(_CHECKPOINT.size)
            loaded = BloomFilter.fromfile(f)
        loaded.capacity = max(loaded.capacity, bloom.capacity)
        self.bloom = loaded
        return covered
