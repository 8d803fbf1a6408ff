-- finished: 0 while anything is pending; else 1 + the shard's changes so far (new urls and
-- takes), by which a look over many shards, not atomic, is checked (shardedfrontier.py).
-- KEYS[1]: seq (names the shard's slot)
-- touches: feed seeded starting q:* pack:* lease:* nodes seq ops
-- ARGV: prefix, '1' for the job's home (whose feed, seed flag and starting nodes count
-- too), then the nodes to look at (none: the nodes set of this prefix).
local p, home = ARGV[1], ARGV[2]
if home == '1' then
  if redis.call('LLEN', p .. 'feed') > 0 then return 0 end
  if redis.call('EXISTS', p .. 'seeded') == 0 or redis.call('SCARD', p .. 'starting') > 0 then
    return 0
  end
end
if redis.call('ZCARD', p .. 'q:') > 0 or redis.call('ZCARD', p .. 'pack:') > 0 then return 0 end
local nodes = {}
for i = 3, #ARGV do nodes[#nodes + 1] = ARGV[i] end
if #ARGV < 3 then nodes = redis.call('SMEMBERS', p .. 'nodes') end
for _, node in ipairs(nodes) do
  if redis.call('ZCARD', p .. 'q:' .. node) > 0 then return 0 end
  if redis.call('ZCARD', p .. 'pack:' .. node) > 0 then return 0 end
  if redis.call('HLEN', p .. 'lease:' .. node) > 0 then return 0 end
end
local changes = tonumber(redis.call('GET', p .. 'seq') or '0')
return 1 + changes + tonumber(redis.call('GET', p .. 'ops') or '0')
