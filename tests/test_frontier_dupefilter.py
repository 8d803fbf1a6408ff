"""The fixed-size Bloom filter: membership, error rate, checkpoints."""

from __future__ import annotations

import hashlib
import logging
from pathlib import Path

import pytest

from tianwang.frontier.dupefilter import BloomDupeFilter


def fp(i: int) -> bytes:
    return hashlib.sha1(str(i).encode()).digest()


def test_added_fingerprints_are_seen_and_false_positives_stay_near_the_rate() -> None:
    bloom = BloomDupeFilter(20_000, 1e-3)
    for i in range(20_000):
        bloom.add(fp(i))
    assert all(fp(i) in bloom for i in range(20_000))
    false = sum(fp(i) in bloom for i in range(20_000, 120_000))
    assert false / 100_000 < 2e-3  # nominal 1e-3 at capacity


def test_checkpoint_round_trip_and_covered_count(tmp_path: Path) -> None:
    bloom = BloomDupeFilter(1000, 1e-6)
    for i in range(100):
        bloom.add(fp(i))
    bloom.save(tmp_path / "bloom.bin", covered=123)
    again = BloomDupeFilter(1000, 1e-6)
    assert again.load(tmp_path / "bloom.bin") == 123
    assert all(fp(i) in again for i in range(100)) and fp(100) not in again
    assert not (tmp_path / "bloom.bin.partial").exists()


def test_a_checkpoint_of_another_size_is_ignored(tmp_path: Path) -> None:
    BloomDupeFilter(1000, 1e-6).save(tmp_path / "bloom.bin", covered=5)
    assert BloomDupeFilter(5000, 1e-6).load(tmp_path / "bloom.bin") == 0
    assert BloomDupeFilter(1000, 1e-6).load(tmp_path / "missing.bin") == 0


def test_past_its_size_the_filter_warns_once_and_keeps_working(
    caplog: pytest.LogCaptureFixture,
) -> None:
    bloom = BloomDupeFilter(100, 1e-3)
    with caplog.at_level(logging.WARNING):
        for i in range(300):
            bloom.add(fp(i))
    assert all(fp(i) in bloom for i in range(300))
    assert len([r for r in caplog.records if "TIANWANG_EXPECTED_URLS" in r.message]) == 1


@pytest.mark.parametrize("damage", ["cut", "garbage", "huge_header", "half"])
def test_a_damaged_checkpoint_is_rebuilt_from_the_log(tmp_path: Path, damage: str,
                                                      caplog: pytest.LogCaptureFixture) -> None:
    import struct

    path = tmp_path / "bloom.bin"
    saved = BloomDupeFilter(1000, 1e-6)
    saved.add(b"\x01" * 20)
    saved.save(path, 7)
    blob = path.read_bytes()
    path.write_bytes({
        "cut": blob[:5],
        "garbage": bytes(range(256)) * 20,
        # pybloom-live would size its filter by this header: petabytes
        "huge_header": blob[:16] + struct.pack("<dQQQQ", 1e-6, 2**40, 2**40, 2**40, 1),
        "half": blob[: len(blob) // 2],
    }[damage])
    loaded = BloomDupeFilter(1000, 1e-6)
    with caplog.at_level(logging.INFO):
        assert loaded.load(path) == 0
    assert b"\x01" * 20 not in loaded and "rebuilt from the log" in caplog.text
