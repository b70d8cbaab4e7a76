-- claim_batch: claim.lua for several entries of one stream in one call,
-- each entry with the same verdicts and effects as claim.lua alone (in
-- the order given), the look for earlier entries held by other consumers
-- made once for all of them (held.lua, prepended).
-- KEYS[1] the entries' stream  KEYS[2..] each entry's attempt's marker
-- ARGV[1] agent-group  ARGV[2] this consumer  ARGV[3] marker ttl (s)
-- ARGV[4] the greatest of the entries' ids
-- ARGV[5..] per entry, in the order of the markers: its id, its name
-- Returns one string per entry: its verdict as claim.lua's with its look,
-- and after "wait" the earlier entries other consumers hold ("wait <id>
-- <id>...").
local earlier = held_before(KEYS[1], ARGV[1], ARGV[2], ARGV[4]) -- held.lua
local out = {}
for i = 2, #KEYS do
  local id, name = ARGV[5 + 2 * (i - 2)], ARGV[6 + 2 * (i - 2)]
  local wait = { 'wait' }
  for _, h in ipairs(earlier(id)) do wait[#wait + 1] = h end
  local v
  if #wait > 1 then
    v = redis.call('GET', KEYS[i])
  else
    -- nothing earlier held: claim it if no one has, else read who has
    -- (one SET NX GET where a GET then a SET were)
    v = redis.call('SET', KEYS[i], name, 'NX', 'EX', ARGV[3], 'GET')
  end
  local reply
  if v == '1' then
    reply = 'done'
  elseif v then
    if v == name or v == 'dlq ' .. name then reply = 'mine' else reply = 'other' end
  elseif #wait > 1 then
    reply = table.concat(wait, ' ')
  else
    reply = 'new' -- claimed by the SET
  end
  out[#out + 1] = reply
end
return out
