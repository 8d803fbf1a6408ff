-- push: requests into their bucket's owner's queue, through the Bloom filter; a link to a
-- url seen before brings it its share of cash, and raises it while it is queued.
-- include: guard bloom score links
-- KEYS[1]: seq (names the shard's slot)
-- touches: seq req q:* table turns first seedhost seeded bloom:* link:*
-- ARGV: prefix, the Bloom stages' shapes, '', turns, first, seed first, per doubling, link
--   shards, relative; then
--   per request: bucket, weight before cash, priority, slot, host, seed ('1'), request,
--   the share its link brings, that share's base, then '1' and its url's h1, h2 (a url the
--   Bloom filter tests), or '0' (dont_filter: always queued, never found again).
-- Replies, one a request: 1 queued, 0 seen before, 2 seen before and raised.
--
-- A request's weight is its url's (with the boost) plus the bonus of its cash, clipped;
-- among equal keys a slot's k-th request goes before any slot's k+1-th (its first `turns`);
-- a host's first `first` requests (`seed first` for a seed's host) before everything, turn
-- by turn. A url seen before that has a link entry gains the share; still queued, it takes
-- the weight of its new cash, if higher, with this link's priority, a new turn and a new
-- arrival number, as the local queue's raise_weight does.
local p, turns = ARGV[1], tonumber(ARGV[4])
local first, seed_first = tonumber(ARGV[5]), tonumber(ARGV[6])
local per, shards, relative = tonumber(ARGV[7]), tonumber(ARGV[8]), tonumber(ARGV[9])

-- The rank of a host's next first request (nil past its first ones).
local function first_rank(host, seed, key)
  if first == 0 and seed_first == 0 then return nil end
  if seed == '1' then redis.call('HSET', p .. 'seedhost', host, 1) end
  local given = tonumber(redis.call('HGET', p .. 'first', host) or '0')
  -- A host past both counts (most pushes, once the crawl is under way): one HGET only.
  if given >= math.max(first, seed_first) then return nil end
  local cap = first
  if redis.call('HEXISTS', p .. 'seedhost', host) == 1 then cap = seed_first end
  if given >= cap then return nil end
  redis.call('HSET', p .. 'first', host, given + 1)
  return first_rank_of(key, given)
end

local function turn_of(slot, key)
  if turns == 0 then return 0 end
  return math.min(turns, redis.call('HINCRBY', p .. 'turns', slot .. '|' .. key, 1) - 1)
end

local function weight_of(weight, cash, base)
  if per == 0 then return weight end
  return weight + link_bonus(per, cash, relative, base)
end

-- A url seen before gains its share; 2 if it rose in its queue, else 0.
local function credit(links, field, bucket, weight, priority, slot, share)
  local entry = redis.call('HGET', links, field)
  if not entry then return 0 end  -- done, or a false positive of the Bloom filter
  local cash, id, base = link_read(entry)
  local new = f32(cash + share)
  redis.call('HSET', links, field, link_entry(new, id, base, relative))
  local member = bucket .. ':' .. id
  local q = p .. 'q:' .. (redis.call('HGET', p .. 'table', bucket) or '')
  local score = redis.call('ZSCORE', q, member)
  if not score then return 0 end  -- taken or packed: only its cash grows
  local rank = rank_in(tonumber(score))
  if rank >= FIRST_RANK then return 0 end  -- a host's first request: above every weight
  local target = clip(weight_of(weight, new, base), WEIGHT_MIN, WEIGHT_MAX)
  if target <= math.floor(rank / TURN_SLOTS / PRIORITIES) + WEIGHT_MIN then return 0 end
  -- Among its new peers it comes last, as a new arrival would (the score's arrival number,
  -- not the member's id, orders equals).
  local key = key_of(target, priority)
  local arrival = redis.call('INCR', p .. 'seq')
  redis.call('ZADD', q, score_of(arrival, rank_of(key, turn_of(slot, key))), member)
  return 2
end

guard(p, {table = 'hash', turns = 'hash', first = 'hash', seedhost = 'hash', req = 'hash',
           seq = 'string', seeded = 'string', ['bloom:fill'] = 'hash'})
bloom_open(p, ARGV[2])
local out, i = {}, 10
while i <= #ARGV do
  local bucket, weight, priority = ARGV[i], tonumber(ARGV[i + 1]), tonumber(ARGV[i + 2])
  local slot, host, seed, blob = ARGV[i + 3], ARGV[i + 4], ARGV[i + 5], ARGV[i + 6]
  local share, base = tonumber(ARGV[i + 7]), tonumber(ARGV[i + 8])
  local new, links, field, h1, h2 = true, nil, nil, nil, nil
  if ARGV[i + 9] == '1' then
    h1, h2 = tonumber(ARGV[i + 10]), tonumber(ARGV[i + 11])
    new = not bloom_seen(h1, h2)
    links, field = link_place(p, h1, shards)
    i = i + 12
  else
    i = i + 10
  end
  if new then
    local cash = f32(share)
    local key = key_of(weight_of(weight, cash, base), priority)
    local rank = first_rank(host, seed, key) or rank_of(key, turn_of(slot, key))
    -- A member's id is the counter's low 32 bits: what a link entry keeps of it (4 bytes).
    local id = redis.call('INCR', p .. 'seq') % MEMBER_IDS
    local member = bucket .. ':' .. id
    local owner = redis.call('HGET', p .. 'table', bucket) or ''
    redis.call('ZADD', p .. 'q:' .. owner, score_of(id, rank), member)
    redis.call('HSET', p .. 'req', member, blob)
    if share > 0 and links then
      redis.call('HSET', links, field, link_entry(cash, id, base, relative))
    end
    if h1 then bloom_set(h1, h2) end  -- last: seen only once queued
    out[#out + 1] = 1
  else
    -- A seed seen before (a link found its url first) still names its host a seed's.
    if seed == '1' and (first > 0 or seed_first > 0) then
      redis.call('HSET', p .. 'seedhost', host, 1)
    end
    if share > 0 then
      out[#out + 1] = credit(links, field, bucket, weight, priority, slot, share)
    else
      out[#out + 1] = 0
    end
  end
end
bloom_close(p)
if #out > 0 then redis.call('SET', p .. 'seeded', 1) end
return out
