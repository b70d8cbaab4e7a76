-- lib.lua is prepended to every script (see scripts.go): helpers shared by
-- the transitions. Times are unix milliseconds passed in ARGV.

-- hist appends one state-history entry to old (entries ";"-separated). The
-- first entry is "ms,FROM,TO[,cause]", later ones "+delta,FROM,TO[,cause]"
-- with delta in ms since the first, and states as one letter (codec.go
-- decodes both): a small task's every field then stays under Redis's
-- hash-max-listpack-value (64 bytes), so its hash keeps the compact
-- encoding, which measured ~15 % less Redis CPU per task on a drain.
local __sc = { PENDING = 'P', ACTIVE = 'A', COMPLETED = 'C', FAILED = 'F', DLQ = 'D', TIMEOUT = 'T', CANCELLED = 'X' }
local function hist(old, now, from, to, cause)
  local tail = ''
  if cause and cause ~= '' then tail = ',' .. cause end
  local e = (__sc[from] or from) .. ',' .. (__sc[to] or to) .. tail
  if old and old ~= '' then
    local base = tonumber(string.match(old, '^%d+'))
    if base then return old .. ';+' .. string.format('%d', tonumber(now) - base) .. ',' .. e end
    return old .. ';' .. now .. ',' .. e
  end
  return now .. ',' .. e
end

-- The fetch and the completion, the two transitions every task makes, do
-- not read or rewrite the history: fetch writes its entry ("ms,P,A,worker",
-- the time absolute) to the field ha, the completion its own to hc. Every
-- other transition takes ha into state_history first (taken); hc is written
-- on COMPLETED only, which nothing leaves. codec.go reads the history as
-- state_history;ha;hc.
local function taken(tk, old)
  local ha = redis.call('HGET', tk, 'ha')
  if not ha then return old end
  redis.call('HDEL', tk, 'ha')
  if not old or old == '' then return ha end
  local ms, rest = string.match(ha, '^(%d+)(.*)$')
  local base = tonumber(string.match(old, '^%d+'))
  if ms and base then return old .. ';+' .. string.format('%d', tonumber(ms) - base) .. rest end
  return old .. ';' .. ha
end

-- Lifecycle events of this call, written as ONE stream entry at the end:
-- records separated by \30, fields by \31 (id, from, to, ms, type, session).
local __events, __nev = {}, 0
local function ev(id, from, to, now, ttype, sess)
  __nev = __nev + 1
  __events[__nev] = id .. '\31' .. from .. '\31' .. to .. '\31' .. now .. '\31' .. (ttype or '') .. '\31' .. (sess or '')
end
local function flush_events(stream, maxlen)
  if __nev > 0 then
    redis.call('XADD', stream, 'MAXLEN', '~', maxlen, '*', 'e', table.concat(__events, '\30'))
  end
end

