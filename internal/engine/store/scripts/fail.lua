-- fail: ACTIVE|TIMEOUT -> FAILED, then either a scheduled retry (the task
-- waits FAILED in the scheduled set until due) or FAILED -> DLQ when the
-- failure is permanent, retries are exhausted or the task is too old.
-- Guarded by the lease token.
-- KEYS[1] task KEYS[2] active KEYS[3] TIMEOUT index KEYS[4] FAILED index
-- KEYS[5] scheduled KEYS[6] dlq list KEYS[7] DLQ index KEYS[8] dlq snapshot
-- KEYS[9] events KEYS[10] running KEYS[11] park index KEYS[12] park prefix
-- KEYS[13] park wake
-- ARGV[1] now ARGV[2] token ARGV[3] permanent (1/0) ARGV[4] retry due (ms)
-- ARGV[5] error_type ARGV[6] message ARGV[7] error record (JSON)
-- ARGV[8] max age ms (0 = off) ARGV[9] event stream maxlen
-- Returns {state, reason}: FAILED|DLQ and why.
local now = tonumber(ARGV[1])
local f = redis.call('HMGET', KEYS[1], 'state', 'lease', 'task_type', 'session_id', 'state_history',
  'error_history', 'retry_count', 'max_retries', 'created_at', 'not_before', 'task_id', 'lh')
if not f[1] then return redis.error_reply('NOTFOUND') end
if f[1] ~= 'ACTIVE' and f[1] ~= 'TIMEOUT' then return redis.error_reply('STATE ' .. f[1]) end
if f[2] ~= ARGV[2] then return redis.error_reply('LEASE') end
local id = f[11]
local from = f[1]
release_slots(KEYS[1], f[12], KEYS[10], KEYS[11], KEYS[12], KEYS[13], now)
if from == 'ACTIVE' then redis.call('ZREM', KEYS[2], id) else redis.call('ZREM', KEYS[3], id) end
local rc = tonumber(f[7]) or 0
local maxr = tonumber(f[8]) or 0
local base = tonumber(f[9]) or now
local nb = tonumber(f[10])
if nb and nb > base then base = nb end
local maxage = tonumber(ARGV[8])
local reason = ''
if ARGV[3] == '1' then reason = 'permanent'
elseif rc >= maxr then reason = 'max_retries'
elseif maxage > 0 and now - base >= maxage then reason = 'max_age' end
local sh = hist(taken(KEYS[1], f[5]), now, from, 'FAILED', ARGV[5])
ev(id, from, 'FAILED', now, f[3], f[4])
if reason ~= '' then
  to_dlq(KEYS[1], KEYS[8], KEYS[6], KEYS[7], id, now, 'FAILED', ARGV[5], ARGV[6], ARGV[7],
    { sh = sh, eh = f[6], ttype = f[3], sess = f[4], rc = f[7] }, reason)
  flush_events(KEYS[9], ARGV[9])
  return { 'DLQ', reason }
end
local eh = f[6] or ''
if eh ~= '' then eh = eh .. '\n' .. ARGV[7] else eh = ARGV[7] end
redis.call('HSET', KEYS[1], 'state', 'FAILED', 'updated_at', now, 'error_type', ARGV[5], 'last_error', ARGV[6],
  'error_history', eh, 'state_history', sh, 'lease', '', 'retry_count', rc + 1, 'retry_after', ARGV[4],
  'queue', 'retry')
redis.call('ZADD', KEYS[4], now, id)
redis.call('ZADD', KEYS[5], ARGV[4], id)
flush_events(KEYS[9], ARGV[9])
return { 'FAILED', 'retry' }
