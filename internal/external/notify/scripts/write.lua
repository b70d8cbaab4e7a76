-- write: append notifications (one, or several of any sessions) to their
-- sessions' streams, each at most once per notification id, in order:
-- with a marker, SET NX of the marker and the XADD happen together, so a
-- caller that writes the same notification twice (a replayed apply after
-- a crash) adds one entry. The sessions are announced once each, after their entries: a
-- Hub wakes a session's connections, which read the stream after their
-- cursor, so one announcement covers all of a session's new entries.
-- KEYS per notification i: KEYS[2i-1] its session's stream
-- KEYS[2i] its marker (ignored when ARGV's flag is "0")
-- ARGV[1] stream maxlen (approximate)  ARGV[2] stream ttl seconds
-- ARGV[3] marker ttl seconds  ARGV[4] pub/sub channel of every Hub
-- ARGV[5] the publish command: PUBLISH, or SPUBLISH on a Redis Cluster
-- then per notification i (base a = 5 + 3*(i-1)): ARGV[a+1] body (JSON)
-- ARGV[a+2] session id  ARGV[a+3] "1": the marker applies
-- Returns per notification its entry id, or false when its marker existed.
local out = {}
local told = {}
local sessions = {}
local n = #KEYS / 2
for i = 1, n do
  local a = 5 + 3 * (i - 1)
  local stream, marker = KEYS[2 * i - 1], KEYS[2 * i]
  if ARGV[a + 3] == '1' and not redis.call('SET', marker, '1', 'NX', 'EX', ARGV[3]) then
    out[i] = false
  else
    out[i] = redis.call('XADD', stream, 'MAXLEN', '~', ARGV[1], '*', 'n', ARGV[a + 1])
    redis.call('EXPIRE', stream, ARGV[2])
    local s = ARGV[a + 2]
    if not told[s] then
      told[s] = true
      sessions[#sessions + 1] = s
    end
  end
end
for _, s in ipairs(sessions) do
  redis.call(ARGV[5], ARGV[4], s)
end
return out
