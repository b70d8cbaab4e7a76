package store

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/task"
)

// fill creates r tasks in the retry queue and p in the primary queue.
func fill(t *testing.T, b *testBundle, r, p int) {
	t.Helper()
	mk := func(prefix string, n int) []EnqueueRequest {
		out := make([]EnqueueRequest, n)
		for i := range out {
			out[i] = EnqueueRequest{ID: fmt.Sprintf("%s%05d", prefix, i), Type: "noop"}
		}
		return out
	}
	if r > 0 {
		_, err := b.s.EnqueueBatch(b.ctx, mk("r", r))
		require.NoError(t, err)
		// test setup: turn them into retries waiting in the retry queue
		require.NoError(t, b.rdb.Rename(b.ctx, b.s.parts[0].primary(task.PriorityNormal), b.s.parts[0].retry()).Err())
	}
	if p > 0 {
		_, err := b.s.EnqueueBatch(b.ctx, mk("p", p))
		require.NoError(t, err)
	}
}

func countRetry(ts []*task.Task) int {
	n := 0
	for _, tk := range ts {
		if strings.HasPrefix(tk.ID, "r") {
			n++
		}
	}
	return n
}

func TestRatioAtEachPressureLevel(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		retry     int
		wantRatio float64
		wantPer10 int
		pressure  string
	}{
		{"Normal", 999, 0.3, 3, "normal"},
		{"Warning", 1000, 0.2, 2, "warning"},
		{"WarningUpper", 5000, 0.2, 2, "warning"},
		{"Critical", 5001, 0.1, 1, "critical"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			fill(t, b, c.retry, 100)
			qs := b.status(t)
			require.Equal(t, c.wantRatio, qs.RetryRatio)
			require.Equal(t, c.pressure, qs.Pressure)
			// a batch of 10 takes exactly ratio·10 retry-first
			got := b.fetch(t, 10)
			require.Len(t, got, 10)
			require.Equal(t, c.wantPer10, countRetry(got))
			// FIFO within each queue
			require.Equal(t, "r00000", got[0].ID)
		})
	}
}

func TestRatioSingleFetches(t *testing.T) {
	t.Parallel()
	b := setup(t)
	fill(t, b, 600, 600)
	retry := 0
	const n = 500
	for i := 0; i < n; i++ {
		retry += countRetry(b.fetch(t, 1))
	}
	// binomial(500, 0.3): mean 150, sd ≈ 10.2; ±5 sd
	require.InDelta(t, 150, retry, 51)
}

func TestRatioFallsBackWhenAQueueIsShort(t *testing.T) {
	t.Parallel()
	b := setup(t)
	fill(t, b, 2, 100)
	got := b.fetch(t, 10)
	require.Len(t, got, 10)
	require.Equal(t, 2, countRetry(got))
	b2 := setup(t)
	fill(t, b2, 100, 1)
	got = b2.fetch(t, 10)
	require.Len(t, got, 10)
	require.Equal(t, 9, countRetry(got))
}

func TestPriorityWeightsWithoutStarvation(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var reqs []EnqueueRequest
	for _, p := range []task.Priority{task.PriorityLow, task.PriorityNormal, task.PriorityHigh} {
		for i := 0; i < 50; i++ {
			reqs = append(reqs, EnqueueRequest{ID: fmt.Sprintf("%s%02d", p, i), Type: "noop", Priority: p})
		}
	}
	_, err := b.s.EnqueueBatch(b.ctx, reqs)
	require.NoError(t, err)
	qs := b.status(t)
	require.Equal(t, int64(50), qs.PrimaryByPriority[task.PriorityLow])
	count := map[task.Priority]int{}
	for _, tk := range b.fetch(t, 10) {
		count[tk.Priority]++
	}
	require.Equal(t, map[task.Priority]int{task.PriorityHigh: 6, task.PriorityNormal: 3, task.PriorityLow: 1}, count)
	// when only low and normal remain, low still gets its share
	b2 := setup(t)
	reqs = reqs[:100] // low and normal only
	_, err = b2.s.EnqueueBatch(b2.ctx, reqs)
	require.NoError(t, err)
	count = map[task.Priority]int{}
	for _, tk := range b2.fetch(t, 8) {
		count[tk.Priority]++
	}
	require.Equal(t, 2, count[task.PriorityLow])
	require.Equal(t, 6, count[task.PriorityNormal])
}

// TestExplicitZeroSettings: an optional setting given as 0 is 0 (nil is
// unset: the default) — MAX_RETRIES=0 and DEFAULT_RETRY_RATIO=0 reach the
// store this way; a negative one is refused.
func TestExplicitZeroSettings(t *testing.T) {
	t.Parallel()
	require.ErrorContains(t, Config{Namespace: "x", RetryRatio: new(-0.5)}.WithDefaults().Validate(), "RetryRatio -0.5 must be within [0, 1]")
	require.ErrorContains(t, Config{Namespace: "x", DefaultMaxRetries: new(-1)}.WithDefaults().Validate(), "must not be negative")
	b := setup(t, func(c *Config) { c.RetryRatio, c.DefaultMaxRetries = new(0.0), new(0) })
	require.NoError(t, b.s.Config().WithDefaults().Validate())
	fill(t, b, 20, 20)
	qs := b.status(t)
	require.Zero(t, qs.RetryRatio)
	for range 5 { // ratio 0: the primary queue first, every time
		require.Zero(t, countRetry(b.fetch(t, 3)))
	}

	tk := b.enqueue(t, EnqueueRequest{ID: "once"})
	require.Zero(t, tk.MaxRetries, "no retries by default")
	got, err := b.s.Get(b.ctx, "once")
	require.NoError(t, err)
	require.Zero(t, got.MaxRetries)

	// the defaults stay the defaults
	d := setup(t)
	require.Equal(t, 0.3, d.status(t).RetryRatio)
	require.Equal(t, 3, d.enqueue(t, EnqueueRequest{ID: "x"}).MaxRetries)
}
