-- advance: move a session's read cursor forward to a stream id, never back.
-- KEYS[1] cursor  ARGV[1] stream id "ms-seq"  ARGV[2] ttl seconds
-- Returns the cursor after the call.
local function parse(id)
  local ms, seq = string.match(id, '^(%d+)-(%d+)$')
  if not ms then return nil end
  return tonumber(ms), tonumber(seq)
end
local nms, nseq = parse(ARGV[1])
if not nms then return redis.error_reply('bad stream id') end
local cur = redis.call('GET', KEYS[1])
if cur then
  local cms, cseq = parse(cur)
  if cms and (cms > nms or (cms == nms and cseq >= nseq)) then
    redis.call('EXPIRE', KEYS[1], ARGV[2])
    return cur
  end
end
redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[2])
return ARGV[1]
