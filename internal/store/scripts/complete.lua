-- complete: ACTIVE|TIMEOUT -> COMPLETED for a batch of tasks, each guarded
-- by its lease token (fencing). Repeating a completion answers STATE.
-- KEYS[1] active (leases) KEYS[2] COMPLETED index KEYS[3] TIMEOUT index
-- KEYS[4] events KEYS[5..] the task hashes, one per task in ARGV order
-- ARGV[1] now ARGV[2] event stream maxlen, then per task: id, token, result
-- Returns one code per task: OK | NOTFOUND | LEASE | STATE:<state>
local now = ARGV[1]
local hcA, hcT = now .. ',A,C', now .. ',T,C'
local out = {}
local done = {}
local unact = {}
local untmo = {}
local i, k = 3, 5
while i <= #ARGV do
  local id, token, result = ARGV[i], ARGV[i + 1], ARGV[i + 2]
  local tk = KEYS[k]
  local f = redis.call('HMGET', tk, 'state', 'lease', 'task_type', 'session_id')
  if not f[1] then
    out[#out + 1] = 'NOTFOUND'
  elseif f[1] ~= 'ACTIVE' and f[1] ~= 'TIMEOUT' then
    out[#out + 1] = 'STATE:' .. f[1]
  elseif f[2] ~= token then
    out[#out + 1] = 'LEASE'
  else
    -- the history's entry goes to hc (see taken in lib.lua); completed_at
    -- is its time
    local hc = hcA
    if f[1] ~= 'ACTIVE' then hc = hcT end
    redis.call('HSET', tk, 'state', 'COMPLETED', 'result', result, 'updated_at', now, 'lease', '', 'hc', hc)
    if f[1] == 'ACTIVE' then unact[#unact + 1] = id else untmo[#untmo + 1] = id end
    done[#done + 1] = now; done[#done + 1] = id
    ev(id, f[1], 'COMPLETED', now, f[3], f[4])
    out[#out + 1] = 'OK'
  end
  i = i + 3
  k = k + 1
end
if #unact > 0 then redis.call('ZREM', KEYS[1], unpack(unact)) end
if #untmo > 0 then redis.call('ZREM', KEYS[3], unpack(untmo)) end
if #done > 0 then redis.call('ZADD', KEYS[2], unpack(done)) end
flush_events(KEYS[4], ARGV[2])
return out
