"""The request Bloom filter: membership, its error rate within and past its size (stages),
checkpoints."""

from __future__ import annotations

import hashlib
import logging
import struct
from pathlib import Path

import pytest
from pybloom_live import BloomFilter

from tianwang.frontier.dupefilter import BloomDupeFilter


def fp(i: int) -> bytes:
    return hashlib.sha1(str(i).encode()).digest()


def false_positives(bloom, start: int, n: int = 100_000) -> float:
    """The share of n fingerprints never added that the filter says it has."""
    return sum(fp(i) in bloom for i in range(start, start + n)) / n


def filled(expected: int, error_rate: float, urls: int) -> BloomDupeFilter:
    """A filter with the fingerprints of 0 to urls - 1."""
    bloom = BloomDupeFilter(expected, error_rate)
    for i in range(urls):
        bloom.add(fp(i))
    return bloom


def test_added_fingerprints_are_seen_and_false_positives_stay_near_the_rate() -> None:
    bloom = filled(20_000, 1e-3, 20_000)
    assert all(fp(i) in bloom for i in range(20_000))
    assert false_positives(bloom, 20_000) < 2e-3  # nominal 1e-3 at capacity


def reloaded(bloom: BloomDupeFilter, path: Path, covered: int,
             expected: int, error_rate: float) -> tuple[int, BloomDupeFilter]:
    """The filter saved, then loaded into one built with these settings; what load said."""
    bloom.save(path, covered=covered)
    again = BloomDupeFilter(expected, error_rate)
    return again.load(path), again


def test_checkpoint_round_trip_and_covered_count(tmp_path: Path) -> None:
    covered, again = reloaded(filled(1000, 1e-6, 100), tmp_path / "bloom.bin", 123, 1000, 1e-6)
    assert covered == 123
    assert all(fp(i) in again for i in range(100)) and fp(100) not in again
    assert not (tmp_path / "bloom.bin.partial").exists()


def test_a_checkpoint_of_another_size_is_kept_with_its_own(tmp_path: Path) -> None:
    """A job resumed with another TIANWANG_EXPECTED_URLS: after a compaction of the log, the
    checkpoint is all that knows the urls done."""
    saved = filled(1000, 1e-6, 2)
    covered, loaded = reloaded(saved, tmp_path / "bloom.bin", 5, 5000, 1e-3)
    assert covered == 5
    assert fp(1) in loaded and loaded.memory == saved.memory
    assert BloomDupeFilter(1000, 1e-6).load(tmp_path / "missing.bin") == 0


def test_past_its_size_the_filter_adds_stages_and_its_error_rate_stays_bounded(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Ten times the expected urls: the rate of new urls taken for seen stays under twice
    the setting's, where the filter alone would take most of them for seen."""
    with caplog.at_level(logging.WARNING):
        bloom = filled(2_000, 1e-2, 20_000)
    assert all(fp(i) in bloom for i in range(20_000))
    assert len(bloom.stages) == 4  # 2,000 + 4,000 + 8,000 + 16,000
    assert false_positives(bloom, 20_000) < 2e-2
    grown = [r.message for r in caplog.records if "stage for" in r.message]
    assert len(grown) == 3 and "full at 2000 urls" in grown[0], grown
    # The ablation: one filter of the first stage's size, overfilled as before.
    alone = BloomFilter(capacity=2_000, error_rate=1e-2)
    alone.capacity = 20_000
    for i in range(20_000):
        alone.add(fp(i).hex(), skip_check=True)
    assert sum(fp(i).hex() in alone for i in range(20_000, 30_000)) / 10_000 > 0.5


def test_a_checkpoint_keeps_every_stage_and_a_resumed_filter_grows_on(tmp_path: Path) -> None:
    covered, again = reloaded(filled(500, 1e-4, 2_000), tmp_path / "bloom.bin", 9, 500, 1e-4)
    assert covered == 9
    assert len(again.stages) == 3 and len(again) == 2_000
    assert all(fp(i) in again for i in range(2_000))
    for i in range(2_000, 4_000):
        again.add(fp(i))
    assert len(again.stages) == 4 and false_positives(again, 10_000, 20_000) < 2e-4


def test_a_checkpoint_of_the_version_before_reads_as_one_stage(tmp_path: Path) -> None:
    old = BloomFilter(capacity=1000, error_rate=1e-6)
    old.add(fp(3).hex())
    with open(tmp_path / "bloom.bin", "wb") as f:
        f.write(struct.pack("<8sQ", b"twbloom1", 11))
        old.tofile(f)
    loaded = BloomDupeFilter(1000, 1e-6)
    assert loaded.load(tmp_path / "bloom.bin") == 11 and fp(3) in loaded and fp(4) not in loaded


@pytest.mark.parametrize("damage", ["cut", "garbage", "huge_header", "half"])
def test_a_damaged_checkpoint_is_rebuilt_from_the_log(tmp_path: Path, damage: str,
                                                      caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "bloom.bin"
    saved = BloomDupeFilter(1000, 1e-6)
    saved.add(b"\x01" * 20)
    saved.save(path, 7)
    blob = path.read_bytes()
    path.write_bytes({
        "cut": blob[:5],
        "garbage": bytes(range(256)) * 20,
        # pybloom-live would size its filter by this header: petabytes
        "huge_header": blob[:24] + struct.pack("<dQQQQ", 1e-6, 2**40, 2**40, 2**40, 1),
        "half": blob[: len(blob) // 2],
    }[damage])
    loaded = BloomDupeFilter(1000, 1e-6)
    with caplog.at_level(logging.INFO):
        assert loaded.load(path) == 0
    assert b"\x01" * 20 not in loaded and "rebuilt from the log" in caplog.text
