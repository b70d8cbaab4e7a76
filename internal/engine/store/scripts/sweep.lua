-- sweep: the max-age rule for tasks waiting in a queue: PENDING tasks that
-- entered PENDING before ARGV[2] and are older than the max age go to the
-- DLQ (fetch applies the same rule at pickup; this catches tasks no worker
-- picks up). At most ARGV[3] per call. Idempotent.
-- KEYS[1] pending index KEYS[2] dlq list KEYS[3] DLQ index KEYS[4] dlq prefix
-- KEYS[5] events KEYS[6] primary:high KEYS[7] primary KEYS[8] primary:low
-- KEYS[9] retry KEYS[10] task prefix KEYS[11] scheduled KEYS[12] park prefix
-- ARGV[1] now ARGV[2] cutoff ms ARGV[3] limit ARGV[4] max age ms ARGV[5] maxlen
-- Returns the number dead-lettered.
local now = tonumber(ARGV[1])
local maxage = tonumber(ARGV[4])
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[2], 'LIMIT', 0, tonumber(ARGV[3]))
local n = 0
for _, id in ipairs(ids) do
  local tk = KEYS[10] .. id
  local f = redis.call('HMGET', tk, 'state', 'task_type', 'session_id', 'state_history', 'queue', 'priority',
    'created_at', 'not_before', 'error_history', 'retry_count', 'qname')
  if f[1] ~= 'PENDING' then
    redis.call('ZREM', KEYS[1], id)
  else
    local base = tonumber(f[7]) or now
    local nb = tonumber(f[8])
    if nb and nb > base then base = nb end
    if now - base >= maxage and redis.call('ZSCORE', KEYS[11], id) == false then
      if not unpark_one(tk, KEYS[12], id) then
        redis.call('LREM', queue_for(f[5], f[6], KEYS[6], KEYS[7], KEYS[8], KEYS[9], f[11]), 1, id)
      end
      redis.call('ZREM', KEYS[1], id)
      local msg = 'task too old: ' .. (now - base) .. ' ms >= max age ' .. maxage .. ' ms'
      local erec = '{"at_ms":' .. now .. ',"attempt":' .. ((tonumber(f[10]) or 0) + 1) ..
        ',"error_type":"TaskTooOld","message":"' .. msg .. '"}'
      to_dlq(tk, KEYS[4] .. id, KEYS[2], KEYS[3], id, now, 'PENDING', 'TaskTooOld', msg, erec,
        { sh = f[4], eh = f[9], ttype = f[2], sess = f[3], rc = f[10] })
      n = n + 1
    end
  end
end
flush_events(KEYS[5], ARGV[5])
return n
