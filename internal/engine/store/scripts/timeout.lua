-- timeout: ACTIVE -> TIMEOUT (overdue). The lease token is kept, so a late
-- completion by the same holder still moves the task to COMPLETED; the task
-- leaves the lease set (the reaper no longer requeues it).
-- KEYS[1] task KEYS[2] active KEYS[3] TIMEOUT index KEYS[4] events
-- ARGV[1] now ARGV[2] token ARGV[3] event stream maxlen
local now = tonumber(ARGV[1])
local f = redis.call('HMGET', KEYS[1], 'state', 'lease', 'task_type', 'session_id', 'state_history', 'task_id')
if not f[1] then return redis.error_reply('NOTFOUND') end
if f[1] ~= 'ACTIVE' then return redis.error_reply('STATE ' .. f[1]) end
if f[2] ~= ARGV[2] then return redis.error_reply('LEASE') end
local id = f[6]
redis.call('ZREM', KEYS[2], id)
redis.call('ZADD', KEYS[3], now, id)
redis.call('HSET', KEYS[1], 'state', 'TIMEOUT', 'updated_at', now,
  'state_history', hist(taken(KEYS[1], f[5]), now, 'ACTIVE', 'TIMEOUT', 'overdue'))
ev(id, 'ACTIVE', 'TIMEOUT', now, f[3], f[4])
flush_events(KEYS[4], ARGV[3])
return 'OK'
