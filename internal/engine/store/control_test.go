package store

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/task"
)

func (b *testBundle) fetchQ(t *testing.T, q string, n int) ([]*task.Task, time.Duration) {
	t.Helper()
	got, hint, err := b.s.FetchWithHint(b.ctx, FetchRequest{N: n, Queue: q, WorkerID: "w1",
		TokenPrefix: "w1-" + time.Now().Format("150405.000000000"), Lease: 30 * time.Second})
	require.NoError(t, err)
	return got, hint
}

func intp(n int) *int { return &n }

func TestNamedQueuesAreApart(t *testing.T) {
	t.Parallel()
	b := setup(t)
	d1 := b.enqueue(t, EnqueueRequest{})
	a1 := b.enqueue(t, EnqueueRequest{Queue: "emails"})
	a2 := b.enqueue(t, EnqueueRequest{Queue: "emails", Priority: task.PriorityHigh})
	require.Equal(t, "emails", a1.Queue)

	got, _ := b.fetchQ(t, "", 10)
	require.Equal(t, []string{d1.ID}, ids(got))
	require.Equal(t, DefaultQueue, got[0].Queue)

	qs, err := b.s.Queues(b.ctx)
	require.NoError(t, err)
	require.Len(t, qs, 2)
	require.Equal(t, DefaultQueue, qs[0].Name)
	require.Equal(t, int64(1), qs[0].Active)
	require.Equal(t, "emails", qs[1].Name)
	require.Equal(t, int64(1), qs[1].Pending[task.PriorityHigh])
	require.Equal(t, int64(1), qs[1].Pending[task.PriorityNormal])

	got, _ = b.fetchQ(t, "emails", 10)
	require.Equal(t, []string{a2.ID, a1.ID}, ids(got))
	stored, err := b.s.Get(b.ctx, a1.ID)
	require.NoError(t, err)
	require.Equal(t, "emails", stored.Queue)

	// a retry goes back to its own queue's retry list
	_, err = b.s.Fail(b.ctx, a1.ID, got[1].Lease, Failure{ErrorType: "X", Message: "boom", RetryAt: b.clk.Now().Add(time.Millisecond)})
	require.NoError(t, err)
	q, err := b.s.Queue(b.ctx, "emails")
	require.NoError(t, err)
	require.Equal(t, int64(1), q.Scheduled, "the retry waits in the scheduled set")
	b.clk.Advance(time.Second)
	_, err = b.s.PromoteDue(b.ctx, 10)
	require.NoError(t, err)
	none, _ := b.fetchQ(t, "", 10)
	require.Empty(t, none)
	again, _ := b.fetchQ(t, "emails", 10)
	require.Equal(t, []string{a1.ID}, ids(again))

	q, err = b.s.Queue(b.ctx, "emails")
	require.NoError(t, err)
	require.Equal(t, int64(2), q.Active)
	require.Zero(t, q.Scheduled)
	require.NoError(t, b.s.Complete(b.ctx, a2.ID, got[0].Lease, nil))
	q, err = b.s.Queue(b.ctx, "emails")
	require.NoError(t, err)
	require.Equal(t, int64(1), q.Active)
	require.InDelta(t, 1, q.CompletedPerMin, 0.01)

	_, err = b.s.Queue(b.ctx, "nope")
	require.ErrorIs(t, err, ErrNoQueue)
	_, err = b.s.Enqueue(b.ctx, EnqueueRequest{Type: "x", Queue: "Bad Name"})
	var ve *ValidationError
	require.ErrorAs(t, err, &ve)
	require.Equal(t, "queue", ve.Field)
}

