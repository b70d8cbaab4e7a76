-- apply_batch: the effects of several applied completions whose entries
-- are in one stream, and their end, in one atomic call: each attempt's
-- in-flight place freed (one ZREM per type's set), its result cached, its notification written and
-- its session announced (notify's write_notes, prepended: notify.WriteLua,
-- with notify.Prepare's keys and values and Notifier.WriteArgs), its
-- marker set to done; then one XACK of the entries. Nothing of it is seen without the
-- rest, so a notification written here needs no write-once marker of its
-- own (notify.Prepare's once false): the entry's marker, done in the same
-- call, stops every redelivery. An outcome claimed again ("mine": a crash
-- after an earlier delivery's claim, whose effects may have been written
-- by the general path) keeps its notification's marker.
-- KEYS[1] the entries' stream; per item i (base b = 1 + 3*(i-1)):
-- KEYS[b+1] its type's in-flight set  KEYS[b+2] its result cache
-- KEYS[b+3] its attempt's applied marker; then per notification j (base
-- c = 1 + 3*items + 2*(j-1)): KEYS[c+1] its session's stream  KEYS[c+2]
-- its write-once marker
-- ARGV[1] agent-group  ARGV[2] marker ttl (s)  ARGV[3] result cache ttl (s)
-- ARGV[4] items  ARGV[5..9] write.lua's ARGV[1..5] (stream maxlen, stream
-- ttl, notification marker ttl, channel, publish command)
-- per item (base a = 9 + 3*(i-1)): ARGV[a+1] entry id  ARGV[a+2] in-flight
-- member  ARGV[a+3] result cache body; then per notification (base
-- d = 9 + 3*items + 3*(j-1)): ARGV[d+1] body  ARGV[d+2] session id
-- ARGV[d+3] "1": its marker applies
-- ARGV[#ARGV] (last) the channel on which the in-flight sets places were
-- freed in are named, with how many ("<set> <count>",
-- dispatch.FreedChannel: the dispatches waiting for a place, as many as
-- were freed, ask again)
-- Returns XACK's count.
local items = tonumber(ARGV[4])
local ids = {}
local places, sets = {}, {} -- per in-flight set its members, freed with one ZREM
for i = 1, items do
  local b, a = 1 + 3 * (i - 1), 9 + 3 * (i - 1)
  local set = KEYS[b + 1]
  local ms = places[set]
  if not ms then
    ms = {}
    places[set] = ms
    sets[#sets + 1] = set
  end
  ms[#ms + 1] = ARGV[a + 2]
  redis.call('SET', KEYS[b + 2], ARGV[a + 3], 'EX', ARGV[3])
  redis.call('SET', KEYS[b + 3], '1', 'EX', ARGV[2])
  ids[i] = ARGV[a + 1]
end
for _, set in ipairs(sets) do
  local c = redis.call('ZREM', set, unpack(places[set]))
  if c > 0 then
    redis.call('PUBLISH', ARGV[#ARGV], set .. ' ' .. c)
  end
end
local k0, a0 = 1 + 3 * items, 9 + 3 * items
write_notes(k0, a0, (#KEYS - k0) / 2, 5)
if items == 0 then return 0 end
return redis.call('XACK', KEYS[1], ARGV[1], unpack(ids))
