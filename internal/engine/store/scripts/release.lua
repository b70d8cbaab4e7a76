-- release: ACTIVE -> PENDING by the lease holder (graceful hand-back at
-- shutdown, or a wait while a circuit breaker is open). No retry is spent.
-- Due now: back to the FRONT of its queue (it was first in line). Later:
-- into the scheduled set, promoted to its queue when due.
-- KEYS[1] task KEYS[2] active KEYS[3] pending index KEYS[4] scheduled
-- KEYS[5] events KEYS[6] wake KEYS[7] primary:high KEYS[8] primary
-- KEYS[9] primary:low KEYS[10] retry KEYS[11] running KEYS[12] park index
-- KEYS[13] park prefix KEYS[14] park wake
-- ARGV[1] now ARGV[2] token ARGV[3] due ms (0 = now) ARGV[4] cause
-- ARGV[5] event stream maxlen
local now = tonumber(ARGV[1])
local f = redis.call('HMGET', KEYS[1], 'state', 'lease', 'task_type', 'session_id', 'state_history',
  'queue', 'priority', 'task_id', 'qname', 'lh')
if not f[1] then return redis.error_reply('NOTFOUND') end
if f[1] ~= 'ACTIVE' then return redis.error_reply('STATE ' .. f[1]) end
if f[2] ~= ARGV[2] then return redis.error_reply('LEASE') end
local id = f[8]
release_slots(KEYS[1], f[10], KEYS[11], KEYS[12], KEYS[13], KEYS[14], now)
redis.call('HSET', KEYS[1], 'state', 'PENDING', 'lease', '', 'updated_at', now,
  'state_history', hist(taken(KEYS[1], f[5]), now, 'ACTIVE', 'PENDING', ARGV[4]))
redis.call('ZREM', KEYS[2], id)
local due = tonumber(ARGV[3])
redis.call('ZADD', KEYS[3], math.max(now, due), id)
if due > now then
  redis.call('ZADD', KEYS[4], due, id)
else
  redis.call('LPUSH', queue_for(f[6], f[7], KEYS[7], KEYS[8], KEYS[9], KEYS[10], f[9]), id)
  wake(wake_for(KEYS[6], KEYS[8], f[9]))
end
ev(id, 'ACTIVE', 'PENDING', now, f[3], f[4])
flush_events(KEYS[5], ARGV[5])
return 'OK'
