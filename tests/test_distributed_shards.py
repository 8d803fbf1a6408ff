"""The split of a job's keys into shards: tags on the wanted slots, takes split by what each
shard holds, MD5 claims spread evenly, the job's tags agreed in its home."""

from __future__ import annotations

import hashlib
import random

import pytest
import redis

from tianwang.distributed.shards import (
    agree_tags,
    even_ranges,
    md5_shard,
    prefix_of,
    split_take,
    tags_for,
    wanted_ranges,
)


def crc16_xmodem(data: bytes) -> int:
    """The CRC Redis Cluster hashes keys with (CRC-16/XMODEM, bit by bit), written from
    the cluster specification as a reference independent of redis-py's table."""
    crc = 0
    for byte in data:
        crc ^= byte << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) if crc & 0x8000 else crc << 1
            crc &= 0xFFFF
    return crc


def slot_of(prefix: str) -> int:
    tag = prefix[prefix.index("{") + 1:prefix.index("}")]
    return crc16_xmodem(tag.encode()) % 16384


def test_the_reference_crc_gives_the_specifications_example() -> None:
    assert crc16_xmodem(b"123456789") == 0x31C3  # the check value of CRC-16/XMODEM


def test_each_tag_falls_in_its_masters_slots() -> None:
    ranges = [(0, 5460), (5461, 10922), (10923, 16383)]  # redis-cli's three masters
    tags = tags_for("cn1", ranges)
    assert len(set(tags)) == 3
    for tag, (low, high) in zip(tags, ranges, strict=True):
        assert low <= slot_of(prefix_of(tag)) <= high
    narrow = [(100, 110), (16000, 16001)]  # uneven ranges are found too
    for tag, (low, high) in zip(tags_for("j", narrow), narrow, strict=True):
        assert low <= slot_of(prefix_of(tag)) <= high


def test_one_range_is_the_jobs_home_and_the_ranges_cover_every_slot() -> None:
    assert tags_for("cn1", [(0, 16383)]) == ["cn1"]
    assert prefix_of("cn1") == "tianwang:{cn1}:"
    for count in (1, 3, 7):
        ranges = even_ranges(count)
        assert ranges[0][0] == 0 and ranges[-1][1] == 16383
        assert all(a[1] + 1 == b[0] for a, b in zip(ranges, ranges[1:], strict=False))


def test_the_wanted_ranges_go_round_the_masters() -> None:
    masters = [(0, 8191), (8192, 16383)]
    assert wanted_ranges(0, masters) == masters  # one shard a master
    assert wanted_ranges(5, masters) == [masters[i % 2] for i in range(5)]
    assert wanted_ranges(0, None) == [(0, 16383)]  # one redis-server: one shard
    assert len(wanted_ranges(4, None)) == 4


@pytest.mark.parametrize("seed", range(20))
def test_a_take_is_split_in_proportion_to_each_shards_queue(seed: int) -> None:
    rng = random.Random(seed)
    queued = [rng.choice([0, 0, 1, 5, 100, 1000]) for _ in range(rng.randint(1, 6))]
    count = rng.randint(0, 200)
    counts = split_take(count, queued)
    assert sum(counts) == count
    total = sum(queued)
    for got, size in zip(counts, queued, strict=True):
        exact = count * size / total if total else count / len(queued)
        assert abs(got - exact) < 1  # largest remainders: within one of the exact share
        if total and size == 0:
            assert got == 0


def test_md5_claims_spread_evenly_over_shards() -> None:
    counts = [0, 0, 0]
    for i in range(30_000):
        counts[md5_shard(hashlib.md5(str(i).encode()).digest(), 3)] += 1
    assert all(9_500 < c < 10_500 for c in counts), counts


def test_the_first_nodes_tags_hold_for_every_later_node(redis_server) -> None:
    client = redis.Redis.from_url(redis_server.url)
    assert agree_tags(client, "agree1", ["agree1:0.0", "agree1:1.4"]) == ["agree1:0.0",
                                                                          "agree1:1.4"]
    assert agree_tags(client, "agree1", ["agree1"]) == ["agree1:0.0", "agree1:1.4"]
    # A job begun before shards (its keys under its home) keeps its one shard.
    client.set(prefix_of("agree2") + "seq", 40)
    assert agree_tags(client, "agree2", ["agree2:0.0", "agree2:1.4"]) == ["agree2"]
