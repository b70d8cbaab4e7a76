package store

import (
	"context"
	"fmt"
	"testing"

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
