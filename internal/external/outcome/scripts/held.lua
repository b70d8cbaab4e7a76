-- held: the look at entries other consumers hold, for the scripts that
-- apply a batch of one stream's entries (claim_batch.lua, settle.lua;
-- prepended to each: scripts.go).
-- held_before(stream, group, consumer, last) returns a function that
-- gives, for an entry id up to last, the ids of the earlier entries of
-- stream that other consumers of group hold delivered and unacknowledged
-- (an empty table when none). It asks XPENDING once, and only when
-- XINFO CONSUMERS shows another consumer holding any: XPENDING answers
-- every entry pending, this consumer's own read among them.
local function held_before(stream, group, consumer, last)
  local others = false
  for _, c in ipairs(redis.call('XINFO', 'CONSUMERS', stream, group)) do
    local name, pending
    for k = 1, #c, 2 do
      if c[k] == 'name' then name = c[k + 1] elseif c[k] == 'pending' then pending = c[k + 1] end
    end
    if name ~= consumer and (tonumber(pending) or 1) > 0 then others = true; break end
  end
  local none = {}
  if not others then return function() return none end end
  local function parse(id)
    local ms, seq = string.match(id, '^(%d+)-(%d+)$')
    return tonumber(ms), tonumber(seq)
  end
  local held = {}
  for _, p in ipairs(redis.call('XPENDING', stream, group, '-', last, 256)) do
    if p[2] ~= consumer then
      local ms, seq = parse(p[1])
      held[#held + 1] = { p[1], ms, seq }
    end
  end
  return function(id)
    local out = {}
    local ms, seq = parse(id)
    for _, h in ipairs(held) do
      if h[1] ~= id and (h[2] < ms or (h[2] == ms and h[3] < seq)) then out[#out + 1] = h[1] end
    end
    return out
  end
end
