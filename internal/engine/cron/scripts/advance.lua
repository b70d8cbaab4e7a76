-- advance: move a schedule's latest handled due time forward, never back.
-- Schedulers whose clocks differ finish a tick in either order; a marker
-- moved back would make the next tick try due times again (refused by
-- their task ids while those tasks exist, fired twice once purged). A
-- schedule removed meanwhile keeps no marker.
-- KEYS[1] cron:last  KEYS[2] cron:schedules  ARGV[1] schedule id  ARGV[2] due time, unix ms
-- Returns 1 when the marker moved.
if redis.call('HEXISTS', KEYS[2], ARGV[1]) == 0 then return 0 end
local cur = tonumber(redis.call('HGET', KEYS[1], ARGV[1]) or '')
if cur and cur >= tonumber(ARGV[2]) then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
return 1
