-- claim: what one delivery of a response-stream entry does for the outcome
-- of its attempt (task id + token); the entry claims the outcome when no
-- entry has. The marker's values: absent; the name of the entry that
-- claimed the outcome ("<stream> <id>"); "dlq " and that name once its
-- task.dlq is published; "1" once every effect is done.
-- KEYS[1] the attempt's applied marker  KEYS[2] the entry's stream
-- ARGV[1] agent-group  ARGV[2] this consumer  ARGV[3] the entry's id
-- ARGV[4] the entry's name  ARGV[5] marker ttl (s)
-- ARGV[6] "1": before claiming, look for earlier entries of the stream
--         that other consumers hold unacknowledged
-- Returns { verdict, ids... }: "done" (fully applied), "other" (another
-- entry holds the outcome), "mine" (this entry claimed it in an earlier
-- delivery), "new" (claimed now), or "wait" and the earlier entries'
-- ids (nothing claimed: the caller looks whether one of them is about the
-- same attempt, which then goes first, and asks again without the look).
local v = redis.call('GET', KEYS[1])
if v == '1' then return { 'done' } end
if v then
  if v == ARGV[4] or v == 'dlq ' .. ARGV[4] then return { 'mine' } end
  return { 'other' }
end
if ARGV[6] == '1' then
  local out = { 'wait' }
  for _, p in ipairs(redis.call('XPENDING', KEYS[2], ARGV[1], '-', ARGV[3], 256)) do
    if p[1] ~= ARGV[3] and p[2] ~= ARGV[2] then out[#out + 1] = p[1] end
  end
  if #out > 1 then return out end
end
redis.call('SET', KEYS[1], ARGV[4], 'EX', ARGV[5])
return { 'new' }
