-- The bench's probe: the least a durable completion can do. ACTIVE ->
-- COMPLETED for a batch, each guarded by its lease token (fencing), and out
-- of the lease set. No history, events, indexes or result.
-- KEYS[1] lease set KEYS[2] task key prefix
-- ARGV: id, token, id, token, ...
-- Returns how many completed.
local done = {}
for i = 1, #ARGV, 2 do
  local tk = KEYS[2] .. ARGV[i]
  if redis.call('HGET', tk, 'lease') == ARGV[i + 1] then
    redis.call('HSET', tk, 'state', 'COMPLETED', 'lease', '')
    done[#done + 1] = ARGV[i]
  end
end
if #done > 0 then redis.call('ZREM', KEYS[1], unpack(done)) end
return #done
