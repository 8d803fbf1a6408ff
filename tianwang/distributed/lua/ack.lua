-- ack: requests done with leave nothing but their Bloom bits (a later link to one of them
-- finds no link entry and counts nothing).
-- include: guard links
-- KEYS[1]: seq (names the shard's slot)
-- touches: lease:* req stored link:*
-- ARGV: prefix, node, link shards; then pairs of a member and its url's h1 ('' for none).
local p, node, shards = ARGV[1], ARGV[2], tonumber(ARGV[3])
guard(p, {req = 'hash', stored = 'hash', ['lease:' .. node] = 'hash'})
for i = 4, #ARGV, 2 do
  local member, h1 = ARGV[i], ARGV[i + 1]
  if redis.call('HDEL', p .. 'lease:' .. node, member) == 1 then
    redis.call('HDEL', p .. 'req', member)
    redis.call('HDEL', p .. 'stored', member)
    if h1 ~= '' then
      local links, field = link_place(p, tonumber(h1), shards)
      redis.call('HDEL', links, field)
    end
  end
end
return 0
