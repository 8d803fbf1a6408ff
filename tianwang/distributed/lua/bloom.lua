-- bloom: the shared Bloom filter's test-and-set (tianwang/distributed/bloom.py).
-- touches: bloom:*
-- Set the k bits of the url whose h1, h2 are ARGV[first], ARGV[first + 1] (bits of m, in
-- segments of 2**32: a Redis string holds at most 2**32 bits); true if any was 0 (new).
local function bloom_test_and_set(p, k, m, first)
  local h1, h2 = tonumber(ARGV[first]), tonumber(ARGV[first + 1])
  local new = false
  for i = 0, k - 1 do
    local pos = math.fmod(h1 + i * h2, m)
    local seg = math.floor(pos / 4294967296)
    if redis.call('SETBIT', p .. 'bloom:' .. seg, pos - seg * 4294967296, 1) == 0 then
      new = true
    end
  end
  return new
end
