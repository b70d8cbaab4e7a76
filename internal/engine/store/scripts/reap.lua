-- reap: ACTIVE tasks whose lease expired (their worker died or hung) go
-- back to the FRONT of their queue (ACTIVE -> PENDING), or to CANCELLED
-- when a cancel was requested. At most ARGV[2] tasks per call. Idempotent:
-- two reapers racing each see a task once, as the lease set entry is gone.
-- KEYS[1] active KEYS[2] pending index KEYS[3] CANCELLED index KEYS[4] events
-- KEYS[5] wake KEYS[6] primary:high KEYS[7] primary KEYS[8] primary:low
-- KEYS[9] retry KEYS[10] task prefix KEYS[11] running KEYS[12] park index
-- KEYS[13] park prefix KEYS[14] park wake
-- ARGV[1] now ARGV[2] limit ARGV[3] event stream maxlen
-- A lease entry whose task is no longer ACTIVE (stale) is only removed.
-- Returns {entries handled, the ids requeued or cancelled...}.
local now = tonumber(ARGV[1])
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, tonumber(ARGV[2]))
if #ids == 0 then return {0} end
local moved = {#ids}
for _, id in ipairs(ids) do
  local tk = KEYS[10] .. id
  local f = redis.call('HMGET', tk, 'state', 'task_type', 'session_id', 'state_history', 'queue', 'priority',
    'cancel_requested', 'qname', 'lh')
  if f[1] == 'ACTIVE' then
    moved[#moved + 1] = id
    release_slots(tk, f[9], KEYS[11], KEYS[12], KEYS[13], KEYS[14], now)
    if f[7] == '1' then
      redis.call('HSET', tk, 'state', 'CANCELLED', 'lease', '', 'updated_at', now, 'completed_at', now,
        'state_history', hist(taken(tk, f[4]), now, 'ACTIVE', 'CANCELLED', 'lease_expired'))
      redis.call('ZADD', KEYS[3], now, id)
      ev(id, 'ACTIVE', 'CANCELLED', now, f[2], f[3])
    else
      redis.call('HSET', tk, 'state', 'PENDING', 'lease', '', 'updated_at', now,
        'state_history', hist(taken(tk, f[4]), now, 'ACTIVE', 'PENDING', 'lease_expired'))
      redis.call('ZADD', KEYS[2], now, id)
      redis.call('LPUSH', queue_for(f[5], f[6], KEYS[6], KEYS[7], KEYS[8], KEYS[9], f[8]), id)
      ev(id, 'ACTIVE', 'PENDING', now, f[2], f[3])
      wake_later(wake_for(KEYS[5], KEYS[7], f[8]))
    end
  end
end
redis.call('ZREM', KEYS[1], unpack(ids))
flush_wakes()
flush_events(KEYS[4], ARGV[3])
return moved
