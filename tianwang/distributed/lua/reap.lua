-- reap: everything a node held (its queue and its leases) to the current owners; its packed
-- chunks to the heir's packs (the node reaping it; '': the packs of no one, which the next
-- heartbeat of any node adopts).
-- include: guard requeue
-- KEYS[1]: seq (names the shard's slot)
-- touches: pack:* q:* lease:* table
-- ARGV: prefix, node, heir. Reply: the requests moved.
local p, node, heir = ARGV[1], ARGV[2], ARGV[3]
guard(p, {table = 'hash', ['pack:' .. node] = 'zset', ['pack:' .. heir] = 'zset',
           ['q:' .. node] = 'zset', ['lease:' .. node] = 'hash'})
local packs = redis.call('ZRANGE', p .. 'pack:' .. node, 0, -1, 'WITHSCORES')
if heir ~= node then
  redis.call('DEL', p .. 'pack:' .. node)
  for i = 1, #packs, 2 do redis.call('ZADD', p .. 'pack:' .. heir, packs[i + 1], packs[i]) end
end
local queued = redis.call('ZRANGE', p .. 'q:' .. node, 0, -1, 'WITHSCORES')
redis.call('DEL', p .. 'q:' .. node)
for i = 1, #queued, 2 do requeue(p, queued[i], queued[i + 1], node) end
local leased = redis.call('HGETALL', p .. 'lease:' .. node)
redis.call('DEL', p .. 'lease:' .. node)
for i = 1, #leased, 2 do requeue(p, leased[i], leased[i + 1], node) end
return (#queued + #leased) / 2
