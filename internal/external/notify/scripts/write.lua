-- write: append one notification to a session's stream, at most once per
-- notification id. With a marker key (KEYS[2]), SET NX of the marker and
-- the XADD happen together: a caller that writes the same notification
-- twice (a replayed apply after a crash) adds one entry.
-- KEYS[1] stream  KEYS[2] marker (optional)
-- ARGV[1] body (JSON)  ARGV[2] stream maxlen (approximate)
-- ARGV[3] stream ttl seconds  ARGV[4] marker ttl seconds
-- ARGV[5] pub/sub channel of every process's Hub  ARGV[6] session id
-- ARGV[7] the publish command: PUBLISH, or SPUBLISH on a Redis Cluster
--         (the channel is a shard channel in the namespace's slot)
-- The announcement is published in the same call (one round trip).
-- Returns the new entry's id, or false when the marker existed.
if KEYS[2] then
  if not redis.call('SET', KEYS[2], '1', 'NX', 'EX', ARGV[4]) then return false end
end
local id = redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[2], '*', 'n', ARGV[1])
redis.call('EXPIRE', KEYS[1], ARGV[3])
redis.call(ARGV[7], ARGV[5], ARGV[6])
return id
