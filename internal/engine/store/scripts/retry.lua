-- retry: manual retry, FAILED|DLQ -> PENDING into the retry queue with
-- retry_count reset to 0; the task leaves the DLQ list, its snapshot and
-- the scheduled set.
-- KEYS[1] task KEYS[2] FAILED index KEYS[3] DLQ index KEYS[4] dlq list
-- KEYS[5] dlq snapshot KEYS[6] scheduled KEYS[7] pending index KEYS[8] retry
-- KEYS[9] events KEYS[10] wake KEYS[11] primary (the default queue's, to derive a
-- named queue's lists)
-- ARGV[1] now ARGV[2] event stream maxlen
local now = tonumber(ARGV[1])
local f = redis.call('HMGET', KEYS[1], 'state', 'task_type', 'session_id', 'state_history', 'task_id', 'qname')
if not f[1] then return redis.error_reply('NOTFOUND') end
if f[1] ~= 'FAILED' and f[1] ~= 'DLQ' then return redis.error_reply('STATE ' .. f[1]) end
local id = f[5]
if f[1] == 'FAILED' then
  redis.call('ZREM', KEYS[2], id)
  redis.call('ZREM', KEYS[6], id)
else
  redis.call('ZREM', KEYS[3], id)
  redis.call('LREM', KEYS[4], 0, id)
  redis.call('DEL', KEYS[5])
end
redis.call('HSET', KEYS[1], 'state', 'PENDING', 'retry_count', '0', 'queue', 'retry', 'updated_at', now,
  'state_history', hist(taken(KEYS[1], f[4]), now, f[1], 'PENDING', 'manual_retry'))
redis.call('HDEL', KEYS[1], 'retry_after')
redis.call('ZADD', KEYS[7], now, id)
redis.call('RPUSH', queue_for('retry', '', KEYS[8], KEYS[11], KEYS[8], KEYS[8], f[6]), id)
wake(wake_for(KEYS[10], KEYS[11], f[6]))
ev(id, f[1], 'PENDING', now, f[2], f[3])
flush_events(KEYS[9], ARGV[2])
return 'OK'
