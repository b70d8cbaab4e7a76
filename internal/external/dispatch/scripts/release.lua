-- release: free an attempt's in-flight place and, when it was held,
-- announce it on the freed channel ("<set> 1"), in one call: the
-- announcement is never seen before the place is free (a pipeline on a
-- cluster client may send the PUBLISH to another node), and it costs the
-- outcome one round trip.
-- KEYS[1] the type's in-flight set
-- ARGV[1] the attempt's member  ARGV[2] the freed channel
-- Returns ZREM's count.
local n = redis.call('ZREM', KEYS[1], ARGV[1])
if n > 0 then
  redis.call('PUBLISH', ARGV[2], KEYS[1] .. ' ' .. n)
end
return n
