-- unread: a session's notifications after its read cursor, in one call
-- (the cursor read and the range were two dependent round trips on every
-- session response).
-- KEYS[1] cursor  KEYS[2] the session's notification stream  ARGV[1] count
-- Returns XRANGE's reply: {{id, {field, value, ...}}, ...}, oldest first.
local cur = redis.call('GET', KEYS[1])
local start = '-'
if cur and string.match(cur, '^%d+%-%d+$') and cur ~= '0-0' then start = '(' .. cur end
return redis.call('XRANGE', KEYS[2], start, '+', 'COUNT', tonumber(ARGV[1]))
