-- fetch: PENDING -> ACTIVE for up to n tasks of one named queue, FIFO per
-- list, taking from the retry list at the adaptive ratio and from the
-- primary lists by priority weight (systematic sampling, so low priority
-- is never starved). A task older than the max age at pickup goes PENDING
-- -> DLQ instead. Ids whose task is no longer PENDING (stale) are dropped.
-- Pauses and limits (the control hash; skipped whole while it is empty,
-- the unlimited path): a paused queue gives nothing; a queue's limits cap
-- n; a task whose type is paused, or whose type's or key's limit is
-- reached, is parked (park:<scope>, oldest first) instead of started, so
-- the tasks behind it proceed; parked tasks whose scope became due in the
-- park index (a slot freed, time passed, a resume) move back to the head
-- of their queue first. A started task takes a slot of every scope with a
-- concurrency limit (and of its named queue, counted always): field lh,
-- given back by the end of the attempt (release_slots in lib.lua).
-- KEYS[1] primary:high KEYS[2] primary KEYS[3] primary:low KEYS[4] retry
--   (of the queue fetched) KEYS[5] active (leases) KEYS[6] pending index
-- KEYS[7] events KEYS[8] the queue's wake list
-- KEYS[9] task prefix KEYS[10] dlq list KEYS[11] dlq index KEYS[12] dlq prefix
-- KEYS[13] control KEYS[14] running KEYS[15] rate state KEYS[16] park index
-- KEYS[17] park prefix KEYS[18] the default queue's primary list (other
-- queues' lists are derived from it when parked tasks move back)
-- ARGV[1] now ARGV[2] n ARGV[3] r1 ARGV[4] r2 (uniform [0,1) from the caller)
-- ARGV[5] lease deadline ARGV[6] token prefix ARGV[7] worker id
-- ARGV[8] warning depth ARGV[9] critical depth ARGV[10] ratio normal
-- ARGV[11] ratio warning ARGV[12] ratio critical
-- ARGV[13..15] weights high, normal, low ARGV[16] max age ms (0 = off)
-- ARGV[17] event stream maxlen ARGV[18] queue name ('' = default)
-- Hand-off in the same call (optional; a deployment of one partition,
-- store.FetchDispatch): ARGV[19] m, the types the external path's
-- dispatcher takes here (0 or absent: none), ARGV[20] MINID of the
-- task.create stream, ARGV[21] the events' timestamp, ARGV[22] grace (ms),
-- ARGV[23] default timeout (ms), ARGV[24] the events' event_type, then per
-- type j: ARGV[23+2j] its name, ARGV[24+2j] its in-flight bound (-1:
-- none); then ARGV[25+2m] the events' ids' prefix: the first 32
-- characters of a random UUID (v4), the k-th event of the call's id that
-- prefix and k in 4 hex digits.
-- KEYS[19] the handoff index, KEYS[20] the task.create stream, KEYS[20+j]
-- type j's in-flight set.
-- A task started of such a type is dispatched at once, as dispatch.lua
-- would dispatch it (see dispatch below), when its type has a free place,
-- and its fields need no escaping in task.create;
-- the others are answered as below, for the worker's handler.
-- Returns (with hand-off types, first: the number k of tasks dispatched
-- and one string per such task: "<id> <token> <type> <in-flight count>
-- <entry id> <attempt> <first> <session>", first 1 when the task was
-- never dispatched before, else 0) {id, token, task_type, content, params, session_id, traceparent,
--   "<priority> <timeout_ms> <retry_count> <max_retries> <created_at>", ...}
--   (eight strings per task: the short ones in one),
--   then, when a pause or limit held work back, one more element: the ms
--   after which a fetch may get more (a hint for the caller's wait).
local now = tonumber(ARGV[1])
local nows = ARGV[1] -- the string form: no number formatting per write
local n = tonumber(ARGV[2])
local r1, r2 = tonumber(ARGV[3]), tonumber(ARGV[4])
local qn = ARGV[18]
local BIG = 1e15
local hint = nil -- ms until held-back work may go: returned last
local function note(at) -- at: unix ms when more may go
  local d = math.max(1, math.ceil(at - now))
  if not hint or d < hint then hint = d end
end
local hm = tonumber(ARGV[19] or '0') or 0
local dout, nd = {}, 0 -- the tasks dispatched here, one string each
local function done(out)
  if hm > 0 then
    local r = { tostring(nd) }
    for i = 1, nd do r[i + 1] = dout[i] end
    for i = 1, #out do r[nd + 1 + i] = out[i] end
    out = r
  end
  if hint then out[#out + 1] = hint end
  return out
end
local ctl = nil
if redis.call('EXISTS', KEYS[13]) == 1 then
  ctl = {}
  local a = redis.call('HGETALL', KEYS[13])
  for i = 1, #a, 2 do ctl[a[i]] = a[i + 1] end
end
local qs = 'q:' .. (qn ~= '' and qn or 'default')
if ctl or qn ~= '' then
  -- no start recorded before the latest end of an attempt that gave a
  -- slot back (release_slots in lib.lua)
  local last = tonumber(redis.call('HGET', KEYS[14], '@t'))
  if last and last > now then now = last; nows = string.format('%d', last) end
end

-- limits: "<rate>/<per ms>/<concurrency>"; rate 0 or concurrency -1 = none
local lims = {}
local function lim(s)
  if not ctl then return nil end
  local L = lims[s]
  if L == nil then
    local v = ctl['l:' .. s]
    if not v and string.sub(s, 1, 2) == 'k:' then v = ctl['l:k:*'] end
    L = false
    if v then
      local r, per, c = string.match(v, '^([%d.]+)/(%d+)/(-?%d+)$')
      if r then L = { rate = tonumber(r), per = tonumber(per), conc = tonumber(c) } end
    end
    lims[s] = L
  end
  return L or nil
end
local running, tats = {}, {}
local function run_of(s)
  local v = running[s]
  if v == nil then v = tonumber(redis.call('HGET', KEYS[14], s)) or 0; running[s] = v end
  return v
end
local function tat_of(s)
  local v = tats[s]
  if v == nil then v = tonumber(redis.call('HGET', KEYS[15], s)) or 0; tats[s] = v end
  return v
end
-- room: how many more of scope s may start now (BIG without limit), and
-- when one more may if none can (BIG: only when a slot frees)
local function room(s, L)
  local c, at = BIG, BIG
  if L.conc >= 0 then c = L.conc - run_of(s) end
  if L.rate > 0 then
    -- the generic cell rate algorithm: one start per T = per/rate, bursts
    -- of up to rate starts (at least one)
    local T = L.per / L.rate
    local B = math.max(L.per, T)
    local tat = math.max(tat_of(s), now)
    local k = math.floor((now + B - tat) / T + 1e-9)
    if k < c then c = k end
    if k <= 0 and (L.conc < 0 or L.conc - run_of(s) > 0) then at = tat + T - B end
  end
  if c < 0 then c = 0 end
  return c, at
end
local held = {} -- scope -> 1 when its running count changed
local ratechanged = {}
local function acquire(s, L, counted)
  if counted then running[s] = run_of(s) + 1; held[s] = true end
  if L and L.rate > 0 then
    tats[s] = math.max(tat_of(s), now) + L.per / L.rate
    ratechanged[s] = true
  end
end
local function flush_limits()
  for s in pairs(held) do redis.call('HSET', KEYS[14], s, running[s]) end
  for s in pairs(ratechanged) do redis.call('HSET', KEYS[15], s, string.format('%.3f', tats[s])) end
end

-- home: the list a parked task goes back to, and its queue's wake list
local function home(qname, q, prio)
  if qname and qname ~= '' then
    return queue_for(q, prio, nil, KEYS[18], nil, nil, qname), wake_for(nil, KEYS[18], qname)
  end
  local b = string.sub(KEYS[18], 1, #KEYS[18] - __plen) .. 'tasks:'
  return queue_for(q, prio, b .. 'pending:primary:high', KEYS[18], b .. 'pending:primary:low', b .. 'pending:retry'),
    b .. 'wake'
end

if ctl then
  -- parked tasks whose scope is due go back to the head of their queues,
  -- as many as the scope can start now, oldest first
  local due = redis.call('ZRANGEBYSCORE', KEYS[16], '-inf', now, 'LIMIT', 0, 16)
  for _, s in ipairs(due) do
    local pk = KEYS[17] .. s
    local len = redis.call('LLEN', pk)
    local c, at = len, BIG
    if ctl['p:' .. s] then c = 0 end
    local L = lim(s)
    if c > 0 and L then
      local r
      r, at = room(s, L)
      if r < c then c = r end
    end
    if c > 256 then c = 256 end
    if c > 0 then
      local ids = redis.call('LRANGE', pk, 0, c - 1)
      for i = #ids, 1, -1 do
        local tk = KEYS[9] .. ids[i]
        local g = redis.call('HMGET', tk, 'state', 'queue', 'priority', 'qname', 'pk')
        if g[1] == 'PENDING' and g[5] == s then
          local lk, wk = home(g[4], g[2], g[3])
          redis.call('LPUSH', lk, ids[i])
          wake_later(wk)
        end
      end
      redis.call('LTRIM', pk, c, -1)
      len = len - c
    end
    if len <= 0 then
      redis.call('ZREM', KEYS[16], s)
    elseif c > 0 then
      redis.call('ZADD', KEYS[16], now, s) -- more may go once those start
    else
      redis.call('ZADD', KEYS[16], at, s)
    end
  end
  local nxt = redis.call('ZRANGE', KEYS[16], 0, 0, 'WITHSCORES')
  if nxt[2] and tonumber(nxt[2]) < BIG then note(tonumber(nxt[2])) end
  if not nxt[1] and ctl['parked'] then redis.call('HDEL', KEYS[13], 'parked') end
  if ctl['p:' .. qs] then
    flush_wakes()
    return done({})
  end
end
local capped = false
local QL = lim(qs)
if QL then
  local r, at = room(qs, QL)
  if r < n then
    n = r; capped = true
    if at < BIG then note(at) end
    -- full at its concurrency: the end of one of its attempts wakes a
    -- worker (release_slots)
    if QL.conc >= 0 and QL.conc - run_of(qs) <= 0 then redis.call('HSET', KEYS[14], 'w:' .. qs, '1') end
  end
  if n <= 0 then
    flush_wakes()
    return done({})
  end
end
local counting = ctl ~= nil or qn ~= ''

local rdepth = redis.call('LLEN', KEYS[4])
local lens = { redis.call('LLEN', KEYS[1]), redis.call('LLEN', KEYS[2]), redis.call('LLEN', KEYS[3]) }
local pdepth = lens[1] + lens[2] + lens[3]
if rdepth + pdepth == 0 then flush_wakes(); return done({}) end

local ratio = tonumber(ARGV[10])
if rdepth > tonumber(ARGV[9]) then ratio = tonumber(ARGV[12])
elseif rdepth >= tonumber(ARGV[8]) then ratio = tonumber(ARGV[11]) end

local nr = math.floor(n * ratio + r1)
if nr > n then nr = n end
local np = n - nr
if nr > rdepth then np = np + (nr - rdepth); nr = rdepth end
if np > pdepth then
  local extra = np - pdepth
  np = pdepth
  nr = math.min(rdepth, nr + extra)
end

-- split np over the non-empty primary queues by weight
local w = { tonumber(ARGV[13]), tonumber(ARGV[14]), tonumber(ARGV[15]) }
local wsum = 0
for i = 1, 3 do if lens[i] > 0 then wsum = wsum + w[i] end end
local take = { 0, 0, 0 }
if np > 0 and wsum > 0 then
  local cum, prev = 0, 0
  for i = 1, 3 do
    if lens[i] > 0 then
      cum = cum + w[i]
      local upto = math.floor(np * cum / wsum + r2)
      take[i] = upto - prev
      prev = upto
    end
  end
  -- systematic rounding may exceed np by one at the end; clamp, then move
  -- what a short queue cannot give to the others, highest priority first
  local left = np
  for i = 1, 3 do
    if take[i] > left then take[i] = left end
    if take[i] > lens[i] then take[i] = lens[i] end
    left = left - take[i]
  end
  for i = 1, 3 do
    if left == 0 then break end
    local room = lens[i] - take[i]
    local more = math.min(room, left)
    take[i] = take[i] + more
    left = left - more
  end
end

local ids = {}
local function pop(k, c)
  if c <= 0 then return end
  local got = redis.call('LPOP', k, c)
  if got then for _, id in ipairs(got) do ids[#ids + 1] = id end end
end
pop(KEYS[4], nr)
pop(KEYS[1], take[1])
pop(KEYS[2], take[2])
pop(KEYS[3], take[3])

-- parking: a held-back task leaves its queue for park:<scope>; one that
-- was parked before (pk set: it came back from the head of that list)
-- goes back to the head, the others to the tail, so the list stays oldest
-- first
local front, back = {}, {}
local blockedat = BIG
local function park(id, tk, s, was)
  local t
  if was and was ~= '' then t = front else t = back end
  if not t[s] then t[s] = {} end
  local l = t[s]
  l[#l + 1] = id
  redis.call('HSET', tk, 'pk', s)
  local score = BIG
  if blockedat < BIG then score = blockedat; note(blockedat) end
  local cur = redis.call('ZSCORE', KEYS[16], s)
  if not cur or tonumber(cur) > score then redis.call('ZADD', KEYS[16], score, s) end
end
local maxage = tonumber(ARGV[16])

local ha = nows .. ',P,A,' .. ARGV[7] -- the history entry, the same for every task of this call
-- dispatch: dispatch.lua's effects for a task of a hand-off type, at its
-- start: one of its type's in-flight places (the set swept and counted
-- once per call), its task.create published, the handoff's fields (worker
-- the holder, handoff the token, hto the timeout) written with the
-- start's, the lease deadline timeout + grace, the first check the sooner
-- of now + grace and the timeout. Only when task.create comes out as the
-- dispatcher's own encoding would write it (protocol.CreateData): ids,
-- session and token of printable ASCII needing no JSON escape and within
-- 128 bytes, params absent or a JSON object without whitespace outside
-- its strings (so already compact), priority high, normal or low, no traceparent (a
-- traced task's dispatch is a span of the dispatcher's), a timeout within
-- 7 days. Otherwise nil, nothing written: the worker's handler dispatches
-- it.
local hoff, places, psets, checks, eidx = nil, {}, {}, {}, 0
local grace, dtimeout, eprefix = 0, 0, ''
if hm > 0 then
  hoff = {}
  for j = 1, hm do hoff[ARGV[23 + 2 * j]] = { set = KEYS[20 + j], bound = tonumber(ARGV[24 + 2 * j]) } end
  grace, dtimeout = tonumber(ARGV[22]), tonumber(ARGV[23])
  eprefix = ARGV[25 + 2 * hm]
end
local prios = { high = true, normal = true, low = true }
local function plain(s)
  return #s <= 128 and not string.find(s, '[%c%s"\\<>&\128-\255]')
end
-- (a session's answer is kept for the call: sessions repeat; a task id in
-- the UUID form is checked with a smaller class first; a token is the
-- call's prefix, checked once, and a number)
local plains = {}
local function plain_session(s)
  local v = plains[s]
  if v == nil then v = plain(s); plains[s] = v end
  return v
end
local function plain_id(s)
  if #s == 36 and not string.find(s, '[^%x%-]') then return true end
  return plain(s)
end
local prefix_plain = #ARGV[6] <= 100 and plain(ARGV[6])
-- compact: p (valid JSON: enqueue checked it) has no whitespace outside
-- its strings, so json.Compact leaves it as it is (strings with escapes
-- are not looked into: such params are not taken as compact)
local function compact(p)
  if not string.find(p, '[ \t\n\r]') then return true end
  if string.find(p, '\\', 1, true) then return false end
  return not string.find((string.gsub(p, '"[^"]*"', '')), '[ \t\n\r]')
end
local function secs(ms)
  if ms % 1000 == 0 then return string.format('%d', ms / 1000) end
  return (string.gsub(string.format('%d.%03d', math.floor(ms / 1000), ms % 1000), '0+$', ''))
end
local holders = {} -- per type, the worker field of its dispatched tasks
local function dispatch(id, tk, f, token, lh)
  local h = hoff[f[2] or '']
  if not h or eidx >= 65535 then return nil end
  local ttype, params, sess, prio = f[2], f[4] or '', f[5] or '', f[6] or ''
  if (f[12] and f[12] ~= '') or not prios[prio] or id == '' or not plain_id(id) or not plain_session(sess) or
    not prefix_plain then return nil end
  if params == '' then
    params = 'null'
  elseif string.byte(params, 1) ~= 123 or #params > 65536 or not compact(params) then
    return nil
  end
  local tms = tonumber(f[7])
  if not tms or tms <= 0 then tms = dtimeout end
  if tms ~= math.floor(tms) or tms > 604800000 then return nil end
  -- a place of its type (lib.lua; a new attempt holds none yet)
  local count = -1
  if h.bound >= 0 then
    local ok
    ok, count = take_place(h.set, h.bound, nows)
    if not ok then return nil end
  end
  eidx = eidx + 1
  -- (numbers written as strings with %d once: Lua's own conversion of a
  -- number, a float format, costs several times as much, at each use)
  local attempt = string.format('%d', (tonumber(f[8]) or 0) + 1)
  local tat = now + tms
  local tats, deadline = string.format('%d', tat), string.format('%d', tat + grace)
  local data = '{"task_id":"' .. id .. '","task_type":"' .. ttype .. '","params":' .. params ..
    ',"session_id":"' .. sess .. '","timeout":' .. secs(tms) .. ',"priority":"' .. prio ..
    '","created_by":"agent","attempt":' .. attempt .. ',"token":"' .. token .. '"}'
  local entry = redis.call('XADD', KEYS[20], 'MINID', '~', ARGV[20], '*', 'event_id', eprefix .. string.format('%04x', eidx),
    'event_type', ARGV[24], 'timestamp', ARGV[21], 'data', data)
  local holder = holders[ttype]
  if not holder then
    holder = 'external:' .. ttype .. ' (dispatched by ' .. ARGV[7] .. ')'
    holders[ttype] = holder
  end
  if lh then
    redis.call('HSET', tk, 'state', 'ACTIVE', 'lease', token, 'worker', holder, 'updated_at', nows,
      'ha', ha, 'handoff', token, 'hto', tats, 'lh', lh)
  else
    redis.call('HSET', tk, 'state', 'ACTIVE', 'lease', token, 'worker', holder, 'updated_at', nows,
      'ha', ha, 'handoff', token, 'hto', tats)
  end
  local member = id .. ' ' .. token
  if h.bound >= 0 then
    local ps = bucket(places, psets, h.set)
    ps[#ps + 1] = deadline
    ps[#ps + 1] = member
  end
  checks[#checks + 1] = string.format('%d', math.min(now + grace, tat))
  checks[#checks + 1] = member .. ' ' .. tats
  nd = nd + 1
  local first = '1'
  if f[15] and f[15] ~= '' then first = '0' end
  dout[nd] = member .. ' ' .. ttype .. ' ' .. string.format('%d', count) .. ' ' .. entry .. ' ' .. attempt .. ' ' .. first .. ' ' .. sess
  return deadline
end
-- (the tables are filled through counters: #t is a search each time)
local out, no = {}, 0
local leases, nl = {}, 0
local unidx, nu = {}, 0
local toknum = 0
for _, id in ipairs(ids) do
  local tk = KEYS[9] .. id
  local f
  if hoff then -- (the last dispatch's token: "Task created" or "dispatched")
    f = redis.call('HMGET', tk, 'state', 'task_type', 'content', 'params', 'session_id', 'priority',
      'timeout_ms', 'retry_count', 'max_retries', 'created_at', 'not_before', 'tp', 'lk', 'pk', 'handoff')
  else
    f = redis.call('HMGET', tk, 'state', 'task_type', 'content', 'params', 'session_id', 'priority',
      'timeout_ms', 'retry_count', 'max_retries', 'created_at', 'not_before', 'tp', 'lk', 'pk')
  end
  if f[1] == 'PENDING' then
    local created = tonumber(f[10]) or now
    local base = created
    local nb = tonumber(f[11])
    if nb and nb > base then base = nb end
    nu = nu + 1; unidx[nu] = id
    if maxage > 0 and now - base >= maxage then
      local msg = 'task too old at pickup: ' .. (now - base) .. ' ms >= max age ' .. maxage .. ' ms'
      local erec = '{"at_ms":' .. now .. ',"attempt":' .. ((tonumber(f[8]) or 0) + 1) ..
        ',"error_type":"TaskTooOld","message":"' .. msg .. '"}'
      to_dlq(tk, KEYS[12] .. id, KEYS[10], KEYS[11], id, now, 'PENDING', 'TaskTooOld', msg, erec,
        { sh = redis.call('HGET', tk, 'state_history'), eh = redis.call('HGET', tk, 'error_history'), ttype = f[2], sess = f[5], rc = f[8] })
    else
      local blocked, lh = nil, nil
      if counting then
        -- pause of its type, then its type's and key's limits
        blockedat = BIG
        local ts = 't:' .. (f[2] or '')
        if ctl and ctl['p:' .. ts] then blocked = ts end
        local scopes = {}
        local TL = lim(ts)
        if not blocked and TL then
          local r, at = room(ts, TL)
          if r <= 0 then blocked = ts; blockedat = at else scopes[#scopes + 1] = ts end
        end
        if not blocked and f[13] and f[13] ~= '' then
          local ks = 'k:' .. f[13]
          local KL = lim(ks)
          if KL then
            local r, at = room(ks, KL)
            if r <= 0 then blocked = ks; blockedat = at else scopes[#scopes + 1] = ks end
          end
        end
        if blocked then
          park(id, tk, blocked, f[14])
        else
          local hs = {}
          acquire(qs, QL, qn ~= '' or (QL and QL.conc >= 0))
          if qn ~= '' or (QL and QL.conc >= 0) then hs[#hs + 1] = qs end
          for _, sc in ipairs(scopes) do
            local L = lim(sc)
            acquire(sc, L, L.conc >= 0)
            if L.conc >= 0 then hs[#hs + 1] = sc end
          end
          if #hs > 0 then lh = table.concat(hs, '\n') end
          if f[14] then redis.call('HDEL', tk, 'pk') end
        end
      end
      if not blocked then
        toknum = toknum + 1
        local token = ARGV[6] .. ':' .. toknum
        ev(id, 'PENDING', 'ACTIVE', nows, f[2], f[5])
        local dlease = hoff and dispatch(id, tk, f, token, lh)
        if dlease then
          leases[nl + 1] = dlease; leases[nl + 2] = id; nl = nl + 2
        else
          -- the history's entry goes to ha (see taken in lib.lua): the
          -- history itself is neither read nor rewritten here; started_at
          -- is its time
          if lh then
            redis.call('HSET', tk, 'state', 'ACTIVE', 'lease', token, 'worker', ARGV[7], 'updated_at', nows,
              'ha', ha, 'lh', lh)
          else
            redis.call('HSET', tk, 'state', 'ACTIVE', 'lease', token, 'worker', ARGV[7], 'updated_at', nows,
              'ha', ha)
          end
          leases[nl + 1] = ARGV[5]; leases[nl + 2] = id; nl = nl + 2
          -- eight strings per task (store.fetchFrom): its id, token, type,
          -- content, params, session, traceparent, then "<priority>
          -- <timeout> <retry count> <max retries> <created at>" (none has a
          -- space)
          out[no + 1] = id; out[no + 2] = token; out[no + 3] = f[2] or ''; out[no + 4] = f[3] or ''
          out[no + 5] = f[4] or ''; out[no + 6] = f[5] or ''; out[no + 7] = f[12] or ''
          out[no + 8] = (f[6] or '') .. ' ' .. (f[7] or '') .. ' ' .. (f[8] or '') .. ' ' .. (f[9] or '') .. ' ' .. (f[10] or '')
          no = no + 8
        end
      end
    end
  end
end
for s, l in pairs(front) do
  local r = {}
  for i = #l, 1, -1 do r[#r + 1] = l[i] end
  redis.call('LPUSH', KEYS[17] .. s, unpack(r))
end
for s, l in pairs(back) do redis.call('RPUSH', KEYS[17] .. s, unpack(l)) end
if counting then flush_limits() end
if nu > 0 then redis.call('ZREM', KEYS[6], unpack(unidx)) end
if nl > 0 then zadd(KEYS[5], leases) end
if nd > 0 then
  for _, set in ipairs(psets) do zadd(set, places[set]) end
  zadd(KEYS[19], checks)
end
if not capped and redis.call('LLEN', KEYS[4]) + redis.call('LLEN', KEYS[1]) + redis.call('LLEN', KEYS[2]) + redis.call('LLEN', KEYS[3]) > 0 then
  wake(KEYS[8])
end
flush_wakes()
flush_events(KEYS[7], ARGV[17])
return done(out)
