-- bloom: the shared Bloom filter (tianwang/distributed/bloom.py), in stages: once the last
-- stage holds the urls it was sized for, the next one (twice the urls at half the error
-- rate) takes the new ones, so a crawl past TIANWANG_EXPECTED_URLS does not take more and
-- more new urls for seen. The stages' shapes come from the caller, "k:m:n,..." (hashes,
-- bits, urls), written once in Python; bloom:fill says how many are live and how many urls
-- the last one holds. Stage 1's bits are bloom:<segment>, stage s's bloom:s<s-1>:<segment>,
-- in segments of 2**32 bits (a Redis string holds at most 2**32 bits).
-- touches: bloom:*
local BLOOM = {}  -- per stage: hashes, bits, urls, its keys' prefix
local BLOOM_LIVE, BLOOM_HELD, BLOOM_ADDED = 1, 0, 0

-- The stages' shapes, how many are live and what the last one holds (once a script).
local function bloom_open(p, shapes)
  for k, m, n in string.gmatch(shapes, '(%d+):(%d+):(%d+)') do
    local name = p .. 'bloom:'
    if #BLOOM > 0 then name = name .. 's' .. #BLOOM .. ':' end
    BLOOM[#BLOOM + 1] = {tonumber(k), tonumber(m), tonumber(n), name}
  end
  local fill = redis.call('HMGET', p .. 'bloom:fill', 'stages', 'count')
  BLOOM_LIVE = math.max(1, math.min(#BLOOM, math.floor(tonumber(fill[1]) or 1)))
  BLOOM_HELD = tonumber(fill[2]) or 0
end

-- Whether the stage has every bit of the url whose h1, h2 are given.
local function bloom_stage_has(stage, h1, h2)
  local k, m, name = BLOOM[stage][1], BLOOM[stage][2], BLOOM[stage][4]
  for i = 0, k - 1 do
    local pos = math.fmod(h1 + i * h2, m)
    local seg = math.floor(pos / 4294967296)
    if redis.call('GETBIT', name .. seg, pos - seg * 4294967296) == 0 then return false end
  end
  return true
end

-- Whether a live stage has the url (seen before, or a false positive).
local function bloom_seen(h1, h2)
  for stage = BLOOM_LIVE, 1, -1 do
    if bloom_stage_has(stage, h1, h2) then return true end
  end
  return false
end

-- The url's bits set in the last live stage; that stage full, the next one live. The test
-- reads, the set writes: a push sets a url's bits only once the url is queued, so a push
-- that fails between them is done again whole (its url not taken for seen).
local function bloom_set(h1, h2)
  local k, m, name = BLOOM[BLOOM_LIVE][1], BLOOM[BLOOM_LIVE][2], BLOOM[BLOOM_LIVE][4]
  for i = 0, k - 1 do
    local pos = math.fmod(h1 + i * h2, m)
    local seg = math.floor(pos / 4294967296)
    redis.call('SETBIT', name .. seg, pos - seg * 4294967296, 1)
  end
  BLOOM_HELD, BLOOM_ADDED = BLOOM_HELD + 1, BLOOM_ADDED + 1
  if BLOOM_HELD >= BLOOM[BLOOM_LIVE][3] and BLOOM_LIVE < #BLOOM then
    BLOOM_LIVE, BLOOM_HELD = BLOOM_LIVE + 1, 0
  end
end

-- What the stages hold, written back (once a script, after its pushes).
local function bloom_close(p)
  if BLOOM_ADDED > 0 then
    redis.call('HSET', p .. 'bloom:fill', 'stages', BLOOM_LIVE, 'count', BLOOM_HELD)
  end
end