func TestPauseQueueKeepsOrderAndSurvivesRestart(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var want []string
	for range 3 {
		want = append(want, b.enqueue(t, EnqueueRequest{Queue: "q1"}).ID)
	}
	require.NoError(t, b.s.PauseQueue(b.ctx, "q1"))
	got, _ := b.fetchQ(t, "q1", 10)
	require.Empty(t, got)

	// a new process (a new Store on the same namespace) sees the pause
	s2, err := New(b.rdb, b.s.Config())
	require.NoError(t, err)
	got, err = s2.Fetch(b.ctx, FetchRequest{N: 10, Queue: "q1", WorkerID: "w2", TokenPrefix: "w2", Lease: time.Minute})
	require.NoError(t, err)
	require.Empty(t, got)
	qs, _, err := s2.Paused(b.ctx)
	require.NoError(t, err)
	require.Equal(t, []string{"q1"}, qs)

	require.NoError(t, b.s.ResumeQueue(b.ctx, "q1"))
	got, _ = b.fetchQ(t, "q1", 10)
	require.Equal(t, want, ids(got))
}

func TestPauseTaskTypeParksInOrder(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a1 := b.enqueue(t, EnqueueRequest{Type: "a"})
	b1 := b.enqueue(t, EnqueueRequest{Type: "b"})
	a2 := b.enqueue(t, EnqueueRequest{Type: "a"})
	b2 := b.enqueue(t, EnqueueRequest{Type: "b"})
	a3 := b.enqueue(t, EnqueueRequest{Type: "a"})
	require.NoError(t, b.s.PauseTaskType(b.ctx, "a"))

	got := b.fetch(t, 10)
	require.Equal(t, []string{b1.ID, b2.ID}, ids(got))
	require.Empty(t, b.fetch(t, 10))
	parked, err := b.s.Parked(b.ctx)
	require.NoError(t, err)
	require.Equal(t, map[string]int64{"t:a": 3}, parked)
	require.Equal(t, task.StatePending, b.state(t, a1.ID))

	// a cancel of a parked task takes it out of the parking list
	_, err = b.s.Cancel(b.ctx, a2.ID)
	require.NoError(t, err)

	require.NoError(t, b.s.ResumeTaskType(b.ctx, "a"))
	got = b.fetch(t, 10)
	require.Equal(t, []string{a1.ID, a3.ID}, ids(got))
	parked, err = b.s.Parked(b.ctx)
	require.NoError(t, err)
	require.Empty(t, parked)
}

func TestConcurrencyLimitPerKeyLetsOtherKeysGo(t *testing.T) {
	t.Parallel()
	b := setup(t)
	require.NoError(t, b.s.SetLimit(b.ctx, Limit{Scope: ScopeKey, Name: "tenant-1", Concurrency: intp(1)}))
	x1 := b.enqueue(t, EnqueueRequest{LimitKey: "tenant-1"})
	x2 := b.enqueue(t, EnqueueRequest{LimitKey: "tenant-1"})
	y1 := b.enqueue(t, EnqueueRequest{LimitKey: "tenant-2"})
	x3 := b.enqueue(t, EnqueueRequest{LimitKey: "tenant-1"})

	got := b.fetch(t, 10)
	require.Equal(t, []string{x1.ID, y1.ID}, ids(got))
	require.Empty(t, b.fetch(t, 10))
	require.NoError(t, b.s.Complete(b.ctx, y1.ID, got[1].Lease, nil))

	// every end of an attempt gives the slot back: complete
	require.NoError(t, b.s.Complete(b.ctx, x1.ID, got[0].Lease, nil))
	next := b.fetch(t, 10)
	require.Equal(t, []string{x2.ID}, ids(next))
	// fail
	_, err := b.s.Fail(b.ctx, x2.ID, next[0].Lease, Failure{ErrorType: "X", Message: "m", Permanent: true})
	require.NoError(t, err)
	next = b.fetch(t, 10)
	require.Equal(t, []string{x3.ID}, ids(next))
	// lease loss (reap): the task goes back, then starts again
	b.clk.Advance(time.Minute)
	_, _, err = b.s.ReapExpired(b.ctx, 100)
	require.NoError(t, err)
	next = b.fetch(t, 10)
	require.Equal(t, []string{x3.ID}, ids(next))
	// cancel of the running task
	_, err = b.s.Cancel(b.ctx, x3.ID)
	require.NoError(t, err)
	require.NoError(t, b.s.CancelActive(b.ctx, x3.ID, next[0].Lease, "cancel"))
	x4 := b.enqueue(t, EnqueueRequest{LimitKey: "tenant-1"})
	next = b.fetch(t, 10)
	require.Equal(t, []string{x4.ID}, ids(next))
	// release (shutdown hand-back)
	require.NoError(t, b.s.Release(b.ctx, x4.ID, next[0].Lease, time.Time{}, "shutdown"))
	next = b.fetch(t, 10)
	require.Equal(t, []string{x4.ID}, ids(next))

	running, err := b.rdb.HGet(b.ctx, b.s.parts[0].running(), "k:tenant-1").Int()
	require.NoError(t, err)
	require.Equal(t, 1, running)
}

