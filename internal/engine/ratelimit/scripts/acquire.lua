-- acquire: take one slot of a sliding-window limit shared by every worker.
-- At most ARGV[3] grants in any window of ARGV[2] ms.
--
-- KEYS[1]  window (ZSET member = grant id, score = grant time in unix ms)
-- ARGV[1]  now, unix ms (from the caller's clock)
-- ARGV[2]  interval, ms (> 0)
-- ARGV[3]  limit, grants per interval (> 0)
-- ARGV[4]  grant id, unique per call
--
-- Returns {1, 0} when granted, or {0, wait_ms}: the time until the oldest
-- grant leaves the window (at least 1, at most the interval).
local now = tonumber(ARGV[1])
local interval = tonumber(ARGV[2])
local limit = tonumber(ARGV[3])

redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - interval)
if redis.call('ZCARD', KEYS[1]) < limit then
  redis.call('ZADD', KEYS[1], now, ARGV[4])
  redis.call('PEXPIRE', KEYS[1], interval)
  return {1, 0}
end
local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
local wait = tonumber(oldest[2]) + interval - now
if wait < 1 then wait = 1 end
if wait > interval then wait = interval end
return {0, wait}
