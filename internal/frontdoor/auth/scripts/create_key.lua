-- Create a named API key, unless one of that name exists.
-- KEYS[1] the keys HASH (name -> record JSON), KEYS[2] the key's lookup
-- STRING (its SHA-256 -> name). ARGV[1] name, ARGV[2] record JSON.
-- Returns 1 when created, 0 when the name is taken.
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 1 then
  return 0
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('SET', KEYS[2], ARGV[1])
return 1
