-- publish_dlq: publish the task.dlq of an attempt whose failure
-- dead-lettered its task, once. The step of the attempt's marker and the
-- XADD happen together: a replayed dead-lettering (the entry delivered
-- again after a crash) finds the marker past this step and writes nothing.
-- KEYS[1] the attempt's applied marker  KEYS[2] task.dlq
-- ARGV[1] the name of the entry that claimed the outcome
-- ARGV[2] marker ttl (s)  ARGV[3] MINID (retention cut-off)
-- ARGV[4..] the event's field/value pairs
-- Returns the new entry's id, or false when the marker is not the claim
-- of that entry (task.dlq published already, or the outcome is another
-- entry's).
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return false end
redis.call('SET', KEYS[1], 'dlq ' .. ARGV[1], 'EX', ARGV[2])
local args = { 'XADD', KEYS[2], 'MINID', '~', ARGV[3], '*' }
for i = 4, #ARGV do args[#args + 1] = ARGV[i] end
return redis.call(unpack(args))
