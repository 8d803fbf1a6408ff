"""Two-phase mapping (seed 000, docs/design.md section 10): host -> bucket -> node.

Phase one is a stable hash of the host name, the same on every machine and every run
(Python's hash() is salted per process, so it is not used). Phase two is a table of one node
name per bucket, kept in Redis; ``rebalance`` changes it when nodes join or leave, moving as
few buckets as it can: a live node keeps its buckets up to its fair share, and only the
buckets of nodes gone and the surplus of overloaded nodes move. No Scrapy import here.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterable, Sequence


def bucket_of(host: str, buckets: int) -> int:
    """The bucket of a host: the first 8 bytes of its lowercase name's BLAKE2b, mod buckets."""
    digest = hashlib.blake2b(host.lower().encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "big") % buckets


def fair_shares(buckets: int, nodes: Sequence[str], offset: int = 0) -> dict[str, int]:
    """How many buckets each node should hold: equal, and the remainder one more each to
    the nodes (sorted) from the offset-th on, round the list."""
    base, extra = divmod(buckets, len(nodes))
    ordered = sorted(nodes)
    return {node: base + ((i - offset) % len(ordered) < extra) for i, node in enumerate(ordered)}


def rebalance(table: Sequence[str | None], nodes: Iterable[str], offset: int = 0) -> list[str]:
    """A table over the live nodes that keeps every bucket it can where it is (offset: which
    node gets the first of the remainder, see fair_shares)."""
    live = sorted(set(nodes))
    if not live:
        raise ValueError("no live node to own the buckets")
    shares = fair_shares(len(table), live, offset)
    held: Counter[str] = Counter()
    new: list[str | None] = []
    for owner in table:
        if owner in shares and held[owner] < shares[owner]:
            held[owner] += 1
            new.append(owner)
        else:
            new.append(None)  # a node gone, none yet, or past its share: moves
    wanting = (node for node in live for _ in range(shares[node] - held[node]))
    return [owner if owner is not None else next(wanting) for owner in new]


def moved(old: Sequence[str | None], new: Sequence[str]) -> list[int]:
    """The buckets whose owner changed."""
    return [bucket for bucket, (a, b) in enumerate(zip(old, new, strict=True)) if a != b]
