-- cancelactive: ACTIVE|TIMEOUT -> CANCELLED by the lease holder (its handler
-- saw the cancel request, or returned task.Cancel).
-- KEYS[1] task KEYS[2] active KEYS[3] TIMEOUT index KEYS[4] CANCELLED index
-- KEYS[5] events KEYS[6] running KEYS[7] park index KEYS[8] park prefix
-- KEYS[9] park wake
-- ARGV[1] now ARGV[2] token ARGV[3] cause ARGV[4] event stream maxlen
local now = tonumber(ARGV[1])
local f = redis.call('HMGET', KEYS[1], 'state', 'lease', 'task_type', 'session_id', 'state_history', 'task_id', 'lh')
if not f[1] then return redis.error_reply('NOTFOUND') end
if f[1] ~= 'ACTIVE' and f[1] ~= 'TIMEOUT' then return redis.error_reply('STATE ' .. f[1]) end
if f[2] ~= ARGV[2] then return redis.error_reply('LEASE') end
local id = f[6]
release_slots(KEYS[1], f[7], KEYS[6], KEYS[7], KEYS[8], KEYS[9], now)
if f[1] == 'ACTIVE' then redis.call('ZREM', KEYS[2], id) else redis.call('ZREM', KEYS[3], id) end
redis.call('HSET', KEYS[1], 'state', 'CANCELLED', 'lease', '', 'updated_at', now, 'completed_at', now,
  'state_history', hist(taken(KEYS[1], f[5]), now, f[1], 'CANCELLED', ARGV[3]))
redis.call('ZADD', KEYS[4], now, id)
ev(id, f[1], 'CANCELLED', now, f[3], f[4])
flush_events(KEYS[5], ARGV[4])
return 'OK'
