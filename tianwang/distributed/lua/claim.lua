-- claim: each body's MD5 claimed for a url, unless another url holds it; the holders.
-- KEYS[1]: the claims hash of the shard (md5 -> the url that claimed it first)
-- ARGV: md5, url, md5, url, ...
local holders = {}
for i = 1, #ARGV, 2 do
  redis.call('HSETNX', KEYS[1], ARGV[i], ARGV[i + 1])
  holders[#holders + 1] = redis.call('HGET', KEYS[1], ARGV[i])
end
return holders
