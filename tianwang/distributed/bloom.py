"""The shared request dedup: a Bloom filter on Redis bitmaps (docs/design.md section 10).

Sized like the local filter (frontier/dupefilter.py) from TIANWANG_EXPECTED_URLS and
TIANWANG_BLOOM_ERROR_RATE: m = -n ln p / (ln 2)^2 bits and k = (m / n) ln 2 hashes, about
3.6 bytes a url at 1e-6 (scrapy-redis keeps a set of 40-hex fingerprints, tens of bytes a url).

The k bit positions come from the request fingerprint by double hashing (Kirsch and
Mitzenmacher): h1, the first 48 bits, and h2, the next 32 (odd), give position
i = (h1 + i * h2) mod m, all below 2**53 so Lua's doubles compute it exactly. The script
gets h1 and h2 only (two arguments a url, not k) and computes the positions itself
(LUA_TEST_AND_SET, used inside the frontier's push script), so a batch of urls costs one
round trip and no two nodes can both see a url as new. A Redis string holds at most 2**32
bits, so bit p lives in segment p // 2**32. No Scrapy import here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

SEGMENT_BITS = 2**32  # a Redis string is at most 512 MB

# Lua: set the k bits of the url whose h1, h2 are ARGV[first], ARGV[first + 1]; true if any
# was 0 (the url is new).
LUA_TEST_AND_SET = """
local function bloom_test_and_set(prefix, k, m, first)
  local h1, h2 = tonumber(ARGV[first]), tonumber(ARGV[first + 1])
  local new = false
  for i = 0, k - 1 do
    local pos = math.fmod(h1 + i * h2, m)
    local seg = math.floor(pos / 4294967296)
    if redis.call('SETBIT', prefix .. 'bloom:' .. seg, pos - seg * 4294967296, 1) == 0 then
      new = true
    end
  end
  return new
end
"""

# Lua: whether every one of the k bits of the url with these h1, h2 is set (seen before, or a
# false positive); sets none.
LUA_TEST = """
local function bloom_test(prefix, k, m, h1, h2)
  for i = 0, k - 1 do
    local pos = math.fmod(h1 + i * h2, m)
    local seg = math.floor(pos / 4294967296)
    if redis.call('GETBIT', prefix .. 'bloom:' .. seg, pos - seg * 4294967296) == 0 then
      return false
    end
  end
  return true
end
"""


@dataclass(frozen=True)
class BloomShape:
    bits: int  # m
    hashes: int  # k

    @classmethod
    def for_capacity(cls, expected: int, error_rate: float) -> BloomShape:
        if expected < 1 or not 0 < error_rate < 1:
            raise ValueError("expected >= 1 and 0 < error_rate < 1")
        bits = math.ceil(-expected * math.log(error_rate) / math.log(2) ** 2)
        hashes = max(1, round(bits / expected * math.log(2)))
        return cls(bits, hashes)

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
