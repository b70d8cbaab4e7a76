-- handoff: the holder of an ACTIVE task hands its lease to the external
-- path (the dispatcher published task.create; a service works on it). The
-- task stays ACTIVE with the SAME token (the service's outcome is applied
-- with it); `worker` names the new holder, `handoff` records the token so
-- the old worker's heartbeat stops extending the lease, the lease deadline
-- becomes ARGV[5] (timeout + grace) and the attempt is indexed in the
-- handoff set ("id token timeout-ms") for the orchestrator's watcher, due
-- at its first check ARGV[6] (service liveness, or the timeout); `hto`
-- keeps the timeout, so the completion that ends the attempt can name its
-- entry and remove it (complete.lua).
-- KEYS[1] task KEYS[2] active KEYS[3] handoff index
-- ARGV[1] now ARGV[2] token ARGV[3] holder ARGV[4] timeout at ms
-- ARGV[5] lease deadline ms ARGV[6] first check ms
-- Returns 1 when a cancel was already requested (the caller tells the
-- service), else 0.
local now = tonumber(ARGV[1])
local f = redis.call('HMGET', KEYS[1], 'state', 'lease', 'task_id', 'cancel_requested')
if not f[1] then return redis.error_reply('NOTFOUND') end
if f[1] ~= 'ACTIVE' then return redis.error_reply('STATE ' .. f[1]) end
if f[2] ~= ARGV[2] then return redis.error_reply('LEASE') end
local id = f[3]
redis.call('HSET', KEYS[1], 'worker', ARGV[3], 'handoff', ARGV[2], 'hto', ARGV[4], 'updated_at', now)
redis.call('ZADD', KEYS[2], tonumber(ARGV[5]), id)
redis.call('ZADD', KEYS[3], tonumber(ARGV[6]), id .. ' ' .. ARGV[2] .. ' ' .. ARGV[4])
if f[4] == '1' then return 1 end
return 0