func TestWildcardKeyLimit(t *testing.T) {
	t.Parallel()
	b := setup(t)
	require.NoError(t, b.s.SetLimit(b.ctx, Limit{Scope: ScopeKey, Name: "*", Concurrency: intp(1)}))
	a1 := b.enqueue(t, EnqueueRequest{LimitKey: "a"})
	b.enqueue(t, EnqueueRequest{LimitKey: "a"})
	b1 := b.enqueue(t, EnqueueRequest{LimitKey: "b"})
	n1 := b.enqueue(t, EnqueueRequest{})
	require.Equal(t, []string{a1.ID, b1.ID, n1.ID}, ids(b.fetch(t, 10)))

	// deleting the limit lets the parked task go
	require.NoError(t, b.s.DeleteLimit(b.ctx, ScopeKey, "*"))
	require.Len(t, b.fetch(t, 10), 1)
	require.ErrorIs(t, b.s.DeleteLimit(b.ctx, ScopeKey, "*"), ErrNoLimit)
}

func TestQueueConcurrencyAndRateLimit(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for range 10 {
		b.enqueue(t, EnqueueRequest{Queue: "bulk"})
	}
	require.NoError(t, b.s.SetLimit(b.ctx, Limit{Scope: ScopeQueue, Name: "bulk", Concurrency: intp(3)}))
	got, _ := b.fetchQ(t, "bulk", 10)
	require.Len(t, got, 3)
	more, _ := b.fetchQ(t, "bulk", 10)
	require.Empty(t, more)
	require.NoError(t, b.s.Complete(b.ctx, got[0].ID, got[0].Lease, nil))
	more, _ = b.fetchQ(t, "bulk", 10)
	require.Len(t, more, 1)

	// a rate of 2 per second replaces it: 2 at once, then one per 500 ms
	require.NoError(t, b.s.SetLimit(b.ctx, Limit{Scope: ScopeQueue, Name: "bulk", Rate: &RateLimit{Limit: 2, Per: time.Second}}))
	got, _ = b.fetchQ(t, "bulk", 10)
	require.Len(t, got, 2)
	got, hint := b.fetchQ(t, "bulk", 10)
	require.Empty(t, got)
	require.Equal(t, 500*time.Millisecond, hint)
	b.clk.Advance(500 * time.Millisecond)
	got, _ = b.fetchQ(t, "bulk", 10)
	require.Len(t, got, 1)

	ls, err := b.s.Limits(b.ctx)
	require.NoError(t, err)
	require.Len(t, ls, 1)
	require.Equal(t, 2, ls[0].Rate.Limit)
	require.Nil(t, ls[0].Concurrency)
}

func TestTaskTypeRateLimitParksAndComesBack(t *testing.T) {
	t.Parallel()
	b := setup(t)
	require.NoError(t, b.s.SetLimit(b.ctx, Limit{Scope: ScopeTaskType, Name: "slow", Rate: &RateLimit{Limit: 1, Per: time.Second}}))
	s1 := b.enqueue(t, EnqueueRequest{Type: "slow"})
	s2 := b.enqueue(t, EnqueueRequest{Type: "slow"})
	f1 := b.enqueue(t, EnqueueRequest{Type: "fast"})
	s3 := b.enqueue(t, EnqueueRequest{Type: "slow"})

	got, hint := b.fetchQ(t, "", 10)
	require.Equal(t, []string{s1.ID, f1.ID}, ids(got))
	require.Equal(t, time.Second, hint)
	b.clk.Advance(time.Second)
	got, _ = b.fetchQ(t, "", 10)
	require.Equal(t, []string{s2.ID}, ids(got))
	b.clk.Advance(time.Second)
	got, _ = b.fetchQ(t, "", 10)
	require.Equal(t, []string{s3.ID}, ids(got))

	// parked tasks count as PENDING and keep their data
	tk, err := b.s.Get(b.ctx, s3.ID)
	require.NoError(t, err)
	require.Equal(t, task.StateActive, tk.State)
	_ = json.RawMessage(nil)
}

