-- notes: the writing of notifications that write.lua does, as a function
-- for any script that writes them (with other writes, atomically: the
-- outcome consumer's apply_batch.lua); notify.WriteLua is its source.
-- write_notes(k0, a0, n, w) appends n notifications (of any sessions) to
-- their sessions' streams in order, each at most once per notification id
-- when its marker applies (SET NX of the marker and the XADD together: a
-- caller that writes one twice, a replayed apply after a crash, adds one
-- entry), renews each stream's lifetime once, then announces each session
-- once, after its entries (a Hub wakes the session's connections, which
-- read the stream after their cursor: one announcement covers all).
-- Notification i: KEYS[k0+2i-1] its session's stream, KEYS[k0+2i] its
-- marker; ARGV[a0+3i-2] its body (JSON), ARGV[a0+3i-1] its session id,
-- ARGV[a0+3i] "1" when its marker applies.
-- ARGV[w] stream maxlen (approximate)  ARGV[w+1] stream ttl seconds
-- ARGV[w+2] marker ttl seconds  ARGV[w+3] the Hubs' pub/sub channel
-- ARGV[w+4] the publish command: PUBLISH, or SPUBLISH on a Redis Cluster
-- Returns per notification its entry id, or false when its marker existed.
local function write_notes(k0, a0, n, w)
  local out, told, sessions, renewed = {}, {}, {}, {}
  for i = 1, n do
    local stream, marker = KEYS[k0 + 2 * i - 1], KEYS[k0 + 2 * i]
    local a = a0 + 3 * (i - 1)
    if ARGV[a + 3] == '1' and not redis.call('SET', marker, '1', 'NX', 'EX', ARGV[w + 2]) then
      out[i] = false
    else
      out[i] = redis.call('XADD', stream, 'MAXLEN', '~', ARGV[w], '*', 'n', ARGV[a + 1])
      if not renewed[stream] then
        renewed[stream] = true
        redis.call('EXPIRE', stream, ARGV[w + 1])
      end
      local s = ARGV[a + 2]
      if not told[s] then
        told[s] = true
        sessions[#sessions + 1] = s
      end
    end
  end
  for _, s in ipairs(sessions) do
    redis.call(ARGV[w + 4], ARGV[w + 3], s)
  end
  return out
end
