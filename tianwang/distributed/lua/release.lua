-- release: leased members back to the queues, unfetched (given back by a live node).
-- include: guard requeue
-- KEYS[1]: seq (names the shard's slot)
-- touches: lease:* table q:*
-- ARGV: prefix, node, members.
local p, node = ARGV[1], ARGV[2]
guard(p, {table = 'hash', ['lease:' .. node] = 'hash'})
local lease = p .. 'lease:' .. node
for i = 3, #ARGV do
  local score = redis.call('HGET', lease, ARGV[i])
  if score then
    redis.call('HDEL', lease, ARGV[i])
    requeue(p, ARGV[i], score, '')
  end
end
return 0
