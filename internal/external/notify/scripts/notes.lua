-- notes: the writing of notifications that write.lua does, as functions
-- for any script that writes them (with other writes, atomically: the
-- outcome consumer's apply_batch.lua and settle.lua); notify.WriteLua is
-- its source.
-- write_note_list(list, n, w) appends the n notifications of list (of any
-- sessions; each a table: stream, body, session, and marker when it is
-- written at most once per notification id: SET NX of the marker and the
-- XADD together, so a caller that writes one twice, a replayed apply
-- after a crash, adds one entry) to their sessions' streams in order,
-- renews each stream's lifetime once, then announces each session once,
-- after its entries (a Hub wakes the session's connections, which read
-- the stream after their cursor: one announcement covers all).
-- ARGV[w] stream maxlen (approximate)  ARGV[w+1] stream ttl seconds
-- ARGV[w+2] marker ttl seconds  ARGV[w+3] the Hubs' pub/sub channel
-- ARGV[w+4] the publish command: PUBLISH, or SPUBLISH on a Redis Cluster
-- Returns per notification its entry id, or false when its marker existed.
local function write_note_list(list, n, w)
  local out, told, sessions, renewed = {}, {}, {}, {}
  for i = 1, n do
    local e = list[i]
    if e.marker and not redis.call('SET', e.marker, '1', 'NX', 'EX', ARGV[w + 2]) then
      out[i] = false
    else
      out[i] = redis.call('XADD', e.stream, 'MAXLEN', '~', ARGV[w], '*', 'n', e.body)
      if not renewed[e.stream] then
        renewed[e.stream] = true
        redis.call('EXPIRE', e.stream, ARGV[w + 1])
      end
      if not told[e.session] then
        told[e.session] = true
        sessions[#sessions + 1] = e.session
      end
    end
  end
  for _, s in ipairs(sessions) do
    redis.call(ARGV[w + 4], ARGV[w + 3], s)
  end
  return out
end
-- write_notes(k0, a0, n, w) is write_note_list for notifications passed
-- in KEYS and ARGV: notification i: KEYS[k0+2i-1] its session's stream,
-- KEYS[k0+2i] its marker; ARGV[a0+3i-2] its body (JSON), ARGV[a0+3i-1]
-- its session id, ARGV[a0+3i] "1" when its marker applies.
local function write_notes(k0, a0, n, w)
  local list = {}
  for i = 1, n do
    local a = a0 + 3 * (i - 1)
    local e = { stream = KEYS[k0 + 2 * i - 1], body = ARGV[a + 1], session = ARGV[a + 2] }
    if ARGV[a + 3] == '1' then e.marker = KEYS[k0 + 2 * i] end
    list[i] = e
  end
  return write_note_list(list, n, w)
end
