-- cancel: PENDING|TIMEOUT -> CANCELLED at once; for an ACTIVE task, record
-- a cancel request and announce it on the cancel channel: the worker holding
-- it cancels its handler's context and ends it CANCELLED (cancelactive.lua),
-- or the reaper does when the lease expires first.
-- KEYS[1] task KEYS[2] pending index KEYS[3] TIMEOUT index KEYS[4] CANCELLED index
-- KEYS[5] scheduled KEYS[6] events KEYS[7] primary:high KEYS[8] primary
-- KEYS[9] primary:low KEYS[10] retry KEYS[11] running KEYS[12] park index
-- KEYS[13] park prefix KEYS[14] park wake
-- ARGV[1] now ARGV[2] cancel channel ARGV[3] event stream maxlen
-- ARGV[4] the publish command: PUBLISH, or SPUBLISH on a Redis Cluster
-- Returns CANCELLED or REQUESTED; errors NOTFOUND, STATE <state>.
local now = tonumber(ARGV[1])
local f = redis.call('HMGET', KEYS[1], 'state', 'task_type', 'session_id', 'state_history', 'queue',
  'priority', 'task_id', 'qname', 'lh')
if not f[1] then return redis.error_reply('NOTFOUND') end
local id = f[7]
if f[1] == 'ACTIVE' then
  redis.call('HSET', KEYS[1], 'cancel_requested', '1', 'updated_at', now)
  redis.call(ARGV[4], ARGV[2], id)
  return 'REQUESTED'
end
if f[1] == 'PENDING' then
  if redis.call('ZREM', KEYS[5], id) == 0 and not unpark_one(KEYS[1], KEYS[13], id) then
    redis.call('LREM', queue_for(f[5], f[6], KEYS[7], KEYS[8], KEYS[9], KEYS[10], f[8]), 1, id)
  end
  redis.call('ZREM', KEYS[2], id)
elseif f[1] == 'TIMEOUT' then
  redis.call('ZREM', KEYS[3], id)
  release_slots(KEYS[1], f[9], KEYS[11], KEYS[12], KEYS[13], KEYS[14], now)
else
  return redis.error_reply('STATE ' .. f[1])
end
redis.call('HSET', KEYS[1], 'state', 'CANCELLED', 'lease', '', 'updated_at', now, 'completed_at', now,
  'state_history', hist(taken(KEYS[1], f[4]), now, f[1], 'CANCELLED', 'cancel'))
redis.call('ZADD', KEYS[4], now, id)
ev(id, f[1], 'CANCELLED', now, f[2], f[3])
flush_events(KEYS[6], ARGV[3])
return 'CANCELLED'