func TestLimitValidation(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		l     Limit
		field string
	}{
		"NoScope":     {Limit{Name: "x", Concurrency: intp(1)}, "scope"},
		"NoFigures":   {Limit{Scope: ScopeQueue, Name: "x"}, "rate"},
		"BadQueue":    {Limit{Scope: ScopeQueue, Name: "X Y", Concurrency: intp(1)}, "name"},
		"ZeroRate":    {Limit{Scope: ScopeTaskType, Name: "x", Rate: &RateLimit{Limit: 0, Per: time.Second}}, "rate.limit"},
		"ShortPer":    {Limit{Scope: ScopeTaskType, Name: "x", Rate: &RateLimit{Limit: 1}}, "rate.per"},
		"NegConc":     {Limit{Scope: ScopeKey, Name: "k", Concurrency: intp(-1)}, "concurrency"},
		"LongKeyName": {Limit{Scope: ScopeKey, Name: string(make([]byte, 201)), Concurrency: intp(1)}, "name"},
	} {
		t.Run(name, func(t *testing.T) {
			var ve *ValidationError
			require.ErrorAs(t, tc.l.Validate(), &ve)
			require.Equal(t, tc.field, ve.Field)
		})
	}
}

func TestLimitShares(t *testing.T) {
	t.Parallel()
	l := Limit{Scope: ScopeQueue, Name: "q", Concurrency: intp(5), Rate: &RateLimit{Limit: 10, Per: time.Second}}
	require.Equal(t, []string{"3.3333333333333335/1000/2", "3.3333333333333335/1000/2", "3.3333333333333335/1000/1"},
		[]string{l.share(0, 3), l.share(1, 3), l.share(2, 3)})
	require.Equal(t, "0/1000/-1", Limit{}.share(0, 1))
}

func TestPausesAndLimitsOverPartitions(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *Config) { c.Partitions = 3 })
	for range 12 {
		b.enqueue(t, EnqueueRequest{Type: "x", Queue: "spread"})
	}
	require.NoError(t, b.s.PauseQueue(b.ctx, "spread"))
	got, _ := b.fetchQ(t, "spread", 20)
	require.Empty(t, got, "the pause holds in every partition")
	require.NoError(t, b.s.ResumeQueue(b.ctx, "spread"))

	// a concurrency of 2 over 3 partitions: shares 1, 1 and 0, never more
	// than 2 at once in all
	require.NoError(t, b.s.SetLimit(b.ctx, Limit{Scope: ScopeTaskType, Name: "x", Concurrency: intp(2)}))
	var running []*task.Task
	for range 5 {
		got, _ = b.fetchQ(t, "spread", 20)
		running = append(running, got...)
	}
	require.LessOrEqual(t, len(running), 2)
	require.NotEmpty(t, running)
	q, err := b.s.Queue(b.ctx, "spread")
	require.NoError(t, err)
	require.Equal(t, int64(len(running)), q.Active)
	for _, tk := range running {
		require.NoError(t, b.s.Complete(b.ctx, tk.ID, tk.Lease, nil))
	}
	require.NoError(t, b.s.DeleteLimit(b.ctx, ScopeTaskType, "x"))
	total := len(running)
	for range 5 {
		got, _ = b.fetchQ(t, "spread", 20)
		total += len(got)
	}
	require.Equal(t, 12, total, "every task ran once the limit was removed")
}
