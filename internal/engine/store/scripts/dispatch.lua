-- dispatch: hand several ACTIVE attempts to the external path in one call,
-- each all or nothing and in order: for each attempt, check that its task
-- is still ACTIVE under the attempt's token and not asked to cancel, take
-- one of its type's in-flight places (when the type is bounded), publish
-- its task.create, and hand the lease over (handoff.lua's writes: `worker`
-- the new holder, `handoff` the token — the record of the task's last
-- dispatch — and `hto` its timeout, the lease deadline timeout + grace in
-- the active index, the first check in the handoff index). Publishing and handing off in one script
-- leaves no moment where a service runs an attempt that is still the
-- worker's: a cancel request sees either the worker's attempt (not yet
-- published: the worker cancels it) or the handed-off one (the cancel
-- forwarder tells the services).
-- Every key must share one hash slot: a deployment of one partition, whose
-- task keys and the protocol's streams all carry {namespace}. Deployments
-- of several partitions publish (the dispatcher's own script) then hand
-- off (handoff.lua) instead.
-- What follows from an attempt's timeout is computed here, once: its lease
-- deadline and in-flight place's deadline (timeout + grace), its first
-- check (the sooner of now + grace and the timeout), its in-flight member
-- ("<task id> <token>", dispatch's inflightMember). The places taken, the
-- lease deadlines and the first checks of the attempts published are
-- written together at the end, one ZADD per set. (The call is atomic; a
-- Redis error part way — a key of the wrong type — would leave the
-- attempts published before it without those writes, where writing them
-- one attempt at a time would not: none of the keys is ever of another
-- type.)
-- KEYS[1] active index  KEYS[2] handoff index  KEYS[3] task.create stream
-- then per attempt i (base b = 3 + 2*(i-1)): KEYS[b+1] task hash
-- KEYS[b+2] its type's in-flight set
-- ARGV[1] now (ms)  ARGV[2] MINID (retention cut-off)  ARGV[3] attempts n
-- ARGV[4] grace (ms)  ARGV[5] the events' event_type  ARGV[6] their timestamp
-- then per attempt (base a = 6 + 6*(i-1)): ARGV[a+1] token  ARGV[a+2] holder
-- ARGV[a+3] timeout at (ms)  ARGV[a+4] bound (-1: unbounded)
-- ARGV[a+5] the event's event_id  ARGV[a+6] its data
-- Returns one string per attempt: "OK <in-flight count> <entry id>
-- <previous token>" (the count -1 when unbounded, the token empty on a
-- first dispatch), "FULL <in-flight count>" (its type has no free place:
-- nothing written), CANCEL (a cancel was requested: nothing written),
-- NOTFOUND, STATE <state>, LEASE (another attempt holds the task).
local now = tonumber(ARGV[1])
local n = tonumber(ARGV[3])
local grace = tonumber(ARGV[4])
local etype, stamp = ARGV[5], ARGV[6]
-- the published attempts' lease deadlines and first checks, written with
-- one ZADD per index at the end (lib.lua's zadd)
local leases, checks, nl = {}, {}, 0
local places, sets = {}, {} -- per in-flight set the places taken, added with one ZADD
local out = {}
for i = 1, n do
  local b = 3 + 2 * (i - 1)
  local a = 6 + 6 * (i - 1)
  local tk, inflight = KEYS[b + 1], KEYS[b + 2]
  local token = ARGV[a + 1]
  local f = redis.call('HMGET', tk, 'state', 'lease', 'task_id', 'cancel_requested', 'handoff')
  if not f[1] then
    out[i] = 'NOTFOUND'
  elseif f[1] ~= 'ACTIVE' then
    out[i] = 'STATE ' .. f[1]
  elseif f[2] ~= token then
    out[i] = 'LEASE'
  elseif f[4] == '1' then
    out[i] = 'CANCEL'
  else
    local tid = f[3]
    local tat = tonumber(ARGV[a + 3])
    local lease = tat + grace
    local ok, count = true, -1
    local bound = tonumber(ARGV[a + 4])
    if bound >= 0 then
      local member = tid .. ' ' .. token
      ok, count = take_place(inflight, bound, ARGV[1], member) -- (lib.lua)
      if ok then
        local ps = bucket(places, sets, inflight)
        ps[#ps + 1] = lease
        ps[#ps + 1] = member
      end
    end
    if not ok then
      out[i] = 'FULL ' .. count
    else
      local id = redis.call('XADD', KEYS[3], 'MINID', '~', ARGV[2], '*',
        'event_id', ARGV[a + 5], 'event_type', etype, 'timestamp', stamp, 'data', ARGV[a + 6])
      redis.call('HSET', tk, 'worker', ARGV[a + 2], 'handoff', token, 'hto', ARGV[a + 3], 'updated_at', now)
      leases[nl + 1] = lease; leases[nl + 2] = tid
      checks[nl + 1] = math.min(now + grace, tat); checks[nl + 2] = tid .. ' ' .. token .. ' ' .. ARGV[a + 3]
      nl = nl + 2
      out[i] = 'OK ' .. count .. ' ' .. id .. ' ' .. (f[5] or '')
    end
  end
end
for _, set in ipairs(sets) do
  zadd(set, places[set])
end
if nl > 0 then
  zadd(KEYS[1], leases)
  zadd(KEYS[2], checks)
end
return out
