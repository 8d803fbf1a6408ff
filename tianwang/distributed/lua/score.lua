-- score: the queue's score layout (tianwang/order.py, whose constants head every script).
-- touches:
local function clip(x, low, high) return math.max(low, math.min(high, x)) end
local function key_of(weight, priority)
  return (clip(weight, WEIGHT_MIN, WEIGHT_MAX) - WEIGHT_MIN) * PRIORITIES
    + clip(priority, PRIORITY_MIN, PRIORITY_MAX) - PRIORITY_MIN
end
local function rank_of(key, turn) return key * TURN_SLOTS + MAX_TURNS - math.min(turn, MAX_TURNS) end
local function first_rank_of(key, turn)
  return FIRST_RANK + (MAX_FIRST - 1 - math.min(turn, MAX_FIRST - 1)) * KEYS + key
end
-- The shard's counter of pushes passes ID_SHIFT in a long crawl: its arrival number wraps
-- (requests of one rank pushed after the wrap go before those pushed just before it, once),
-- where the whole count would spill into the rank.
local function score_of(id, rank)
  return string.format('%.17g', id % ID_SHIFT - rank * ID_SHIFT)
end
-- The rank a score holds (whatever its arrival number, below ID_SHIFT).
local function rank_in(score) return -math.floor(score / ID_SHIFT) end