-- Named queues (keys.go, named): queue qn's lists are the default
-- queue's names with "q:<qn>:" after the partition prefix. A script that
-- learns a task's queue (field qname, absent for the default queue) from
-- its hash derives them from the default primary list kn it got in KEYS:
-- the same prefix, so the same hash tag and slot.
local __plen = #'tasks:pending:primary'
local function qprefix(kn, qn)
  return string.sub(kn, 1, #kn - __plen) .. 'q:' .. qn .. ':'
end

-- queue_for returns the pending queue key a task goes back to: the retry
-- queue for retries, else the primary queue of its priority; of its named
-- queue qn when it has one.
local function queue_for(q, prio, kh, kn, kl, kr, qn)
  if qn and qn ~= '' then
    local b = qprefix(kn, qn) .. 'tasks:pending:'
    if q == 'retry' then return b .. 'retry' end
    if prio == 'high' then return b .. 'primary:high' end
    if prio == 'low' then return b .. 'primary:low' end
    return b .. 'primary'
  end
  if q == 'retry' then return kr end
  if prio == 'high' then return kh end
  if prio == 'low' then return kl end
  return kn
end

-- wake_for returns the wake-up list of queue qn (kw: the default one's).
local function wake_for(kw, kn, qn)
  if qn and qn ~= '' then return qprefix(kn, qn) .. 'tasks:wake' end
  return kw
end

-- zadd adds to a sorted set that stays small and busy: the lease set (the
-- tasks in flight) and the PENDING index of a shallow queue. Redis keeps a
-- set of at most zset-max-listpack-entries (128) members in its compact
-- listpack encoding, where each insert walks the set and parses every
-- score it passes: a fetch's 64 leases added to a set of about 100 cost
-- ~1.7 µs each (docs/benchmarks.md). A set created by a member longer than
-- zset-max-listpack-value (64 bytes) is a skiplist, and stays one until it
-- is emptied and so deleted: a set this creates is created that way, the
-- long member (with spaces, so never a task id) removed at once.
local __pin = string.rep('skiplist ', 10)
local function zadd(key, args)
  if redis.call('EXISTS', key) == 0 then
    redis.call('ZADD', key, 0, __pin)
    redis.call('ZADD', key, unpack(args))
    redis.call('ZREM', key, __pin)
  else
    redis.call('ZADD', key, unpack(args))
  end
end

-- take_place is the in-flight bound's admission (dispatch.lua, and
-- fetch.lua when it dispatches): a type's set is swept of the places past
-- their deadline and counted once per call; below bound a place is taken
-- (counted new: an attempt that held one already is counted twice until
-- the next call, which errs on the full side); at the bound only an
-- attempt already holding one (its member given) goes. Returns whether
-- the attempt may go and the set's count after it.
local __inflight = {}
local function take_place(set, bound, nows, member)
  local c = __inflight[set]
  if not c then
    redis.call('ZREMRANGEBYSCORE', set, '-inf', '(' .. nows)
    c = redis.call('ZCARD', set)
  end
  local ok = true
  if c < bound then
    c = c + 1
  elseif not (member and redis.call('ZSCORE', set, member)) then
    ok = false
  end
  __inflight[set] = c
  return ok, c
end

-- bucket is the list of key in lists (made empty on first use, key then
-- added to order): values gathered per key, written with one command per
-- key afterwards, in the order the keys came.
local function bucket(lists, order, key)
  local l = lists[key]
  if not l then
    l = {}
    lists[key] = l
    order[#order + 1] = key
  end
  return l
end

-- wake pushes a wake-up token for idle workers when none is waiting.
local function wake(k)
  if redis.call('EXISTS', k) == 0 then redis.call('RPUSH', k, '1') end
end

-- to_dlq dead-letters a task: state, snapshot, DLQ list and index.
-- f is a table of the task's fields read by the caller.
local function to_dlq(tk, snapk, dlqlist, dlqidx, id, now, from, etype, msg, erec, f, cause)
  local sh = hist(taken(tk, f.sh), now, from, 'DLQ', cause or etype)
  local eh = f.eh or ''
  if erec and erec ~= '' then
    if eh ~= '' then eh = eh .. '\n' .. erec else eh = erec end
  end
  redis.call('HSET', tk, 'state', 'DLQ', 'updated_at', now, 'error_type', etype, 'last_error', msg,
    'state_history', sh, 'error_history', eh, 'lease', '')
  redis.call('HSET', snapk, 'task_id', id, 'task_type', f.ttype or '', 'error_type', etype, 'last_error', msg,
    'retry_count', f.rc or '0', 'from_state', from, 'dlq_at', now)
  redis.call('LPUSH', dlqlist, id)
  redis.call('ZADD', dlqidx, now, id)
  ev(id, from, 'DLQ', now, f.ttype, f.sess)
end

-- Wake-ups collected during a call (one push per list at the end).
local __wakes = {}
local function wake_later(k) __wakes[k] = true end
local function flush_wakes()
  for k in pairs(__wakes) do wake(k) end
end

-- release_slots ends the concurrency slots an attempt held (field lh of
-- the task: its scopes, "\n"-separated; absent on the unlimited path):
-- each scope's running count goes down, and a scope with tasks parked
-- (waiting for a slot) becomes due in the park index, with a wake-up on
-- the parking wake list so a worker's next fetch moves the oldest back.
-- kc running counts kx park index kp park prefix kw park wake
local function release_slots(tk, lh, kc, kx, kp, kw, now)
  if not lh or lh == '' then return end
  -- the latest end (field @t): a fetch that takes the slot records its
  -- start no earlier, so the tasks' histories show the limit held even
  -- when the processes' calls reach Redis in another order than their
  -- clocks read
  local last = tonumber(redis.call('HGET', kc, '@t'))
  if not last or tonumber(now) > last then redis.call('HSET', kc, '@t', now) end
  for s in string.gmatch(lh, '[^\n]+') do
    if redis.call('HINCRBY', kc, s, -1) <= 0 then redis.call('HDEL', kc, s) end
    -- a fetch found the scope full and left work waiting (w:<scope>, a
    -- queue at its concurrency), or tasks of it are parked: wake a worker
    if redis.call('HDEL', kc, 'w:' .. s) == 1 then wake(kw) end
    if redis.call('EXISTS', kp .. s) == 1 then
      redis.call('ZADD', kx, now, s)
      wake(kw)
    end
  end
  redis.call('HDEL', tk, 'lh')
end

-- unpark_one removes a parked task from its parking list (a cancel, a
-- delete or the max-age sweep of a task waiting there).
local function unpark_one(tk, kp, id)
  local pk = redis.call('HGET', tk, 'pk')
  if pk then
    redis.call('HDEL', tk, 'pk')
    -- pk stays on a task moved back to its queue (so a new parking puts
    -- it first again): false then, the caller looks in the queue
    return redis.call('LREM', kp .. pk, 1, id) > 0
  end
  return false
end

-- The completion of attempts, shared by complete.lua and the outcome
-- consumer's settle.lua (which completes an external attempt and writes
-- its effects in one call). complete_fields are the task's fields it
-- reads (HMGET, in this order); complete_code is its verdict for the
-- fields f read and the attempt's token; complete_task writes one task's
-- completion (verdict OK) and gathers what the batch writes once;
-- complete_flush writes that (the events are flushed by the caller).
local complete_fields = { 'state', 'lease', 'task_type', 'session_id', 'qname', 'lh', 'handoff', 'hto', 'priority', 'params' }
local function complete_code(f, token)
  if not f[1] then return 'NOTFOUND' end
  if f[1] ~= 'ACTIVE' and f[1] ~= 'TIMEOUT' then return 'STATE:' .. f[1] end
  if f[2] ~= token then return 'LEASE' end
  return 'OK'
end
-- (the tables are filled through counters: #t is a search each time;
-- upvalues, not fields of one table: each task touches them)
local __act, __na, __tmo, __nt, __done, __nd, __handed, __nh, __perq = {}, 0, {}, 0, {}, 0, {}, 0, {}
local __hcnow, __hcA, __hcT -- the history entries of this call's time
-- kc running counts kx park index kp park prefix kw park wake (release_slots)
local function complete_task(tk, id, token, result, now, f, kc, kx, kp, kw)
  if __hcnow ~= now then __hcnow = now; __hcA = now .. ',A,C'; __hcT = now .. ',T,C' end
  -- the history's entry goes to hc (see taken above); completed_at is
  -- its time
  local hc
  if f[1] == 'ACTIVE' then
    hc = __hcA
    __na = __na + 1; __act[__na] = id
  else
    hc = __hcT
    __nt = __nt + 1; __tmo[__nt] = id
  end
  redis.call('HSET', tk, 'state', 'COMPLETED', 'result', result, 'updated_at', now, 'lease', '', 'hc', hc)
  __done[__nd + 1] = now; __done[__nd + 2] = id; __nd = __nd + 2
  ev(id, f[1], 'COMPLETED', now, f[3], f[4])
  release_slots(tk, f[6], kc, kx, kp, kw, now)
  -- a handed-off attempt's entry in the handoff index goes with it
  if f[7] == token and f[8] then __nh = __nh + 1; __handed[__nh] = id .. ' ' .. token .. ' ' .. f[8] end
  local q = f[5] or ''
  __perq[q] = (__perq[q] or 0) + 1
end
-- kact active (leases) kdone COMPLETED index ktmo TIMEOUT index
-- kqd queue completions per minute khand handoff index
local function complete_flush(kact, kdone, ktmo, kqd, khand, now)
  if __na > 0 then redis.call('ZREM', kact, unpack(__act, 1, __na)) end
  if __nt > 0 then redis.call('ZREM', ktmo, unpack(__tmo, 1, __nt)) end
  if __nd > 0 then redis.call('ZADD', kdone, unpack(__done, 1, __nd)) end
  if __nh > 0 then redis.call('ZREM', khand, unpack(__handed, 1, __nh)) end
  local minute = math.floor(tonumber(now) / 60000)
  for q, n in pairs(__perq) do
    if q == '' then q = 'default' end
    if redis.call('HINCRBY', kqd, q .. '|' .. minute, n) == n then
      redis.call('HDEL', kqd, q .. '|' .. (minute - 2)) -- a new minute: drop the one before last
    end
  end
end
