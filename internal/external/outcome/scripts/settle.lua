-- settle: a batch of task.completed entries of one stream, each the first
-- outcome of its attempt, applied and ended in one atomic call (a
-- deployment of one partition without archive; store lib.lua and
-- notify's notes.lua and held.lua prepended): per entry the look for earlier entries
-- other consumers hold (claim_batch.lua's), the attempt's marker, the
-- completion (complete.lua's, lib.lua's complete_task), the in-flight
-- place freed, the result cached, the notification written, the marker
-- set done; then the batch's writes and one XACK of the settled entries.
-- No step is seen without the others, so the marker goes from absent to
-- done ("1") at once, the notification needs no write-once marker, and
-- a crash leaves an entry as it was read.
-- An entry is settled only when all of this applies at once: no earlier
-- entry held by another consumer, the completion applies (the
-- task ACTIVE or TIMEOUT under the token), its type is one of the types
-- given (the notification's message known), its session and priority
-- need no JSON escape, and (checked last, by setting it) no marker.
-- Otherwise nothing of it is written and it is
-- answered "alone": the consumer's other paths decide (claim_batch.lua,
-- claim.lua), as for an entry never seen here.
-- KEYS[1] the entries' stream; KEYS[2..11] complete.lua's KEYS[1..10]
-- (active, COMPLETED index, TIMEOUT index, events, running, park index,
-- park prefix, park wake, queue completions, handoff index); per entry i
-- (base b = 11 + 3*(i-1)): KEYS[b+1] its task's hash  KEYS[b+2] its
-- attempt's marker  KEYS[b+3] its result cache; then per type j:
-- KEYS[11+3n+j] its in-flight set
-- ARGV[1] agent-group  ARGV[2] this consumer  ARGV[3] marker ttl (s)
-- ARGV[4] the greatest of the entries' ids  ARGV[5] now (unix ms)
-- ARGV[6] event stream maxlen  ARGV[7] result cache ttl (s)
-- ARGV[8] the time written in the cache and the notifications (RFC 3339, ms)
-- ARGV[9] n, the entries  ARGV[10] m, the types
-- ARGV[11..15] write.lua's ARGV[1..5] (notification stream maxlen, stream
-- ttl, notification marker ttl, channel, publish command)
-- ARGV[16] the notification streams' prefix (the session id follows)
-- ARGV[17] the channel of freed in-flight places (apply_batch.lua's last)
-- per entry (base a = 17 + 5*(i-1)): its id, its task's id, its attempt's
-- token, its result (JSON), its notification's id
-- per type (base t = 17 + 5n + 2*(j-1)): its name, its notification's
-- message as a JSON string (quoted)
-- Returns one string per entry: "ok <its task type>" when settled, else
-- "alone".
local n, m = tonumber(ARGV[9]), tonumber(ARGV[10])
local now, stamp = ARGV[5], ARGV[8]
local types = {}
for j = 1, m do
  local t = 17 + 5 * n + 2 * (j - 1)
  types[ARGV[t + 1]] = { msg = ARGV[t + 2], set = KEYS[11 + 3 * n + j] }
end
local prios = { high = true, normal = true, low = true }
local function plain(s)
  return s and #s <= 128 and not string.find(s, '[%c%s"\\<>&\128-\255]')
end
local plains = {} -- (per session: sessions repeat)
local function plain_session(s)
  if not s then return false end
  local v = plains[s]
  if v == nil then v = plain(s); plains[s] = v end
  return v
end
local earlier = held_before(KEYS[1], ARGV[1], ARGV[2], ARGV[4]) -- held.lua
local out, acks, na = {}, {}, 0
local places, psets = {}, {}
local notes, nn = {}, 0
for i = 1, n do
  local b, a = 11 + 3 * (i - 1), 17 + 5 * (i - 1)
  local entry, id, token = ARGV[a + 1], ARGV[a + 2], ARGV[a + 3]
  local tk, marker = KEYS[b + 1], KEYS[b + 2]
  local reply = 'alone'
  if #earlier(entry) == 0 then
    local f = redis.call('HMGET', tk, unpack(complete_fields, 1, 9))
    local ty = types[f[3] or '']
    local sess, prio = f[4], f[9] or ''
    -- the marker last: set done at once if absent (else nothing written:
    -- an entry claimed before, by another path, or the attempt done)
    if ty and complete_code(f, token) == 'OK' and plain_session(sess) and prios[prio] and
      redis.call('SET', marker, '1', 'NX', 'EX', ARGV[3]) then
      local result = ARGV[a + 4]
      complete_task(tk, id, token, result, now, f, KEYS[6], KEYS[7], KEYS[8], KEYS[9])
      redis.call('SET', KEYS[b + 3], '{"result":' .. result .. ',"cached_at":"' .. stamp .. '"}', 'EX', ARGV[7])
      local ps = bucket(places, psets, ty.set)
      ps[#ps + 1] = id .. ' ' .. token
      nn = nn + 1
      -- notify.Notification's encoding (MarshalJSON) of a completion
      notes[nn] = { stream = ARGV[16] .. sess, session = sess, body = '{"notification_id":"' .. ARGV[a + 5] ..
        '","type":"task_completed","task_id":"' .. id .. '","task_type":"' .. f[3] .. '","message":' .. ty.msg ..
        ',"action":"retrieve_result","priority":"' .. prio .. '","timestamp":"' .. stamp .. '"}' }
      na = na + 1; acks[na] = entry
      reply = 'ok ' .. f[3]
    end
  end
  out[i] = reply
end
if na == 0 then return out end
complete_flush(KEYS[2], KEYS[3], KEYS[4], KEYS[10], KEYS[11], now)
flush_events(KEYS[5], ARGV[6])
for _, set in ipairs(psets) do
  local c = redis.call('ZREM', set, unpack(places[set]))
  if c > 0 then redis.call('PUBLISH', ARGV[17], set .. ' ' .. c) end
end
write_note_list(notes, nn, 11)
redis.call('XACK', KEYS[1], ARGV[1], unpack(acks, 1, na))
return out
