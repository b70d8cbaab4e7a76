-- finish_batch: finish.lua for several outcomes whose entries are in one
-- stream, in one call: every attempt's marker set to done, then their
-- entries acknowledged with one XACK. As with finish.lua, no entry is
-- acknowledged with its outcome unmarked (the call is atomic).
-- KEYS[1] the entries' stream  KEYS[2..] the attempts' applied markers
-- ARGV[1] agent-group  ARGV[2] marker ttl (s)
-- ARGV[3..] the entries' ids, in the order of the markers
-- Returns XACK's count.
for i = 2, #KEYS do
  redis.call('SET', KEYS[i], '1', 'EX', ARGV[2])
end
return redis.call('XACK', KEYS[1], ARGV[1], unpack(ARGV, 3))
