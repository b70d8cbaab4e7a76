-- dispatch: hand one attempt of an external task to the services, all or
-- nothing: take one of its type's in-flight places (when the type is
-- bounded), record the attempt's token as the task's last dispatch, and
-- publish its task.create. So a place is held exactly by the attempts that
-- were published: a process killed around the call leaves either nothing
-- or the whole dispatch, never a place without its event.
-- An entry's score in the in-flight set is the attempt's handed-off lease
-- deadline; entries past it (attempts lost without an outcome) free their
-- place here.
-- KEYS[1] the type's in-flight set (ZSET member "id token")
-- KEYS[2] the task's last dispatch token  KEYS[3] task.create
-- ARGV[1] now (ms)  ARGV[2] bound (-1: unbounded)  ARGV[3] member
-- ARGV[4] deadline (ms)  ARGV[5] token  ARGV[6] token ttl (s)
-- ARGV[7] MINID (retention cut-off)  ARGV[8..] the event's field/value pairs
-- Returns false when the type is full (nothing written), else
-- {previous token or "", the task.create entry id}.
local bound = tonumber(ARGV[2])
if bound >= 0 then
  redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', '(' .. ARGV[1])
  if not redis.call('ZSCORE', KEYS[1], ARGV[3]) and redis.call('ZCARD', KEYS[1]) >= bound then
    return false
  end
  redis.call('ZADD', KEYS[1], ARGV[4], ARGV[3])
end
local prev = redis.call('SET', KEYS[2], ARGV[5], 'EX', ARGV[6], 'GET')
local args = { 'XADD', KEYS[3], 'MINID', '~', ARGV[7], '*' }
for i = 8, #ARGV do args[#args + 1] = ARGV[i] end
local id = redis.call(unpack(args))
return { prev or '', id }
