-- enqueue: create tasks (one or a batch) in PENDING. All-or-nothing: if any
-- id exists already, nothing is written and the id is returned as an error.
-- KEYS[1] pending index  KEYS[2] scheduled  KEYS[3] events  KEYS[4] wake
-- KEYS[5] primary:high   KEYS[6] primary    KEYS[7] primary:low
-- KEYS[8..7+n] task hashes, one per task, in ARGV order
-- KEYS[8+n..] session task indexes, one per task that has a session, in order
-- ARGV[1] now  ARGV[2] event stream maxlen  ARGV[3] n
-- then per task: id, priority, run_at (ms; 0 = now), task_type, session_id,
--                nfields, field/value pairs...
--                (the fields carry 'enq' = this call's id)
-- ARGV[#ARGV - 1] this call's id  ARGV[#ARGV] session index TTL (ms)
local now = ARGV[1]
local n = tonumber(ARGV[3])
-- pass 1: duplicates (one EXISTS for the whole batch; find which only if any)
if redis.call('EXISTS', unpack(KEYS, 8, 7 + n)) > 0 then
 -- the same call run again (its client resent it after a read timeout):
 -- the first run created the whole batch, so this one has nothing to do
 if redis.call('HGET', KEYS[8], 'enq') == ARGV[#ARGV - 1] then return n end
 for i = 1, n do
  if redis.call('EXISTS', KEYS[7 + i]) == 1 then
    local a, j = 4, 1
    while j < i do a = a + 6 + 2 * tonumber(ARGV[a + 5]); j = j + 1 end
    return redis.error_reply('DUPLICATE ' .. ARGV[a])
  end
 end
end
local pushes = { high = {}, normal = {}, low = {} }
local idx = {}
local sched = {}
local a = 4
local sk = 7 + n
local sttl = ARGV[#ARGV]
for i = 1, n do
  local id, prio, runat, ttype, sess = ARGV[a], ARGV[a + 1], tonumber(ARGV[a + 2]), ARGV[a + 3], ARGV[a + 4]
  local nf = tonumber(ARGV[a + 5])
  local fields = { 'task_id', id, 'state', 'PENDING', 'task_type', ttype, 'priority', prio,
    'created_at', now, 'updated_at', now, 'retry_count', '0', 'queue', 'primary',
    'state_history', now .. ',,P' }
  if sess ~= '' then fields[#fields + 1] = 'session_id'; fields[#fields + 1] = sess end
  for j = 1, nf do
    fields[#fields + 1] = ARGV[a + 5 + 2 * j - 1]
    fields[#fields + 1] = ARGV[a + 5 + 2 * j]
  end
  if runat > tonumber(now) then
    fields[#fields + 1] = 'not_before'; fields[#fields + 1] = runat
    sched[#sched + 1] = runat; sched[#sched + 1] = id
  else
    local p = pushes[prio] or pushes.normal
    p[#p + 1] = id
  end
  redis.call('HSET', KEYS[7 + i], unpack(fields))
  if sess ~= '' then
    sk = sk + 1
    redis.call('ZADD', KEYS[sk], now, id)
    redis.call('PEXPIRE', KEYS[sk], sttl)
  end
  if runat > tonumber(now) then idx[#idx + 1] = runat else idx[#idx + 1] = now end
  idx[#idx + 1] = id
  ev(id, '', 'PENDING', now, ttype, sess)
  a = a + 6 + 2 * nf
end
local pushed = false
if #pushes.high > 0 then redis.call('RPUSH', KEYS[5], unpack(pushes.high)); pushed = true end
if #pushes.normal > 0 then redis.call('RPUSH', KEYS[6], unpack(pushes.normal)); pushed = true end
if #pushes.low > 0 then redis.call('RPUSH', KEYS[7], unpack(pushes.low)); pushed = true end
if #sched > 0 then redis.call('ZADD', KEYS[2], unpack(sched)) end
zadd(KEYS[1], idx)
if pushed then wake(KEYS[4]) end
flush_events(KEYS[3], ARGV[2])
return n
