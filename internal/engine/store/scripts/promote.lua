-- promote: move due entries of the scheduled set to their queue, at most
-- ARGV[2] per call: FAILED -> PENDING into the retry queue (or FAILED ->
-- DLQ when the task is too old), delayed PENDING tasks into their queue.
-- Entries whose task is in any other state (cancelled, deleted, retried by
-- hand) are dropped. Idempotent: safe with several schedulers.
-- KEYS[1] scheduled KEYS[2] pending index KEYS[3] FAILED index KEYS[4] dlq list
-- KEYS[5] DLQ index KEYS[6] dlq prefix KEYS[7] events KEYS[8] wake
-- KEYS[9] primary:high KEYS[10] primary KEYS[11] primary:low KEYS[12] retry
-- KEYS[13] task prefix
-- ARGV[1] now ARGV[2] limit ARGV[3] max age ms (0 = off) ARGV[4] maxlen
-- Returns the number of entries handled.
local now = tonumber(ARGV[1])
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, tonumber(ARGV[2]))
if #ids == 0 then return 0 end
local maxage = tonumber(ARGV[3])
for _, id in ipairs(ids) do
  local tk = KEYS[13] .. id
  local f = redis.call('HMGET', tk, 'state', 'task_type', 'session_id', 'state_history', 'queue', 'priority',
    'created_at', 'not_before', 'error_history', 'retry_count', 'error_type', 'last_error', 'qname')
  if f[1] == 'FAILED' then
    local base = tonumber(f[7]) or now
    local nb = tonumber(f[8])
    if nb and nb > base then base = nb end
    if maxage > 0 and now - base >= maxage then
      redis.call('ZREM', KEYS[3], id)
      to_dlq(tk, KEYS[6] .. id, KEYS[4], KEYS[5], id, now, 'FAILED', f[11] or 'Default', f[12] or '', '',
        { sh = f[4], eh = f[9], ttype = f[2], sess = f[3], rc = f[10] }, 'max_age')
    else
      redis.call('HSET', tk, 'state', 'PENDING', 'updated_at', now, 'queue', 'retry',
        'state_history', hist(taken(tk, f[4]), now, 'FAILED', 'PENDING', 'retry_due'))
      redis.call('ZREM', KEYS[3], id)
      redis.call('ZADD', KEYS[2], now, id)
      redis.call('RPUSH', queue_for('retry', f[6], KEYS[9], KEYS[10], KEYS[11], KEYS[12], f[13]), id)
      ev(id, 'FAILED', 'PENDING', now, f[2], f[3])
      wake_later(wake_for(KEYS[8], KEYS[10], f[13]))
    end
  elseif f[1] == 'PENDING' then
    redis.call('RPUSH', queue_for(f[5], f[6], KEYS[9], KEYS[10], KEYS[11], KEYS[12], f[13]), id)
    wake_later(wake_for(KEYS[8], KEYS[10], f[13]))
  end
end
redis.call('ZREM', KEYS[1], unpack(ids))
flush_wakes()
flush_events(KEYS[7], ARGV[4])
return #ids
