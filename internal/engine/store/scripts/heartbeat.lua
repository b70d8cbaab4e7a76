-- heartbeat: extend the leases a worker still holds. A lease whose token no
-- longer matches (reaped, finished elsewhere) is reported lost; tasks with
-- a cancel request are reported too (a fallback to the pub/sub message).
-- A task handed off to the external path (handoff = its token) is no longer
-- the worker's: reported lost, its lease left to the external holder.
-- KEYS[1] active KEYS[2..] the task hashes, one per pair in ARGV order
-- ARGV[1] new deadline ms, then pairs id, token
-- Returns {lost ids..., '', cancel-requested ids...}
local lost, cancel = {}, {}
local i, k = 2, 2
while i <= #ARGV do
  local id, token = ARGV[i], ARGV[i + 1]
  local f = redis.call('HMGET', KEYS[k], 'state', 'lease', 'cancel_requested', 'handoff')
  if (f[1] ~= 'ACTIVE' and f[1] ~= 'TIMEOUT') or f[2] ~= token or f[4] == token then
    lost[#lost + 1] = id
  else
    if f[1] == 'ACTIVE' then redis.call('ZADD', KEYS[1], 'XX', ARGV[1], id) end
    if f[3] == '1' then cancel[#cancel + 1] = id end
  end
  i = i + 2
  k = k + 1
end
lost[#lost + 1] = ''
for _, id in ipairs(cancel) do lost[#lost + 1] = id end
return lost
