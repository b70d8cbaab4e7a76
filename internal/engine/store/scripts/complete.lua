-- complete: ACTIVE|TIMEOUT -> COMPLETED for a batch of tasks, each guarded
-- by its lease token (fencing). Repeating a completion answers STATE.
-- (complete_code, complete_task and complete_flush in lib.lua.)
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
local out = {}
local i, k, n = 4, 11, #ARGV
local notice = ARGV[3] == '1'
local nf = 8 -- complete_fields without priority and params
if notice then nf = 10 end
local no = 0
while i <= n do
  local id, token, result = ARGV[i], ARGV[i + 1], ARGV[i + 2]
  local tk = KEYS[k]
  local f = redis.call('HMGET', tk, unpack(complete_fields, 1, nf))
  local code = complete_code(f, token)
  if code == 'OK' then
    complete_task(tk, id, token, result, now, f, KEYS[5], KEYS[6], KEYS[7], KEYS[8])
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
complete_flush(KEYS[1], KEYS[2], KEYS[3], KEYS[9], KEYS[10], now)
flush_events(KEYS[4], ARGV[2])
return out
