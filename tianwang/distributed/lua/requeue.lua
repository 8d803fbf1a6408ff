-- requeue: a member back to its bucket's owner's queue, at a given score.
-- touches: table q:*
-- Those of an owner-less bucket, or of the node `away` being emptied, go to the queue of no
-- one ('q:'), which the next rebalance hands on.
local function requeue(p, member, score, away)
  local bucket = string.match(member, '^(%d+):')
  local owner = redis.call('HGET', p .. 'table', bucket) or ''
  if owner == away then owner = '' end
  redis.call('ZADD', p .. 'q:' .. owner, score, member)
end
