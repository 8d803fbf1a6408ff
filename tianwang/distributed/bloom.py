"""The shared request dedup: a Bloom filter on Redis bitmaps (docs/design.md section 10).

Sized like the local filter (frontier/dupefilter.py) from TIANWANG_EXPECTED_URLS and
TIANWANG_BLOOM_ERROR_RATE: m = -n ln p / (ln 2)^2 bits and k = (m / n) ln 2 hashes, about
3.6 bytes a url at 1e-6 (scrapy-redis keeps a set of 40-hex fingerprints, tens of bytes a url).
Like it, it grows in stages once full (lua/bloom.lua), each twice the urls at half the rate,
so that the whole errs less than twice the setting's rate; their shapes are computed here.

The k bit positions come from the request fingerprint by double hashing (Kirsch and
Mitzenmacher): h1, the first 48 bits, and h2, the next 32 (odd), give position
i = (h1 + i * h2) mod m, all below 2**53 so Lua's doubles compute it exactly. The script
gets h1 and h2 only (two arguments a url, not k) and computes the positions itself
(lua/bloom.lua, used inside the frontier's push script), so a batch of urls costs one
round trip and no two nodes can both see a url as new. A Redis string holds at most 2**32
bits, so bit p lives in segment p // 2**32. No Scrapy import here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

SEGMENT_BITS = 2**32  # a Redis string is at most 512 MB
# Stages the push script is told of: the last holds 2**15 times the first's urls.
STAGES = 16


@dataclass(frozen=True)
class BloomShape:
    bits: int  # m
    hashes: int  # k
    capacity: int  # n, the urls it is sized for
    error_rate: float

    @classmethod
    def for_capacity(cls, expected: int, error_rate: float) -> BloomShape:
        if expected < 1 or not 0 < error_rate < 1:
            raise ValueError("expected >= 1 and 0 < error_rate < 1")
        bits = math.ceil(-expected * math.log(error_rate) / math.log(2) ** 2)
        hashes = max(1, round(bits / expected * math.log(2)))
        return cls(bits, hashes, expected, error_rate)

    def stage(self, number: int) -> BloomShape:
        """The shape of stage `number` after this one (0: this one): 2**number times the
        urls at 2**-number times the error rate, as the local filter's (frontier/dupefilter.py)."""
        if not number:
            return self
        return BloomShape.for_capacity(self.capacity << number, self.error_rate / 2**number)

    def lua_stages(self) -> str:
        """The stages' shapes as the push script reads them: "k:m:n,..."."""
        return ",".join(f"{shape.hashes}:{shape.bits}:{shape.capacity}"
                        for shape in map(self.stage, range(STAGES)))

    def hashes_of(self, fingerprint: bytes) -> tuple[int, int]:
        """(h1, h2) of a fingerprint (Scrapy's: 20 bytes of SHA-1)."""
        if len(fingerprint) < 10:
            raise ValueError("a fingerprint of at least 10 bytes")
        return int.from_bytes(fingerprint[:6], "big"), int.from_bytes(fingerprint[6:10], "big") | 1

    def positions(self, fingerprint: bytes) -> list[int]:
        """The k bit positions of a fingerprint, as the Lua script computes them."""
        h1, h2 = self.hashes_of(fingerprint)
        return [(h1 + i * h2) % self.bits for i in range(self.hashes)]

    @property
    def segments(self) -> int:
        return -(-self.bits // SEGMENT_BITS)

    def bytes_per_url(self, expected: int) -> float:
        return self.bits / 8 / expected
