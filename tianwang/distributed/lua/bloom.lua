-- bloom: the shared Bloom filter (tianwang/distributed/bloom.py), in stages: once the last
-- stage holds the urls it was sized for, the next one (twice the urls at half the error
-- rate) takes the new ones, so a crawl past TIANWANG_EXPECTED_URLS does not take more and
-- more new urls for seen. The stages' shapes come from the caller, "k:m:n,..." (hashes,
-- bits, urls), written once in Python; bloom:fill says how many are live and how many urls
-- the last one holds. Stage 1's bits are bloom:<segment>, stage s's bloom:s<s-1>:<segment>,
-- in segments of 2**32 bits (a Redis string holds at most 2**32 bits).
-- touches: bloom:*
local BLOOM = {}
local BLOOM_LIVE = 1

-- The stages' shapes, and how many are live.
local function bloom_open(p, shapes)
  for k, m, n in string.gmatch(shapes, '(%d+):(%d+):(%d+)') do
    BLOOM[#BLOOM + 1] = {tonumber(k), tonumber(m), tonumber(n)}
  end
  local live = tonumber(redis.call('HGET', p .. 'bloom:fill', 'stages') or '1') or 1
  BLOOM_LIVE = math.max(1, math.min(#BLOOM, math.floor(live)))
end

-- The bits of the url whose h1, h2 are given, in a stage: {key, offset} each.
local function bloom_bits(p, stage, h1, h2)
  local k, m = BLOOM[stage][1], BLOOM[stage][2]
  local name = p .. 'bloom:'
  if stage > 1 then name = name .. 's' .. (stage - 1) .. ':' end
  local bits = {}
  for i = 0, k - 1 do
    local pos = math.fmod(h1 + i * h2, m)
    local seg = math.floor(pos / 4294967296)
    bits[#bits + 1] = {name .. seg, pos - seg * 4294967296}
  end
  return bits
end

-- Whether a live stage has every bit of the url set (seen before, or a false positive).
local function bloom_seen(p, h1, h2)
  for stage = 1, BLOOM_LIVE do
    local all = true
    for _, bit in ipairs(bloom_bits(p, stage, h1, h2)) do
      if redis.call('GETBIT', bit[1], bit[2]) == 0 then all = false; break end
    end
    if all then return true end
  end
  return false
end

-- The url's bits set in the last live stage; a stage full, the next one live. The test
-- reads, the set writes: a push sets a url's bits only once the url is queued, so a push
-- that fails between them is done again whole (its url not taken for seen).
local function bloom_set(p, h1, h2)
  for _, bit in ipairs(bloom_bits(p, BLOOM_LIVE, h1, h2)) do
    redis.call('SETBIT', bit[1], bit[2], 1)
  end
  local held = redis.call('HINCRBY', p .. 'bloom:fill', 'count', 1)
  if held >= BLOOM[BLOOM_LIVE][3] and BLOOM_LIVE < #BLOOM then
    BLOOM_LIVE = BLOOM_LIVE + 1
    redis.call('HSET', p .. 'bloom:fill', 'stages', BLOOM_LIVE, 'count', 0)
  end
end
