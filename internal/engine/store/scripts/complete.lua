-- complete: ACTIVE|TIMEOUT -> COMPLETED for a batch of tasks, each guarded
-- by its lease token (fencing). Repeating a completion answers STATE.
-- KEYS[1] active (leases) KEYS[2] COMPLETED index KEYS[3] TIMEOUT index
-- KEYS[4] events KEYS[5] running KEYS[6] park index KEYS[7] park prefix
-- KEYS[8] park wake KEYS[9] queue completions per minute
-- KEYS[10] handoff index: a handed-off attempt's entry (its task's
-- `handoff` the attempt's token, `hto` its timeout: handoff.lua,
-- dispatch.lua) is removed with the completion, not left to the watcher
-- KEYS[11..] the task hashes, one per task in ARGV order
-- ARGV[1] now ARGV[2] event stream maxlen ARGV[3] "1": also return what a
-- notification of each completed task takes, then per task: id, token,
-- result
-- Returns one code per task: OK | NOTFOUND | LEASE | STATE:<state>; with
-- ARGV[3] "1", each code followed by the task's type, session id,
-- priority and params (empty unless OK), five entries per task.
local now = ARGV[1]
local hcA, hcT = now .. ',A,C', now .. ',T,C'
-- (the tables are filled through counters: #t is a search each time)
local out = {}
local done, nd = {}, 0
local unact, na = {}, 0
local untmo, nt = {}, 0
local i, k, n = 4, 11, #ARGV
local handed, nh = {}, 0 -- handoff index entries of the attempts completed
local notice = ARGV[3] == '1'
local no = 0
local perq = {} -- completions per queue (qname, '' for the default)
while i <= n do
  local id, token, result = ARGV[i], ARGV[i + 1], ARGV[i + 2]
  local tk = KEYS[k]
  local f
  if notice then
    f = redis.call('HMGET', tk, 'state', 'lease', 'task_type', 'session_id', 'qname', 'lh', 'handoff', 'hto', 'priority', 'params')
  else
    f = redis.call('HMGET', tk, 'state', 'lease', 'task_type', 'session_id', 'qname', 'lh', 'handoff', 'hto')
  end
  local code = 'OK'
  if not f[1] then
    code = 'NOTFOUND'
  elseif f[1] ~= 'ACTIVE' and f[1] ~= 'TIMEOUT' then
    code = 'STATE:' .. f[1]
  elseif f[2] ~= token then
    code = 'LEASE'
  else
    -- the history's entry goes to hc (see taken in lib.lua); completed_at
    -- is its time
    local hc = hcA
    if f[1] ~= 'ACTIVE' then hc = hcT end
    redis.call('HSET', tk, 'state', 'COMPLETED', 'result', result, 'updated_at', now, 'lease', '', 'hc', hc)
    if f[1] == 'ACTIVE' then na = na + 1; unact[na] = id else nt = nt + 1; untmo[nt] = id end
    done[nd + 1] = now; done[nd + 2] = id; nd = nd + 2
    ev(id, f[1], 'COMPLETED', now, f[3], f[4])
    release_slots(tk, f[6], KEYS[5], KEYS[6], KEYS[7], KEYS[8], now)
    if f[7] == token and f[8] then nh = nh + 1; handed[nh] = id .. ' ' .. token .. ' ' .. f[8] end
    local q = f[5] or ''
    perq[q] = (perq[q] or 0) + 1
  end
  if notice then
    out[no + 1] = code
    if code == 'OK' then
      out[no + 2] = f[3] or ''; out[no + 3] = f[4] or ''; out[no + 4] = f[9] or ''; out[no + 5] = f[10] or ''
    else
      out[no + 2] = ''; out[no + 3] = ''; out[no + 4] = ''; out[no + 5] = ''
    end
    no = no + 5
  else
    out[k - 10] = code
  end
  i = i + 3
  k = k + 1
end
if na > 0 then redis.call('ZREM', KEYS[1], unpack(unact)) end
if nt > 0 then redis.call('ZREM', KEYS[3], unpack(untmo)) end
if nd > 0 then redis.call('ZADD', KEYS[2], unpack(done)) end
if nh > 0 then redis.call('ZREM', KEYS[10], unpack(handed)) end
local minute = math.floor(tonumber(now) / 60000)
for q, c in pairs(perq) do
  if q == '' then q = 'default' end
  if redis.call('HINCRBY', KEYS[9], q .. '|' .. minute, c) == c then
    redis.call('HDEL', KEYS[9], q .. '|' .. (minute - 2)) -- a new minute: drop the one before last
  end
end
flush_events(KEYS[4], ARGV[2])
return out
