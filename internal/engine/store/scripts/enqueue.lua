-- enqueue: create tasks (one or a batch) in PENDING. All-or-nothing on ids:
-- if any id exists already, nothing is written and the id is returned as an
-- error. A task with a unique key whose holder is still unfinished (or
-- within its unique_for window) is not created: the holder is answered
-- instead. With an idempotency fingerprint, the call is recorded under the
-- last key in the same write, and a later call with the record answers it.
-- KEYS[1] pending index  KEYS[2] scheduled  KEYS[3] events  KEYS[4] wake
-- KEYS[5] primary:high   KEYS[6] primary    KEYS[7] primary:low
-- KEYS[8..7+n] task hashes, one per task, in ARGV order
-- KEYS[8+n..] per task in order: its session task index (when it has a
--             session), then its unique-key record (when it has a unique
--             key). A holder's task hash is its own hash's key with the id
--             swapped (same prefix, so the same slot).
-- KEYS[#KEYS] the idempotency record (HASH), when ARGV[6] is not ''
-- ARGV[1] now  ARGV[2] event stream maxlen  ARGV[3] n  ARGV[4] this call's id
-- ARGV[5] session index TTL (ms)  ARGV[6] idempotency fingerprint ('' = none)
-- with a fingerprint: ARGV[7] the record's TTL (ms)  ARGV[8] extra text
--                     stored with the record (answered on a replay)
-- then per task: id, priority, run_at (ms; 0 = now), task_type, session_id,
--                unique ('' = no unique key, else "hold:for": ms the record
--                lives, ms after now the key holds even once the task has
--                finished), nfields, field/value pairs...
--                (the fields carry 'enq' = this call's id)
-- Returns n when every task was created, else a flat array of the tasks
-- not created: index (1-based), holder id, holder state, ...; or
-- {'replay', results, extra} when the idempotency record exists with the
-- same fingerprint (an error IDEMPOTENCY_MISMATCH when with another).
-- The record's results are ';'-separated per task: 'c:ID' created,
-- 'd:ID:STATE' answered by its unique key's holder.
local now = ARGV[1]
local n = tonumber(ARGV[3])
local call = ARGV[4]
local ifp = ARGV[6]
local a0 = 7
if ifp ~= '' then
  a0 = 9
  local rec = redis.call('HMGET', KEYS[#KEYS], 'fp', 'res', 'x')
  if rec[1] then
    if rec[1] ~= ifp then return redis.error_reply('IDEMPOTENCY_MISMATCH') end
    return { 'replay', rec[2] or '', rec[3] or '' }
  end
end
-- pass 1: duplicate ids (one EXISTS for the whole batch; find which only if
-- any). The same call run again (its client resent it after a read timeout)
-- finds its own tasks: it answers what the first run did without writing.
local rerun = false
if n > 0 and redis.call('EXISTS', unpack(KEYS, 8, 7 + n)) > 0 then
  local a = a0
  for i = 1, n do
    if redis.call('EXISTS', KEYS[7 + i]) == 1 then
      if redis.call('HGET', KEYS[7 + i], 'enq') ~= call then
        return redis.error_reply('DUPLICATE ' .. ARGV[a])
      end
      rerun = true
    end
    a = a + 7 + 2 * tonumber(ARGV[a + 6])
  end
end
local live
local pushes = { high = {}, normal = {}, low = {} }
local idx = {}
local sched = {}
local dups, rec = {}, {}
local bysess, sessorder = {}, {} -- session index -> its new members (score, id, ...)
local a = a0
local cur = 7 + n
local sttl = ARGV[5]
local nnow = tonumber(now)
for i = 1, n do
  local id, prio, runat, ttype, sess = ARGV[a], ARGV[a + 1], tonumber(ARGV[a + 2]), ARGV[a + 3], ARGV[a + 4]
  local uq = ARGV[a + 5]
  local nf = tonumber(ARGV[a + 6])
  local tk = KEYS[7 + i]
  local sessk, uqk, uhold, ufor
  if sess ~= '' then cur = cur + 1; sessk = KEYS[cur] end
  if uq ~= '' then
    cur = cur + 1; uqk = KEYS[cur]
    local h, f = string.match(uq, '^(%d+):(%d+)$')
    uhold, ufor = tonumber(h), tonumber(f)
  end
  local holder, hstate
  if uqk then
    local v = redis.call('GET', uqk)
    if v then
      local untl, hid = string.match(v, '^(%d+):(.*)$')
      if hid and hid ~= id then
        hstate = redis.call('HGET', string.sub(tk, 1, #tk - #id) .. hid, 'state')
        live = live or { PENDING = true, ACTIVE = true, FAILED = true, TIMEOUT = true }
        if hstate and (live[hstate] or tonumber(untl) > nnow) then
          holder = hid
          if redis.call('PTTL', uqk) < uhold then redis.call('PEXPIRE', uqk, uhold) end
        end
      end
    end
  end
  if holder then
    dups[#dups + 1] = i; dups[#dups + 1] = holder; dups[#dups + 1] = hstate
    if ifp ~= '' then rec[#rec + 1] = 'd:' .. holder .. ':' .. hstate end
  elseif rerun and redis.call('EXISTS', tk) == 1 then
    if ifp ~= '' then rec[#rec + 1] = 'c:' .. id end
  else
    if ifp ~= '' then rec[#rec + 1] = 'c:' .. id end
    local fields = { 'task_id', id, 'state', 'PENDING', 'task_type', ttype, 'priority', prio,
      'created_at', now, 'updated_at', now, 'retry_count', '0', 'queue', 'primary',
      'state_history', now .. ',,P' }
    if sess ~= '' then fields[#fields + 1] = 'session_id'; fields[#fields + 1] = sess end
    for j = 1, nf do
      fields[#fields + 1] = ARGV[a + 6 + 2 * j - 1]
      fields[#fields + 1] = ARGV[a + 6 + 2 * j]
    end
    if runat > nnow then
      fields[#fields + 1] = 'not_before'; fields[#fields + 1] = runat
      sched[#sched + 1] = runat; sched[#sched + 1] = id
    else
      local p = pushes[prio] or pushes.normal
      p[#p + 1] = id
    end
    redis.call('HSET', tk, unpack(fields))
    if sessk then
      -- the session indexes are written once each after the loop
      local m = bucket(bysess, sessorder, sessk)
      m[#m + 1] = now; m[#m + 1] = id
    end
    if uqk then
      redis.call('SET', uqk, string.format('%d', nnow + ufor) .. ':' .. id, 'PX', uhold)
    end
    if runat > nnow then idx[#idx + 1] = runat else idx[#idx + 1] = now end
    idx[#idx + 1] = id
    ev(id, '', 'PENDING', now, ttype, sess)
  end
  a = a + 7 + 2 * nf
end
for _, sk in ipairs(sessorder) do
  redis.call('ZADD', sk, unpack(bysess[sk]))
  redis.call('PEXPIRE', sk, sttl)
end
local pushed = false
if #pushes.high > 0 then redis.call('RPUSH', KEYS[5], unpack(pushes.high)); pushed = true end
if #pushes.normal > 0 then redis.call('RPUSH', KEYS[6], unpack(pushes.normal)); pushed = true end
if #pushes.low > 0 then redis.call('RPUSH', KEYS[7], unpack(pushes.low)); pushed = true end
if #sched > 0 then redis.call('ZADD', KEYS[2], unpack(sched)) end
if #idx > 0 then zadd(KEYS[1], idx) end
if pushed then wake(KEYS[4]) end
flush_events(KEYS[3], ARGV[2])
if ifp ~= '' then
  redis.call('HSET', KEYS[#KEYS], 'fp', ifp, 'res', table.concat(rec, ';'), 'x', ARGV[8])
  redis.call('PEXPIRE', KEYS[#KEYS], ARGV[7])
end
if #dups > 0 then return dups end
return n
