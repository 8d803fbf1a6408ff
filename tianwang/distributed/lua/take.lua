-- take: lease requests of this node's queue, by score then at random.
-- include: guard
-- KEYS[1]: seq (names the shard's slot)
-- touches: q:* lease:* table req stored ops
-- ARGV: prefix, node, sorted count, random count.
-- Reply: member, score, request, stored (1/0) for each leased, then the queue's size left
-- (how a node splits its next take over shards).
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
if tonumber(ARGV[3]) > 0 then
  local sorted = redis.call('ZPOPMIN', q, tonumber(ARGV[3]))
  for i = 1, #sorted, 2 do take(sorted[i], sorted[i + 1]) end
end
if tonumber(ARGV[4]) > 0 and redis.call('ZCARD', q) > 0 then
  local picked = redis.call('ZRANDMEMBER', q, tonumber(ARGV[4]), 'WITHSCORES')
  for i = 1, #picked, 2 do
    redis.call('ZREM', q, picked[i])
    take(picked[i], picked[i + 1])
  end
end
if #out > 0 then redis.call('INCR', p .. 'ops') end  -- for finished.lua over shards
out[#out + 1] = redis.call('ZCARD', q)
return out
