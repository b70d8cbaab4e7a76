-- admit: take one of a task type's in-flight places for a dispatched
-- attempt, if one is free. An entry's score is the attempt's handed-off
-- lease deadline; entries past it (an attempt lost without an outcome)
-- free their place here.
-- KEYS[1] the type's in-flight set (ZSET member "id token")
-- ARGV[1] now (ms) ARGV[2] bound ARGV[3] member ARGV[4] deadline (ms)
-- Returns 1 when admitted (or already admitted), 0 when the type is full.
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', '(' .. ARGV[1])
if redis.call('ZSCORE', KEYS[1], ARGV[3]) then
  redis.call('ZADD', KEYS[1], ARGV[4], ARGV[3])
  return 1
end
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then return 0 end
redis.call('ZADD', KEYS[1], ARGV[4], ARGV[3])
return 1
