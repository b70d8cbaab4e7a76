package store

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// floorFetch and floorComplete are the minimal lifecycle (benchmark only).
var floorFetch = redis.NewScript(`
local ids = redis.call('LPOP', KEYS[1], tonumber(ARGV[1]))
if not ids then return {} end
local z = {}
for _, id in ipairs(ids) do
  redis.call('HSET', KEYS[2] .. id, 'state', 'ACTIVE', 'lease', 'tok')
  z[#z+1] = 123; z[#z+1] = id
end
redis.call('ZADD', KEYS[3], unpack(z))
return ids`)

var floorComplete = redis.NewScript(`
for i = 1, #ARGV do
  redis.call('HSET', KEYS[2] .. ARGV[i], 'state', 'COMPLETED', 'lease', '')
end
redis.call('ZREM', KEYS[3], unpack(ARGV))
return 1`)

// BenchmarkMinimalLifecycle64 is the floor to compare BenchmarkLifecycle64
// with: the least a Lua fetch+complete of 64 tasks can do (pop, two HSETs,
// a lease ZADD/ZREM) — no history, events, indexes, guards or task data.
func BenchmarkMinimalLifecycle64(b *testing.B) {
	s := benchStore(b)
	ctx := context.Background()
	q, pfx, act := s.parts[0].primary("normal"), s.parts[0].taskPrefix(), s.parts[0].active()
	for n := 0; n < b.N*64; n += 500 {
		ids := make([]any, 500)
		pipe := s.rdb.Pipeline()
		for i := range ids {
			id := fmt.Sprintf("f%d-%d", n, i)
			ids[i] = id
			pipe.HSet(ctx, pfx+id, "state", "PENDING", "task_type", "noop", "created_at", 1, "priority", "normal", "retry_count", 0, "max_retries", 3, "queue", "primary", "state_history", "x")
		}
		pipe.RPush(ctx, q, ids...)
		if _, err := pipe.Exec(ctx); err != nil {
			b.Fatal(err)
		}
	}
	cpu0 := redisCPU(b, s)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ids, err := floorFetch.Run(ctx, s.rdb, []string{q, pfx, act}, 64).StringSlice()
		if err != nil {
			b.Fatal(err)
		}
		args := make([]any, len(ids))
		for j, id := range ids {
			args[j] = id
		}
		if err := floorComplete.Run(ctx, s.rdb, []string{q, pfx, act}, args...).Err(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*64)/b.Elapsed().Seconds(), "tasks/s")
	b.ReportMetric((redisCPU(b, s)-cpu0)/float64(b.N*64), "redis-µs/task")
}

// requiredFetch and requiredComplete are the least a lifecycle can do that
// keeps what the engine promises and the floor leaves out (benchmark
// only): a guard on the state, the task's type and content handed to the
// worker, the history entry's time, one lifecycle event record per call,
// the COMPLETED index for listings and retention. Nothing more: no
// worker id, no updated_at, no PENDING index, no priorities, retry ratio
// or age rule, events naming the ids only.
var requiredFetch = redis.NewScript(`
local ids = redis.call('LPOP', KEYS[1], tonumber(ARGV[1]))
if not ids then return {} end
local out, no, z, nz, ev, ne = {}, 0, {}, 0, {}, 0
for i, id in ipairs(ids) do
  local tk = KEYS[2] .. id
  local f = redis.call('HMGET', tk, 'state', 'task_type', 'content')
  if f[1] == 'PENDING' then
    local tok = ARGV[3] .. i
    redis.call('HSET', tk, 'state', 'ACTIVE', 'lease', tok, 'ha', ARGV[4])
    z[nz + 1] = ARGV[2]; z[nz + 2] = id; nz = nz + 2
    ne = ne + 1; ev[ne] = id
    out[no + 1] = id; out[no + 2] = tok; out[no + 3] = f[2]; out[no + 4] = f[3] or ''; no = no + 4
  end
end
if nz > 0 then redis.call('ZADD', KEYS[3], unpack(z)) end
if ne > 0 then redis.call('XADD', KEYS[4], 'MAXLEN', '~', 10000, '*', 'e', table.concat(ev, ',')) end
return out`)

var requiredComplete = redis.NewScript(`
local done, nd, rm, nr = {}, 0, {}, 0
for i = 3, #ARGV, 2 do
  local id = ARGV[i]
  local tk = KEYS[2] .. id
  if redis.call('HGET', tk, 'lease') == ARGV[i + 1] then
    redis.call('HSET', tk, 'state', 'COMPLETED', 'lease', '', 'hc', ARGV[2])
    done[nd + 1] = ARGV[1]; done[nd + 2] = id; nd = nd + 2
    nr = nr + 1; rm[nr] = id
  end
end
if nr > 0 then
  redis.call('ZREM', KEYS[1], unpack(rm))
  redis.call('ZADD', KEYS[3], unpack(done))
  redis.call('XADD', KEYS[4], 'MAXLEN', '~', 10000, '*', 'e', table.concat(rm, ','))
end
return nr`)

// BenchmarkRequiredLifecycle64 sits between the floor
// (BenchmarkMinimalLifecycle64) and the engine (BenchmarkLifecycle64):
// the floor plus only what the engine must keep, on tasks the engine
// created. Its Redis time over the floor's bounds how close to the floor
// (the bench's probe) any engine keeping those records can come.
func BenchmarkRequiredLifecycle64(b *testing.B) {
	s := benchStore(b)
	ctx := context.Background()
	enqueueForBench(b, s, b.N*64)
	k := s.parts[0]
	q, pfx, act := k.primary("normal"), k.taskPrefix(), k.active()
	done, events := k.stateIndex("COMPLETED"), k.events()
	// the lease set a skiplist, as the engine's (lib.lua's zadd)
	if err := s.rdb.ZAdd(ctx, act, redis.Z{Score: 0, Member: strings.Repeat("skiplist ", 10)}).Err(); err != nil {
		b.Fatal(err)
	}
	args := make([]any, 0, 2+2*64)
	cpu0 := redisCPU(b, s)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		now := time.Now().UnixMilli()
		got, err := requiredFetch.Run(ctx, s.rdb, []string{q, pfx, act, events}, 64, now+60000, fmt.Sprint(i, ":"), fmt.Sprint(now, ",P,A,bench")).StringSlice()
		if err != nil || len(got) != 4*64 {
			b.Fatalf("fetch: %d values, %v", len(got), err)
		}
		args = append(args[:0], now, fmt.Sprint(now, ",A,C"))
		for j := 0; j < len(got); j += 4 {
			args = append(args, got[j], got[j+1])
		}
		if n, err := requiredComplete.Run(ctx, s.rdb, []string{act, pfx, done, events}, args...).Int(); err != nil || n != 64 {
			b.Fatalf("complete: %d, %v", n, err)
		}
	}
	b.ReportMetric(float64(b.N*64)/b.Elapsed().Seconds(), "tasks/s")
	b.ReportMetric((redisCPU(b, s)-cpu0)/float64(b.N*64), "redis-µs/task")
}
