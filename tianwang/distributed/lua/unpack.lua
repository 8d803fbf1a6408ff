-- unpack: a chunk's requests back to their owners' queues at their scores, once (the
-- chunk's HDEL decides between two nodes).
-- include: guard requeue
-- KEYS[1]: seq (names the shard's slot)
-- touches: pack:* chunks req table q:*
-- ARGV: prefix, node, chunk name; then triples of a member, its score, its request.
local p, node, id = ARGV[1], ARGV[2], ARGV[3]
guard(p, {table = 'hash', req = 'hash', chunks = 'hash', ['pack:' .. node] = 'zset'})
redis.call('ZREM', p .. 'pack:' .. node, id)
if redis.call('HDEL', p .. 'chunks', id) == 0 then return 0 end
for i = 4, #ARGV, 3 do
  redis.call('HSET', p .. 'req', ARGV[i], ARGV[i + 2])
  requeue(p, ARGV[i], ARGV[i + 1], '')
end
return (#ARGV - 3) / 3
