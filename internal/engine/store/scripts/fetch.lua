-- fetch: PENDING -> ACTIVE for up to n tasks, FIFO per queue, taking from
-- the retry queue at the adaptive ratio and from the primary queues by
-- priority weight (systematic sampling, so low priority is never starved).
-- A task older than the max age at pickup goes PENDING -> DLQ instead.
-- Ids whose task is no longer PENDING (stale) are dropped.
-- KEYS[1] primary:high KEYS[2] primary KEYS[3] primary:low KEYS[4] retry
-- KEYS[5] active (leases) KEYS[6] pending index KEYS[7] events KEYS[8] wake
-- KEYS[9] task prefix KEYS[10] dlq list KEYS[11] dlq index KEYS[12] dlq prefix
-- ARGV[1] now ARGV[2] n ARGV[3] r1 ARGV[4] r2 (uniform [0,1) from the caller)
-- ARGV[5] lease deadline ARGV[6] token prefix ARGV[7] worker id
-- ARGV[8] warning depth ARGV[9] critical depth ARGV[10] ratio normal
-- ARGV[11] ratio warning ARGV[12] ratio critical
-- ARGV[13..15] weights high, normal, low ARGV[16] max age ms (0 = off)
-- ARGV[17] event stream maxlen
-- Returns {id, token, task_type, content, params, session_id, priority,
--   timeout_ms, retry_count, max_retries, created_at, traceparent, ...}
local now = tonumber(ARGV[1])
local nows = ARGV[1] -- the string form: no number formatting per write
local n = tonumber(ARGV[2])
local r1, r2 = tonumber(ARGV[3]), tonumber(ARGV[4])
local rdepth = redis.call('LLEN', KEYS[4])
local lens = { redis.call('LLEN', KEYS[1]), redis.call('LLEN', KEYS[2]), redis.call('LLEN', KEYS[3]) }
local pdepth = lens[1] + lens[2] + lens[3]
if rdepth + pdepth == 0 then return {} end

local ratio = tonumber(ARGV[10])
if rdepth > tonumber(ARGV[9]) then ratio = tonumber(ARGV[12])
elseif rdepth >= tonumber(ARGV[8]) then ratio = tonumber(ARGV[11]) end

local nr = math.floor(n * ratio + r1)
if nr > n then nr = n end
local np = n - nr
if nr > rdepth then np = np + (nr - rdepth); nr = rdepth end
if np > pdepth then
  local extra = np - pdepth
  np = pdepth
  nr = math.min(rdepth, nr + extra)
end

-- split np over the non-empty primary queues by weight
local w = { tonumber(ARGV[13]), tonumber(ARGV[14]), tonumber(ARGV[15]) }
local wsum = 0
for i = 1, 3 do if lens[i] > 0 then wsum = wsum + w[i] end end
local take = { 0, 0, 0 }
if np > 0 and wsum > 0 then
  local cum, prev = 0, 0
  for i = 1, 3 do
    if lens[i] > 0 then
      cum = cum + w[i]
      local upto = math.floor(np * cum / wsum + r2)
      take[i] = upto - prev
      prev = upto
    end
  end
  -- systematic rounding may exceed np by one at the end; clamp, then move
  -- what a short queue cannot give to the others, highest priority first
  local left = np
  for i = 1, 3 do
    if take[i] > left then take[i] = left end
    if take[i] > lens[i] then take[i] = lens[i] end
    left = left - take[i]
  end
  for i = 1, 3 do
    if left == 0 then break end
    local room = lens[i] - take[i]
    local more = math.min(room, left)
    take[i] = take[i] + more
    left = left - more
  end
end

local ids = {}
local function pop(k, c)
  if c <= 0 then return end
  local got = redis.call('LPOP', k, c)
  if got then for _, id in ipairs(got) do ids[#ids + 1] = id end end
end
pop(KEYS[4], nr)
pop(KEYS[1], take[1])
pop(KEYS[2], take[2])
pop(KEYS[3], take[3])

local maxage = tonumber(ARGV[16])
local ha = nows .. ',P,A,' .. ARGV[7] -- the history entry, the same for every task of this call
-- (the tables are filled through counters: #t is a search each time)
local out, no = {}, 0
local leases, nl = {}, 0
local unidx, nu = {}, 0
local toknum = 0
for _, id in ipairs(ids) do
  local tk = KEYS[9] .. id
  local f = redis.call('HMGET', tk, 'state', 'task_type', 'content', 'params', 'session_id', 'priority',
    'timeout_ms', 'retry_count', 'max_retries', 'created_at', 'not_before', 'tp')
  if f[1] == 'PENDING' then
    local created = tonumber(f[10]) or now
    local base = created
    local nb = tonumber(f[11])
    if nb and nb > base then base = nb end
    nu = nu + 1; unidx[nu] = id
    if maxage > 0 and now - base >= maxage then
      local msg = 'task too old at pickup: ' .. (now - base) .. ' ms >= max age ' .. maxage .. ' ms'
      local erec = '{"at_ms":' .. now .. ',"attempt":' .. ((tonumber(f[8]) or 0) + 1) ..
        ',"error_type":"TaskTooOld","message":"' .. msg .. '"}'
      to_dlq(tk, KEYS[12] .. id, KEYS[10], KEYS[11], id, now, 'PENDING', 'TaskTooOld', msg, erec,
        { sh = redis.call('HGET', tk, 'state_history'), eh = redis.call('HGET', tk, 'error_history'), ttype = f[2], sess = f[5], rc = f[8] })
    else
      toknum = toknum + 1
      local token = ARGV[6] .. ':' .. toknum
      -- the history's entry goes to ha (see taken in lib.lua): the history
      -- itself is neither read nor rewritten here; started_at is its time
      redis.call('HSET', tk, 'state', 'ACTIVE', 'lease', token, 'worker', ARGV[7], 'updated_at', nows,
        'ha', ha)
      leases[nl + 1] = ARGV[5]; leases[nl + 2] = id; nl = nl + 2
      ev(id, 'PENDING', 'ACTIVE', nows, f[2], f[5])
      out[no + 1] = id; out[no + 2] = token; no = no + 2
      for j = 2, 10 do no = no + 1; out[no] = f[j] or '' end
      no = no + 1; out[no] = f[12] or '' -- the traceparent
    end
  end
end
if nu > 0 then redis.call('ZREM', KEYS[6], unpack(unidx)) end
if nl > 0 then zadd(KEYS[5], leases) end
if redis.call('LLEN', KEYS[4]) + redis.call('LLEN', KEYS[1]) + redis.call('LLEN', KEYS[2]) + redis.call('LLEN', KEYS[3]) > 0 then
  wake(KEYS[8])
end
flush_events(KEYS[7], ARGV[17])
return out
