-- links: a url's link entry (its cash, its request id, its first share's base) and the
-- weight the cash adds, as tianwang/frontier/linkscore.py computes it.
-- touches: link:*
-- A url's entry lives in the small hash link:<h1 mod shards> under the field
-- floor(h1 / shards) (an integer Redis keeps in 4 bytes): 8 bytes of value (float32 cash,
-- uint32 id), 10 with a base (int16, 1/BASE_SCALE doublings) when the discount is on.
local function link_place(p, h1, shards)
  local field = math.floor(h1 / shards)
  return p .. 'link:' .. (h1 - field * shards), field
end
local function f32(x) return struct.unpack('<f', struct.pack('<f', x)) end
local function link_entry(cash, id, base, relative)
  if relative > 0 then return struct.pack('<fI4h', cash, id, base) end
  return struct.pack('<fI4', cash, id)
end
local function link_read(value)
  local cash, id = struct.unpack('<fI4', value)
  local base = 0
  if #value == 10 then base = struct.unpack('<h', string.sub(value, 9)) end
  return cash, id, base
end
-- linkscore.link_bonus: the same operations, in the same order.
local function link_bonus(per, cash, relative, base)
  local doublings = math.log(math.max(cash, MIN_CASH)) / math.log(2)
    - relative * base / BASE_SCALE
  return math.floor(per * doublings + 0.5)
end
