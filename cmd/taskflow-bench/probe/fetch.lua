-- The bench's probe (taskflow-bench bench, phase "probe"): the least a
-- durable fetch can do, to compare the engine's with. PENDING -> ACTIVE for
-- up to n tasks: pop them FIFO, give each a lease (a fencing token in its
-- hash, its deadline in the lease set). No history, events, indexes,
-- priorities, retry ratio, age rule or task data returned.
-- KEYS[1] queue KEYS[2] lease set KEYS[3] task key prefix
-- ARGV[1] n ARGV[2] lease deadline ARGV[3] token prefix
-- Returns {id, token, ...}
local ids = redis.call('LPOP', KEYS[1], tonumber(ARGV[1]))
if not ids then return {} end
local out, leases = {}, {}
for i, id in ipairs(ids) do
  local token = ARGV[3] .. ':' .. i
  redis.call('HSET', KEYS[3] .. id, 'state', 'ACTIVE', 'lease', token)
  leases[#leases + 1] = ARGV[2]; leases[#leases + 1] = id
  out[#out + 1] = id; out[#out + 1] = token
end
redis.call('ZADD', KEYS[2], unpack(leases))
return out
