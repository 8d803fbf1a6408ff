-- cash: the link entries of urls now, read in one call ('' for a url no link brought any).
-- include: links
-- KEYS[1]: seq (names the shard's slot)
-- touches: link:*
-- ARGV: prefix, link shards, then each url's h1 (the first of its Bloom hashes).
local p, shards = ARGV[1], tonumber(ARGV[2])
local entries = {}
for i = 3, #ARGV do
  local links, field = link_place(p, tonumber(ARGV[i]), shards)
  entries[i - 2] = redis.call('HGET', links, field) or ''
end
return entries
