-- dispatch: hand several ACTIVE attempts to the external path in one call,
-- each all or nothing and in order: for each attempt, check that its task
-- is still ACTIVE under the attempt's token and not asked to cancel, take
-- one of its type's in-flight places (when the type is bounded), publish
-- its task.create, and hand the lease over (handoff.lua's writes: `worker`
-- the new holder, `handoff` the token — the record of the task's last
-- dispatch — the lease deadline timeout + grace in the active index, the
-- first check in the handoff index). Publishing and handing off in one script
-- leaves no moment where a service runs an attempt that is still the
-- worker's: a cancel request sees either the worker's attempt (not yet
-- published: the worker cancels it) or the handed-off one (the cancel
-- forwarder tells the services).
-- Every key must share one hash slot: a deployment of one partition, whose
-- task keys and the protocol's streams all carry {namespace}. Deployments
-- of several partitions publish (the dispatcher's own script) then hand
-- off (handoff.lua) instead.
-- KEYS[1] active index  KEYS[2] handoff index  KEYS[3] task.create stream
-- then per attempt i (base b = 3 + 2*(i-1)): KEYS[b+1] task hash
-- KEYS[b+2] its type's in-flight set
-- ARGV[1] now (ms)  ARGV[2] MINID (retention cut-off)  ARGV[3] attempts n
-- then per attempt (base a = 3 + 12*(i-1)): ARGV[a+1] token  ARGV[a+2] holder
-- ARGV[a+3] timeout at (ms)  ARGV[a+4] lease deadline (ms)
-- ARGV[a+5] first check (ms)  ARGV[a+6] bound (-1: unbounded)
-- ARGV[a+7] in-flight member  ARGV[a+8] in-flight deadline (ms)
-- ARGV[a+9..a+12] the event's event_id, event_type, timestamp, data
-- Returns per attempt {status, previous token or "", entry id or "", the
-- type's in-flight count after it (-1 when unbounded)}:
-- status OK, FULL (its type has no free place: nothing written), CANCEL
-- (a cancel was requested: nothing written), NOTFOUND, STATE <state>,
-- LEASE (another attempt holds the task).
local now = tonumber(ARGV[1])
local n = tonumber(ARGV[3])
local held = {} -- per in-flight set: its size, swept and counted once per call
local out = {}
for i = 1, n do
  local b = 3 + 2 * (i - 1)
  local a = 3 + 12 * (i - 1)
  local tk, inflight = KEYS[b + 1], KEYS[b + 2]
  local token = ARGV[a + 1]
  local f = redis.call('HMGET', tk, 'state', 'lease', 'task_id', 'cancel_requested', 'handoff')
  if not f[1] then
    out[i] = { 'NOTFOUND', '', '', -1 }
  elseif f[1] ~= 'ACTIVE' then
    out[i] = { 'STATE ' .. f[1], '', '', -1 }
  elseif f[2] ~= token then
    out[i] = { 'LEASE', '', '', -1 }
  elseif f[4] == '1' then
    out[i] = { 'CANCEL', '', '', -1 }
  else
    local ok = true
    local bound = tonumber(ARGV[a + 6])
    if bound >= 0 then
      local c = held[inflight]
      if not c then
        redis.call('ZREMRANGEBYSCORE', inflight, '-inf', '(' .. ARGV[1])
        c = redis.call('ZCARD', inflight)
      end
      -- below the bound a place is taken at once (ZADD says whether it
      -- is new); at the bound only an attempt already holding one goes
      if c < bound or redis.call('ZSCORE', inflight, ARGV[a + 7]) then
        c = c + redis.call('ZADD', inflight, ARGV[a + 8], ARGV[a + 7])
      else
        ok = false
      end
      held[inflight] = c
    end
    if not ok then
      out[i] = { 'FULL', '', '', held[inflight] }
    else
      local prev = f[5]
      local id = redis.call('XADD', KEYS[3], 'MINID', '~', ARGV[2], '*',
        'event_id', ARGV[a + 9], 'event_type', ARGV[a + 10], 'timestamp', ARGV[a + 11], 'data', ARGV[a + 12])
      local tid = f[3]
      redis.call('HSET', tk, 'worker', ARGV[a + 2], 'handoff', token, 'updated_at', now)
      redis.call('ZADD', KEYS[1], tonumber(ARGV[a + 4]), tid)
      redis.call('ZADD', KEYS[2], tonumber(ARGV[a + 5]), tid .. ' ' .. token .. ' ' .. ARGV[a + 3])
      out[i] = { 'OK', prev or '', id, held[inflight] or -1 }
    end
  end
end
return out
