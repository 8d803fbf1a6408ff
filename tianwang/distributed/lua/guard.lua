-- guard: a script's keys of the right type before it writes anything. Redis does not undo
-- the writes of a script that fails midway, so a key of the wrong type (damaged, or written
-- by something else) met after the first write would leave half a batch done: a url's Bloom
-- bits set and the url not queued, requests popped and not leased. Checked first, such a
-- key fails the script whole, and the node tries the batch again later (supervisor.py).
-- touches:
local function guard(p, types)
  for name, wanted in pairs(types) do
    local found = redis.call('TYPE', p .. name)['ok']
    if found ~= wanted and found ~= 'none' then
      error('WRONGTYPE ' .. p .. name .. ' is a ' .. found .. ', not a ' .. wanted)
    end
  end
end
