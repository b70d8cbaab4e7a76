package cron

import (
	"context"
	"encoding/json"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/taskflow/taskflow/internal/engine/clock"
	"github.com/taskflow/taskflow/internal/engine/store"
	"github.com/taskflow/taskflow/internal/testrig/testredis"
	"github.com/taskflow/taskflow/task"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestEachDueTimeFiresOnceWithSeveralSchedulers(t *testing.T) {
	t.Parallel()
	rdb, ns := testredis.Client(t)
	start := time.Date(2026, 1, 1, 12, 0, 30, 0, time.UTC)
	clk := clock.NewFake(start)
	st, err := store.New(rdb, store.Config{Namespace: ns, Clock: clk, MaxTaskAge: new(time.Duration(0))})
	require.NoError(t, err)
	ctx := context.Background()
	a := New(st, Config{Clock: clk})
	b := New(st, Config{Clock: clk})
	require.NoError(t, a.Put(ctx, Schedule{ID: "every-minute", Expr: "* * * * *", TaskType: "report.generate",
		Params: json.RawMessage(`{"quarter":"Q1","year":2026}`), SessionID: "s1"}))

	created, err := a.Tick(ctx)
	require.NoError(t, err)
	require.Empty(t, created, "nothing due yet")

	var all []string
	for minute := 1; minute <= 5; minute++ {
		clk.Set(start.Add(time.Duration(minute) * time.Minute))
		var mu sync.Mutex
		var wg sync.WaitGroup
		for _, c := range []*Cron{a, b, a, b} { // racing schedulers
			wg.Add(1)
			go func() {
				defer wg.Done()
				got, err := c.Tick(ctx)
				require.NoError(t, err)
				mu.Lock()
				all = append(all, got...)
				mu.Unlock()
			}()
		}
		wg.Wait()
	}
	require.Len(t, all, 5, "one task per due time: %v", all)
	for i := 1; i <= 5; i++ {
		due := time.Date(2026, 1, 1, 12, i, 0, 0, time.UTC)
		tk, err := st.Get(ctx, TaskID("every-minute", due))
		require.NoError(t, err)
		require.Equal(t, "report.generate", tk.Type)
		require.Equal(t, "s1", tk.SessionID)
		require.Equal(t, task.StatePending, tk.State)
	}
}

func TestCatchUpAfterDowntimeFiresOnlyTheLatest(t *testing.T) {
	t.Parallel()
	rdb, ns := testredis.Client(t)
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := clock.NewFake(start)
	st, err := store.New(rdb, store.Config{Namespace: ns, Clock: clk, MaxTaskAge: new(time.Duration(0))})
	require.NoError(t, err)
	ctx := context.Background()
	c := New(st, Config{Clock: clk})
	require.NoError(t, c.Put(ctx, Schedule{ID: "hourly", Expr: "@hourly", TaskType: "data.export"}))
	clk.Set(start.Add(5*time.Hour + 30*time.Minute))
	got, err := c.Tick(ctx)
	require.NoError(t, err)
	require.Equal(t, []string{TaskID("hourly", start.Add(5*time.Hour))}, got)
	got, err = c.Tick(ctx)
	require.NoError(t, err)
	require.Empty(t, got)

	// A schedule that is never due does not hang the tick. Put refuses one
	// now (TestValidate); one stored before that rule is written directly.
	require.ErrorIs(t, c.Put(ctx, Schedule{ID: "never", Expr: "0 0 31 2 *", TaskType: "data.export"}), ErrInvalid)
	old, err := json.Marshal(Schedule{ID: "never", Expr: "0 0 31 2 *", TaskType: "data.export", CreatedAt: start})
	require.NoError(t, err)
	require.NoError(t, rdb.HSet(ctx, c.k.schedules(), "never", old).Err())
	clk.Set(start.Add(24 * time.Hour))
	got, err = c.Tick(ctx)
	require.NoError(t, err)
	require.Len(t, got, 1, "only the hourly one")
}

func TestValidate(t *testing.T) {
	t.Parallel()
	cases := map[string]Schedule{
		"BadID":       {ID: "a b", Expr: "* * * * *", TaskType: "x"},
		"BadExpr":     {ID: "a", Expr: "every day", TaskType: "x"},
		"NeverDue":    {ID: "a", Expr: "0 0 30 2 *", TaskType: "x"},
		"NoType":      {ID: "a", Expr: "* * * * *"},
		"BadPriority": {ID: "a", Expr: "* * * * *", TaskType: "x", Priority: "urgent"},
	}
	for name, s := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			require.ErrorIs(t, s.Validate(), ErrInvalid)
		})
	}
	require.NoError(t, Schedule{ID: "ok", Expr: "*/5 * * * *", TaskType: "x"}.Validate())
}

