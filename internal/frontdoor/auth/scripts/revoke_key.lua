-- Revoke a named API key: its record and its lookup go together.
-- KEYS[1] the keys HASH, KEYS[2] the key's lookup STRING (the caller read
-- the record for its hash). ARGV[1] name, ARGV[2] the record it read.
-- Returns 1 when revoked, 0 when the record is gone or changed meanwhile.
if redis.call('HGET', KEYS[1], ARGV[1]) ~= ARGV[2] then
  return 0
end
redis.call('HDEL', KEYS[1], ARGV[1])
redis.call('DEL', KEYS[2])
return 1
