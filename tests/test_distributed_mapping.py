"""Two-phase mapping: a stable host hash, a balanced table, and few buckets moved."""

from __future__ import annotations

import subprocess
import sys
from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tianwang.distributed.mapping import bucket_of, moved, rebalance

HOSTS = [f"www.host{i}.example.com" for i in range(2000)]


def test_a_host_lands_in_the_same_bucket_in_any_process_and_any_case() -> None:
    code = (
        "from tianwang.distributed.mapping import bucket_of;"
        f"print([bucket_of(h, 1024) for h in {HOSTS[:50]!r}])"
    )
    runs = [
        subprocess.run(
            [sys.executable, "-c", code],
            env={"PYTHONHASHSEED": seed, "PATH": "/usr/bin:/bin"},
            capture_output=True,
            text=True,
            check=True,
            cwd=str(__import__("pathlib").Path(__file__).parent.parent),
        ).stdout
        for seed in ("1", "2")
    ]
    assert runs[0] == runs[1]
    assert all(bucket_of(h.upper(), 1024) == bucket_of(h, 1024) for h in HOSTS[:50])


def test_hosts_spread_over_the_buckets() -> None:
    counts = Counter(bucket_of(host, 16) for host in HOSTS)
    assert len(counts) == 16
    assert max(counts.values()) < 2 * len(HOSTS) / 16


def balanced(table: list[str], nodes: list[str]) -> bool:
    held = Counter(table)
    return set(held) == set(nodes) and max(held.values()) - min(held.values()) <= 1


def test_a_first_table_is_balanced_over_the_nodes() -> None:
    table = rebalance([None] * 1024, ["b", "a", "c"])
    assert balanced(table, ["a", "b", "c"])


def test_a_node_leaving_moves_only_its_own_buckets() -> None:
    before = rebalance([None] * 1024, ["a", "b", "c"])
    after = rebalance(before, ["a", "c"])
    assert balanced(after, ["a", "c"])
    assert {before[bucket] for bucket in moved(before, after)} == {"b"}


def test_a_node_joining_takes_just_its_share() -> None:
    before = rebalance([None] * 1024, ["a", "b"])
    after = rebalance(before, ["a", "b", "c"])
    assert balanced(after, ["a", "b", "c"])
    assert {after[bucket] for bucket in moved(before, after)} == {"c"}
    assert len(moved(before, after)) == Counter(after)["c"]


def test_no_live_node_is_an_error() -> None:
    with pytest.raises(ValueError, match="no live node"):
        rebalance(["a"] * 4, [])


@given(
    st.integers(1, 64),
    st.lists(st.sampled_from("abcdef"), min_size=1, unique=True),
    st.lists(st.sampled_from("abcdef"), min_size=1, unique=True),
)
def test_any_change_of_nodes_keeps_the_table_balanced(
    buckets: int, first: list[str], second: list[str]
) -> None:
    before = rebalance([None] * buckets, first)
    after = rebalance(before, second)
    held = Counter(after)
    assert set(held) <= set(second)
    assert max(held.values()) - min(held.get(node, 0) for node in second) <= 1
    # A bucket moves only off a node gone or overloaded: never between two nodes kept at share.
    for bucket in moved(before, after):
        owner = before[bucket]
        assert owner not in second or Counter(before)[owner] > held[owner]
