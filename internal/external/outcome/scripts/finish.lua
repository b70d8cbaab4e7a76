-- finish: mark the attempt's outcome done (every effect applied) and
-- acknowledge the entry that carried it, together: an entry is never
-- acknowledged with its outcome unmarked, so neither a redelivery nor a
-- later duplicate of the attempt applies it again.
-- KEYS[1] the attempt's applied marker  KEYS[2] the entry's stream
-- ARGV[1] agent-group  ARGV[2] the entry's id  ARGV[3] marker ttl (s)
-- Returns XACK's count.
redis.call('SET', KEYS[1], '1', 'EX', ARGV[3])
return redis.call('XACK', KEYS[2], ARGV[1], ARGV[2])
