-- control: set or clear one entry of a partition's control hash (a pause
-- of a queue or task type, a limit of a scope), then let the tasks it held
-- back go: the scope's parked tasks become due in the park index and a
-- wake-up is pushed on the parking wake list and on the queue's own (a
-- resumed queue's tasks never left it). The fetch after it applies the
-- new state; fetches run one at a time in Redis, so once this returns no
-- fetch starts what a pause holds back.
-- KEYS[1] control KEYS[2] park index KEYS[3] park wake
-- KEYS[4] the wake list of the queue concerned (or the default one's)
-- KEYS[5] rate state
-- ARGV[1] now ARGV[2] field ARGV[3] value ('' = clear the entry)
-- Returns 1 when the entry changed, else 0.
local changed
if ARGV[3] == '' then
  changed = redis.call('HDEL', KEYS[1], ARGV[2])
  if string.sub(ARGV[2], 1, 2) == 'l:' then redis.call('HDEL', KEYS[5], string.sub(ARGV[2], 3)) end
else
  local old = redis.call('HGET', KEYS[1], ARGV[2])
  redis.call('HSET', KEYS[1], ARGV[2], ARGV[3])
  if old == ARGV[3] then changed = 0 else changed = 1 end
end
-- every parked scope becomes due (a wildcard key limit concerns many);
-- while any task stays parked the hash keeps an entry ('parked'), so
-- fetch keeps looking at the park index after the last pause or limit is
-- cleared (fetch removes it once the index is empty)
local parked = redis.call('ZRANGE', KEYS[2], 0, -1)
if #parked > 0 then
  local z = {}
  for _, s in ipairs(parked) do z[#z + 1] = tonumber(ARGV[1]); z[#z + 1] = s end
  redis.call('ZADD', KEYS[2], unpack(z))
  redis.call('HSET', KEYS[1], 'parked', '1')
  wake(KEYS[3])
end
wake(KEYS[4])
return changed
