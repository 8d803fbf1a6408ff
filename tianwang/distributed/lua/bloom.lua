-- bloom: the shared Bloom filter (tianwang/distributed/bloom.py).
-- touches: bloom:*
-- The k bits of the url whose h1, h2 are ARGV[first], ARGV[first + 1], of m bits in segments
-- of 2**32 (a Redis string holds at most 2**32 bits). The test reads, the set writes: a push
-- sets a url's bits only once the url is queued, so a push that fails between them is done
-- again whole (its url not taken for seen).
local function bloom_bits(k, m, first)
  local h1, h2 = tonumber(ARGV[first]), tonumber(ARGV[first + 1])
  local bits = {}
  for i = 0, k - 1 do
    local pos = math.fmod(h1 + i * h2, m)
    local seg = math.floor(pos / 4294967296)
    bits[#bits + 1] = {seg, pos - seg * 4294967296}
  end
  return bits
end
local function bloom_seen(p, bits)
  for _, bit in ipairs(bits) do
    if redis.call('GETBIT', p .. 'bloom:' .. bit[1], bit[2]) == 0 then return false end
  end
  return true
end
local function bloom_set(p, bits)
  for _, bit in ipairs(bits) do redis.call('SETBIT', p .. 'bloom:' .. bit[1], bit[2], 1) end
end
