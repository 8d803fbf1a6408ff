-- pack: a node's worst requests out of its queue into one chunk, only if each is still
-- there at the score the node read (none taken, raised or moved meanwhile).
-- include: guard
-- KEYS[1]: seq (names the shard's slot)
-- touches: q:* req packseq chunks pack:*
-- ARGV: prefix, node, chunk; then pairs of a member and its score.
-- The chunk is named '<packseq>:<requests in it>' and listed in pack:<node> by its best score.
local p, node, chunk = ARGV[1], ARGV[2], ARGV[3]
guard(p, {req = 'hash', chunks = 'hash', packseq = 'string', ['q:' .. node] = 'zset',
           ['pack:' .. node] = 'zset'})
local q = p .. 'q:' .. node
local best
for i = 4, #ARGV, 2 do
  local score = redis.call('ZSCORE', q, ARGV[i])
  if not score or tonumber(score) ~= tonumber(ARGV[i + 1]) then return 0 end
  if not best or tonumber(score) < best then best = tonumber(score) end
end
if not best then return 0 end
for i = 4, #ARGV, 2 do
  redis.call('ZREM', q, ARGV[i])
  redis.call('HDEL', p .. 'req', ARGV[i])
end
local id = redis.call('INCR', p .. 'packseq') .. ':' .. (#ARGV - 3) / 2
redis.call('HSET', p .. 'chunks', id, chunk)
redis.call('ZADD', p .. 'pack:' .. node, string.format('%.17g', best), id)
return (#ARGV - 3) / 2