func FuzzScheduleExpr(f *testing.F) {
	f.Add("* * * * *")
	f.Add("@every 1h")
	f.Add("0 0 31 2 *")
	f.Add("*/0 * * * *")
	f.Fuzz(func(t *testing.T, expr string) {
		_ = Schedule{ID: "f", Expr: expr, TaskType: "x"}.Validate()
	})
}

// TestLastHandledNeverMovesBack: schedulers whose clocks differ finish
// their ticks in either order; the later one to write must not move a
// schedule's last-handled due time back (the next tick would try those
// due times again, and fire them twice once their tasks are purged), and
// a schedule removed meanwhile keeps no marker.
func TestLastHandledNeverMovesBack(t *testing.T) {
	t.Parallel()
	rdb, ns := testredis.Client(t)
	start := time.Date(2026, 1, 1, 12, 0, 30, 0, time.UTC)
	clk := clock.NewFake(start)
	st, err := store.New(rdb, store.Config{Namespace: ns, Clock: clk, MaxTaskAge: new(time.Duration(0))})
	require.NoError(t, err)
	ctx := context.Background()
	c := New(st, Config{Clock: clk})
	require.NoError(t, c.Put(ctx, Schedule{ID: "m", Expr: "* * * * *", TaskType: "noop"}))
	last := func() string { return rdb.HGet(ctx, c.k.last(), "m").Val() }

	ahead := time.Date(2026, 1, 1, 12, 3, 0, 0, time.UTC)
	moved, err := c.advance(ctx, "m", ahead) // the scheduler whose clock is ahead
	require.NoError(t, err)
	require.True(t, moved)
	moved, err = c.advance(ctx, "m", ahead.Add(-time.Minute)) // the lagging one, finishing later
	require.NoError(t, err)
	require.False(t, moved)
	require.Equal(t, strconv.FormatInt(ahead.UnixMilli(), 10), last())

	// The next tick (at 12:03:30) has nothing due: 12:01–12:03 are handled.
	clk.Set(ahead.Add(30 * time.Second))
	got, err := c.Tick(ctx)
	require.NoError(t, err)
	require.Empty(t, got)

	require.NoError(t, c.Remove(ctx, "m"))
	moved, err = c.advance(ctx, "m", ahead.Add(time.Minute)) // a tick that read the schedule before the removal
	require.NoError(t, err)
	require.False(t, moved)
	require.False(t, rdb.HExists(ctx, c.k.last(), "m").Val(), "no marker for a removed schedule")
}

// TestLastRuns: a schedule that has not fired has no last run; once a
// tick fires it, its last run is the due time it fired for.
func TestLastRuns(t *testing.T) {
	t.Parallel()
	rdb, ns := testredis.Client(t)
	start := time.Date(2026, 1, 1, 12, 0, 30, 0, time.UTC)
	clk := clock.NewFake(start)
	st, err := store.New(rdb, store.Config{Namespace: ns, Clock: clk})
	require.NoError(t, err)
	ctx := context.Background()
	c := New(st, Config{Clock: clk})
	require.NoError(t, c.Put(ctx, Schedule{ID: "m", Expr: "* * * * *", TaskType: "noop"}))
	all, err := c.List(ctx)
	require.NoError(t, err)
	last, err := c.LastRuns(ctx, all)
	require.NoError(t, err)
	require.Empty(t, last, "not fired yet")

	clk.Set(start.Add(time.Minute)) // 12:01:30: 12:01 is due
	got, err := c.Tick(ctx)
	require.NoError(t, err)
	require.Len(t, got, 1)
	last, err = c.LastRuns(ctx, all)
	require.NoError(t, err)
	require.Equal(t, time.Date(2026, 1, 1, 12, 1, 0, 0, time.UTC), last["m"])
	last, err = c.LastRuns(ctx, nil)
	require.NoError(t, err)
	require.Empty(t, last)
}
