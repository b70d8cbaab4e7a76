-- delete: remove a task that is not ACTIVE, with every index and queue
-- entry that names it. An ACTIVE task is refused (cancel it first): its
-- worker still holds it.
-- KEYS[1] task KEYS[2] dlq snapshot KEYS[3] dlq list KEYS[4] scheduled
-- KEYS[5] primary:high KEYS[6] primary KEYS[7] primary:low KEYS[8] retry
-- KEYS[9..15] state indexes PENDING, ACTIVE, COMPLETED, FAILED, DLQ, TIMEOUT, CANCELLED
-- KEYS[16] running KEYS[17] park index KEYS[18] park prefix KEYS[19] park wake
-- ARGV[2] now
-- ARGV[1] (optional) the state the task must be in (a bulk delete from the
-- DLQ deletes only dead letters, not a task retried meanwhile)
local f = redis.call('HMGET', KEYS[1], 'state', 'queue', 'priority', 'task_id', 'qname', 'lh')
if not f[1] then return redis.error_reply('NOTFOUND') end
if f[1] == 'ACTIVE' then return redis.error_reply('STATE ACTIVE') end
if ARGV[1] and ARGV[1] ~= '' and f[1] ~= ARGV[1] then return redis.error_reply('STATE ' .. f[1]) end
local id = f[4]
if f[1] == 'PENDING' then
  if redis.call('ZREM', KEYS[4], id) == 0 and not unpark_one(KEYS[1], KEYS[18], id) then
    redis.call('LREM', queue_for(f[2], f[3], KEYS[5], KEYS[6], KEYS[7], KEYS[8], f[5]), 1, id)
  end
elseif f[1] == 'TIMEOUT' then
  release_slots(KEYS[1], f[6], KEYS[16], KEYS[17], KEYS[18], KEYS[19], ARGV[2])
elseif f[1] == 'FAILED' then
  redis.call('ZREM', KEYS[4], id)
elseif f[1] == 'DLQ' then
  redis.call('LREM', KEYS[3], 0, id)
end
for i = 9, 15 do redis.call('ZREM', KEYS[i], id) end
redis.call('DEL', KEYS[1], KEYS[2])
return f[1]
