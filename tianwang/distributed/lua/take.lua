-- take: lease requests of this node's queue, by score then at random.
-- include: guard
-- KEYS[1]: seq (names the shard's slot)
-- touches: q:* lease:* table req stored ops
-- ARGV: prefix, node, sorted count, random count, cap, then pairs of a bucket and the
--   requests of it the node holds.
-- With a cap (> 0), the sorted take passes over the requests of a bucket of which the node
-- holds `cap` (counting those it takes now), as the local frontier's sorted pick passes
-- over a host at its concurrency: what one busy host's best requests would fill a node's
-- hands with stays queued, and the next best of other hosts come instead. It looks at the
-- best SCAN entries at most, and if those hold fewer than the take under the cap, at a
-- random SAMPLE of the queue too; random picks take no notice of the cap.
-- Reply: member, score, request, stored (1/0) for each leased, then how many of them the
-- sorted take leased, and the queue's size left (how a node splits its next take over
-- shards).
local p, node = ARGV[1], ARGV[2]
local q, lease = p .. 'q:' .. node, p .. 'lease:' .. node
guard(p, {table = 'hash', req = 'hash', stored = 'hash', ops = 'string'})
guard(p, {['q:' .. node] = 'zset', ['lease:' .. node] = 'hash'})
local out = {}
local function take(member, score)
  local bucket = string.match(member, '^(%d+):')
  local owner = redis.call('HGET', p .. 'table', bucket)
  if owner and owner ~= node then  -- pushed before its bucket moved: on to the owner
    redis.call('ZADD', p .. 'q:' .. owner, score, member)
    return
  end
  redis.call('HSET', lease, member, score)
  out[#out + 1] = member
  out[#out + 1] = score
  out[#out + 1] = redis.call('HGET', p .. 'req', member)
  out[#out + 1] = redis.call('HEXISTS', p .. 'stored', member)
end
local SCAN, PAGE, SAMPLE = 1024, 128, 256
-- The best `count` members whose bucket is under the cap, among the best SCAN, as
-- ZPOPMIN's reply (member, score, ...); removed from the queue.
local function best_under_cap(count, cap)
  local held = {}
  for i = 6, #ARGV, 2 do held[ARGV[i]] = tonumber(ARGV[i + 1]) end
  local chosen, from = {}, 0
  -- Choose member if its bucket is under the cap; true once the take is full.
  local function choose(member, score)
    local bucket = string.match(member, '^(%d+):')
    local n = held[bucket] or 0
    if n < cap then
      held[bucket] = n + 1
      chosen[#chosen + 1], chosen[#chosen + 2] = member, score
    end
    return #chosen >= 2 * count
  end
  local full = false
  while not full and from < SCAN do
    local page = redis.call('ZRANGE', q, from, from + PAGE - 1, 'WITHSCORES')
    for i = 1, #page, 2 do
      full = choose(page[i], page[i + 1])
      if full then break end
    end
    if #page < 2 * PAGE then break end
    from = from + PAGE
  end
  if not full and from >= SCAN then
    -- The best SCAN nearly all of capped buckets: the best under the cap of a sample of the
    -- queue too, rather than too few (the hosts whose requests lie deeper would wait idle).
    local taken, sample = {}, {}
    for i = 1, #chosen, 2 do taken[chosen[i]] = true end
    local drawn = redis.call('ZRANDMEMBER', q, SAMPLE, 'WITHSCORES')
    for i = 1, #drawn, 2 do
      if not taken[drawn[i]] then  -- the score as Redis wrote it, and as a number to sort
        sample[#sample + 1] = {drawn[i], drawn[i + 1], tonumber(drawn[i + 1])}
      end
    end
    table.sort(sample, function(a, b) return a[3] < b[3] end)
    for _, entry in ipairs(sample) do
      if choose(entry[1], entry[2]) then break end
    end
  end
  for i = 1, #chosen, 2 do redis.call('ZREM', q, chosen[i]) end
  return chosen
end
local count, cap = tonumber(ARGV[3]), tonumber(ARGV[5] or '0')
if count > 0 then
  local sorted
  if cap > 0 then
    sorted = best_under_cap(count, cap)
  else
    sorted = redis.call('ZPOPMIN', q, count)
  end
  for i = 1, #sorted, 2 do take(sorted[i], sorted[i + 1]) end
end
local sorted_taken = #out / 4
if tonumber(ARGV[4]) > 0 and redis.call('ZCARD', q) > 0 then
  local picked = redis.call('ZRANDMEMBER', q, tonumber(ARGV[4]), 'WITHSCORES')
  for i = 1, #picked, 2 do
    redis.call('ZREM', q, picked[i])
    take(picked[i], picked[i + 1])
  end
end
if #out > 0 then redis.call('INCR', p .. 'ops') end  -- for finished.lua over shards
out[#out + 1] = sorted_taken
out[#out + 1] = redis.call('ZCARD', q)
return out
