-- publish_timeout: publish an attempt's task.timeout at most once. The SET NX
-- of the marker and the XADD happen together, so a publication that is
-- replayed (the watcher died after marking the task TIMEOUT, or two
-- watchers act on the same due entry) writes one event.
-- KEYS[1] marker  KEYS[2] stream
-- ARGV[1] marker ttl seconds  ARGV[2] MINID (retention cut-off)
-- ARGV[3..] the event's field/value pairs
-- Returns the new entry's id, or false when the marker existed.
if not redis.call('SET', KEYS[1], '1', 'NX', 'EX', ARGV[1]) then return false end
local args = { 'XADD', KEYS[2], 'MINID', '~', ARGV[2], '*' }
for i = 3, #ARGV do args[#args + 1] = ARGV[i] end
return redis.call(unpack(args))
