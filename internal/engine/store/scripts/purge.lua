-- purge: retention. Finished tasks that entered their state (COMPLETED,
-- CANCELLED or DLQ: KEYS[1], the state's index) before the cut-off are
-- deleted with their index entries: the hash, and for DLQ the DLQ list
-- entry and the failure snapshot. At most ARGV[2] per call; the oldest
-- first. An index entry whose task moved on (or is gone) is only removed
-- from the index. Idempotent: schedulers racing each find the entries the
-- other left. No lifecycle event (like delete): the archive already holds
-- the finished task.
-- KEYS[1] state index KEYS[2] task prefix KEYS[3] dlq list KEYS[4] dlq prefix
-- ARGV[1] cut-off ms ARGV[2] limit ARGV[3] the index's state
-- Returns {tasks deleted, index entries handled}.
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[2]))
if #ids == 0 then return {0, 0} end
local n = 0
for _, id in ipairs(ids) do
  local tk = KEYS[2] .. id
  local st = redis.call('HGET', tk, 'state')
  if st == ARGV[3] then
    redis.call('DEL', tk)
    if st == 'DLQ' then
      -- the oldest DLQ entries are at the tail of the list (LPUSH)
      redis.call('LREM', KEYS[3], -1, id)
      redis.call('DEL', KEYS[4] .. id)
    end
    n = n + 1
  end
end
redis.call('ZREM', KEYS[1], unpack(ids))
return {n, #ids}
