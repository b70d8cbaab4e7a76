package plan_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/internal/plan"
)

// sleepPlan: fixed_source → sleep(a) and sleep(b) in parallel → concat.
func sleepPlan(aMS int, aFail bool, bMS int) string {
	return fmt.Sprintf(`{"schema_version":1,"plan_name":"sleeps","nodes":[
	 {"node_id":"src","op":"test::fixed_source","inputs":[],"params":{"row_count":2}},
	 {"node_id":"a","op":"test::sleep","inputs":["src"],"params":{"duration_ms":%d,"fail_after_sleep":%t}},
	 {"node_id":"b","op":"test::sleep","inputs":["src"],"params":{"duration_ms":%d}},
	 {"node_id":"c","op":"core::concat","inputs":["a"],"params":{"rhs":"b"}}],"outputs":["c"]}`, aMS, aFail, bMS)
}

// TestDeadlineTimeoutFailFast is the deadline / node-timeout / fail-fast
// matrix. "Long" sleeps are 30 s: a run that waited for one would blow the
// test's budget, so returning at all proves the cancellation.
func TestDeadlineTimeoutFailFast(t *testing.T) {
	t.Parallel()
	const long = 30_000
	cases := []struct {
		name    string
		plan    string
		opts    plan.RunOptions
		wantErr error
		nodeErr bool
	}{
		{"NoLimitsSucceeds", sleepPlan(1, false, 2), plan.RunOptions{}, nil, false},
		{"DeadlineMetSucceeds", sleepPlan(1, false, 2), plan.RunOptions{Deadline: 10 * time.Second}, nil, false},
		{"NodeTimeoutMetSucceeds", sleepPlan(1, false, 2), plan.RunOptions{NodeTimeout: 10 * time.Second}, nil, false},
		{"DeadlineExceeded", sleepPlan(1, false, long), plan.RunOptions{Deadline: 50 * time.Millisecond}, plan.ErrDeadlineExceeded, false},
		{"NodeTimeout", sleepPlan(1, false, long), plan.RunOptions{NodeTimeout: 50 * time.Millisecond}, plan.ErrNodeTimeout, false},
		{"NodeTimeoutBeforeDeadline", sleepPlan(1, false, long), plan.RunOptions{NodeTimeout: 50 * time.Millisecond, Deadline: 20 * time.Second}, plan.ErrNodeTimeout, false},
		{"DeadlineBeforeNodeTimeout", sleepPlan(1, false, long), plan.RunOptions{NodeTimeout: 20 * time.Second, Deadline: 50 * time.Millisecond}, plan.ErrDeadlineExceeded, false},
		{"FailFastCancelsSlowBranch", sleepPlan(5, true, long), plan.RunOptions{}, nil, true},
		{"FailFastWithDeadline", sleepPlan(5, true, long), plan.RunOptions{Deadline: 20 * time.Second}, nil, true},
	}
	b := setup(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := b.compile(t, tc.plan)
			start := time.Now()
			res, err := b.eng.Run(context.Background(), c, user(1), tc.opts)
			elapsed := time.Since(start)
			require.Less(t, elapsed, 10*time.Second, "a cancelled run must not wait for its stragglers")
			switch {
			case tc.wantErr != nil:
				require.ErrorIs(t, err, tc.wantErr)
				require.Equal(t, tc.wantErr.Error(), err.Error(), "the message is the reference's")
			case tc.nodeErr:
				var ne *plan.NodeError
				require.ErrorAs(t, err, &ne)
				require.Equal(t, "a", ne.NodeID)
			default:
				require.NoError(t, err)
				require.Equal(t, 4, res.Rows())
			}
		})
	}
}

// TestBusyCPUNodeTimeout: a CPU node that spins past the node timeout
// fails the run with the timeout, not with the CPU node's own end.
func TestBusyCPUNodeTimeout(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.compile(t, `{"schema_version":1,"plan_name":"busy","nodes":[
	 {"node_id":"src","op":"test::fixed_source","inputs":[],"params":{}},
	 {"node_id":"spin","op":"test::busy_cpu","inputs":["src"],"params":{"busy_wait_ms":30000}}],"outputs":["spin"]}`)
	_, err := b.eng.Run(context.Background(), c, user(1), plan.RunOptions{NodeTimeout: 30 * time.Millisecond})
	require.ErrorIs(t, err, plan.ErrNodeTimeout)
}

// TestCallerCancel: cancelling the caller's context ends the run with the
// context's error.
func TestCallerCancel(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.compile(t, sleepPlan(30_000, false, 30_000))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := b.eng.Run(ctx, c, user(1), plan.RunOptions{})
	require.ErrorIs(t, err, context.Canceled)
}

// TestParallelBranchesOverlap: two 200 ms sleeps after one source run at
// the same time, which the trace shows as overlapping intervals.
func TestParallelBranchesOverlap(t *testing.T) {
	t.Parallel()
	b := setup(t)
	res, err := b.eng.Run(context.Background(), b.compile(t, sleepPlan(200, false, 200)), user(1), plan.RunOptions{Trace: true})
	require.NoError(t, err)
	byID := map[string]plan.NodeTrace{}
	for _, tr := range res.Trace {
		byID[tr.NodeID] = tr
	}
	a, bb := byID["a"], byID["b"]
	require.Less(t, a.Start, bb.End, "a starts before b ends")
	require.Less(t, bb.Start, a.End, "b starts before a ends")
	require.GreaterOrEqual(t, byID["c"].Start, max(a.End, bb.End), "concat waits for both")
}

// TestCPUPolicies: every policy gives the same answer; the trace shows
// where the CPU nodes ran.
func TestCPUPolicies(t *testing.T) {
	t.Parallel()
	cases := []struct {
		policy string
		rows   int
		want   map[string]plan.Place
	}{
		{plan.PolicyPool, 0, map[string]plan.Place{"vm_f": plan.PlacePool, "merge": plan.PlacePool, "sort": plan.PlacePool, "take": plan.PlacePool}},
		{plan.PolicyInline, 0, map[string]plan.Place{"vm_f": plan.PlaceInline, "sort": plan.PlaceInline, "take": plan.PlaceInline}},
		{plan.PolicyAuto, 0, map[string]plan.Place{"vm_f": plan.PlaceInline, "sort": plan.PlaceInline, "take": plan.PlaceInline}},
		// Option B off: the first CPU node of a chain goes to the pool, the
		// rest of the chain is fused onto its slot; take is always inline.
		{plan.PolicyAuto, -1, map[string]plan.Place{"vm_f": plan.PlacePool, "vm_r": plan.PlacePool, "sort": plan.PlaceFused, "take": plan.PlaceInline}},
		// Option B's threshold: vm_f reads media_f's 6 rows, vm_r media_r's 0
		// (recommendation:1's users have no media). Up to the threshold
		// inline, above it the pool.
		{plan.PolicyAuto, 6, map[string]plan.Place{"vm_f": plan.PlaceInline, "vm_r": plan.PlaceInline, "take": plan.PlaceInline}},
		{plan.PolicyAuto, 5, map[string]plan.Place{"vm_f": plan.PlacePool, "vm_r": plan.PlaceInline, "take": plan.PlaceInline}},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%s_%d", tc.policy, tc.rows), func(t *testing.T) {
			t.Parallel()
			b := setup(t, func(c *plan.Config) { c.CPUPolicy, c.InlineMaxRows = tc.policy, tc.rows })
			res, err := b.eng.Run(context.Background(), b.load(t, "complex_dag"), user(1), plan.RunOptions{Trace: true})
			require.NoError(t, err)
			require.Equal(t, []int64{1006, 1005, 1004, 1003, 1002, 1001}, ids(decode(t, b.reg, res)))
			got := map[string]plan.Place{}
			for _, tr := range res.Trace {
				got[tr.NodeID] = tr.Place
				if tr.Kind == "IO" {
					require.Equal(t, plan.PlaceIO, tr.Place, tr.NodeID)
				}
			}
			for id, p := range tc.want {
				if id == "merge" || id == "sort" {
					// merge runs where its last input finished: pool or fused.
					require.Contains(t, []plan.Place{p, plan.PlaceFused, plan.PlacePool}, got[id], id)
					continue
				}
				require.Equal(t, p, got[id], id)
			}
		})
	}
}

// TestConcurrentRuns: one engine serves many runs at once (run with -race).
func TestConcurrentRuns(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *plan.Config) { c.CPUPolicy, c.InlineMaxRows = plan.PolicyAuto, -1 })
	c := b.load(t, "complex_dag")
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := b.eng.Run(context.Background(), c, user(1), plan.RunOptions{})
			if err == nil && res.Rows() != 6 {
				err = fmt.Errorf("got %d rows, want 6", res.Rows())
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
}

// TestRedisDown: an unreachable Redis fails the run with an error naming
// the op, never a panic or a hang.
func TestRedisDown(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *plan.Config) { c.RedisURL = "redis://127.0.0.1:1/0" })
	_, err := b.eng.Run(context.Background(), b.load(t, "simple_viewer"), user(1), plan.RunOptions{Deadline: 5 * time.Second})
	var ne *plan.NodeError
	require.True(t, errors.As(err, &ne), "got %v", err)
	require.Contains(t, err.Error(), "viewer")
}

// TestPipelinedFanout: a follow over many rows makes one round trip for the
// lists and one for the hydration, whatever the row count, and a small
// in-flight limit splits the work without changing the answer. Where only
// media reads the follows (their country is dead), the viewer and the
// hydration make no round trip unless Config.ReadDeadColumns asks for them,
// and the answer stays the same.
func TestPipelinedFanout(t *testing.T) {
	t.Parallel()
	src := `{"schema_version":1,"plan_name":"fan","nodes":[
	 {"node_id":"v","op":"core::viewer","inputs":[],"params":{"endpoint":"ep_0001"}},
	 {"node_id":"f","op":"core::follow","inputs":["v"],"params":{"endpoint":"ep_0001","fanout":10}},
	 {"node_id":"m","op":"core::media","inputs":["f"],"params":{"endpoint":"ep_0001","fanout":2}}],"outputs":["m"]}`
	for _, tc := range []struct {
		limit    int
		readDead bool
		rtts     map[string]int
		crit     int
	}{
		{0, true, map[string]int{"v": 1, "f": 2, "m": 1}, 4},
		// 3 commands in flight: hydrating 10 follows and reading 10 media
		// lists take ⌈10/3⌉ = 4 round trips each.
		{3, true, map[string]int{"v": 1, "f": 5, "m": 4}, 10},
		{0, false, map[string]int{"v": 0, "f": 1, "m": 1}, 2},
		{3, false, map[string]int{"v": 0, "f": 1, "m": 4}, 5},
	} {
		limit, readDead := tc.limit, tc.readDead
		t.Run(fmt.Sprintf("MaxInflight%dReadDead%v", limit, readDead), func(t *testing.T) {
			t.Parallel()
			b := setup(t, func(c *plan.Config) { c.MaxInflight, c.ReadDeadColumns = limit, readDead })
			res, err := b.eng.Run(context.Background(), b.compile(t, src), user(1), plan.RunOptions{Trace: true})
			require.NoError(t, err)
			// media:1 and media:2, first 2 items each.
			require.Equal(t, []int64{1001, 1002, 1004, 1005}, ids(decode(t, b.reg, res)))
			rt := map[string]int{}
			for _, tr := range res.Trace {
				rt[tr.NodeID] = tr.RoundTrips
			}
			require.Equal(t, tc.rtts, rt)
			require.Equal(t, tc.crit, res.CriticalRoundTrips)
		})
	}
}

// TestLiveColumnsAreRead: a follow whose rows reach an output, a filter or
// a sort keeps its country hydration (one round trip more than the lists).
func TestLiveColumnsAreRead(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for name, tail := range map[string]string{
		"Output": `],"outputs":["f"]}`,
		"Sort":   `,{"node_id":"s","op":"core::sort","inputs":["f"],"params":{"by":1}}],"outputs":["s"]}`,
		"Concat": `,{"node_id":"m","op":"core::media","inputs":["f"],"params":{"endpoint":"ep_0001","fanout":2}},
		  {"node_id":"c","op":"core::concat","inputs":["m"],"params":{"rhs":"f"}}],"outputs":["c"]}`,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			src := `{"schema_version":1,"plan_name":"live","nodes":[
			 {"node_id":"v","op":"core::viewer","inputs":[],"params":{"endpoint":"ep_0001"}},
			 {"node_id":"f","op":"core::follow","inputs":["v"],"params":{"endpoint":"ep_0001","fanout":10}}` + tail
			res, err := b.eng.Run(context.Background(), b.compile(t, src), user(1), plan.RunOptions{Trace: true})
			require.NoError(t, err)
			for _, tr := range res.Trace {
				if tr.NodeID == "f" {
					require.Equal(t, 2, tr.RoundTrips)
				}
			}
			var countries int
			for _, g := range decode(t, b.reg, res) {
				if _, ok := g.Fields["country"]; ok {
					countries++
				}
			}
			require.Equal(t, 10, countries, "follow:1's ten users all have a country")
		})
	}
}

// TestIOGroups: list nodes made ready together share their pipelines; a
// node of the group that finishes early hands its rows on without waiting
// for the others' further steps; a failing member names itself.
func TestIOGroups(t *testing.T) {
	t.Parallel()
	// After the viewer: follow (an output, so it also hydrates: 2 steps),
	// and media (1 step) feeding a sort.
	src := `{"schema_version":1,"plan_name":"grp","nodes":[
	 {"node_id":"v","op":"core::viewer","inputs":[],"params":{"endpoint":"ep_0001"}},
	 {"node_id":"f","op":"core::follow","inputs":["v"],"params":{"endpoint":"ep_0001","fanout":3}},
	 {"node_id":"m","op":"core::media","inputs":["v"],"params":{"endpoint":"ep_0001","fanout":5}},
	 {"node_id":"s","op":"core::sort","inputs":["m"],"params":{"by":1,"order":"desc"}},
	 {"node_id":"c","op":"core::concat","inputs":["s"],"params":{"rhs":"f"}}],"outputs":["c"]}`
	t.Run("Shared", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		c := b.compile(t, src)
		// The last check compares two clocks a few µs apart: on a loaded
		// machine f's second read can end just before s's goroutine runs
		// (about 3 runs in 100 under 4 parallel copies). An engine that
		// makes s wait for f fails every run, so the plan runs up to 5
		// times and the check must hold in one; every other check holds
		// in every run.
		var tr map[string]plan.NodeTrace
		for attempt := 0; attempt < 5; attempt++ {
			res, err := b.eng.Run(context.Background(), c, user(1), plan.RunOptions{Trace: true})
			require.NoError(t, err)
			got := decode(t, b.reg, res)
			// media:1 = 1001..1003 sorted desc, then follow:1's first 3 with their country.
			require.Equal(t, []int64{1003, 1002, 1001, 1, 2, 3}, ids(got))
			require.Equal(t, "US", got[3].Fields["country"])
			require.Equal(t, "CA", got[4].Fields["country"])
			tr = map[string]plan.NodeTrace{}
			for _, x := range res.Trace {
				tr[x.NodeID] = x
			}
			require.Equal(t, tr["f"].Start, tr["m"].Start, "f and m start as one group")
			require.Equal(t, 2, tr["f"].RoundTrips)
			require.Equal(t, 1, tr["m"].RoundTrips)
			require.Equal(t, 2, res.CriticalRoundTrips, "the viewer reads nothing: only list ops read it")
			if tr["s"].Start <= tr["f"].End {
				break
			}
		}
		require.LessOrEqual(t, tr["s"].Start, tr["f"].End, "m's successor does not wait for f's hydration")
	})
	t.Run("MemberFails", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		// follow:1 as a string: LRANGE answers WRONGTYPE.
		require.NoError(t, b.rdb.Del(context.Background(), b.prefix+"follow:1").Err())
		require.NoError(t, b.rdb.Set(context.Background(), b.prefix+"follow:1", "x", 0).Err())
		_, err := b.eng.Run(context.Background(), b.compile(t, src), user(1), plan.RunOptions{})
		var ne *plan.NodeError
		require.True(t, errors.As(err, &ne), "got %v", err)
		require.Equal(t, "f", ne.NodeID)
		require.Contains(t, err.Error(), "WRONGTYPE")
	})
}

// TestExpensiveNeverInline: under policy auto, busy_cpu (marked expensive)
// goes to the pool even on one row, where option B would inline any other
// CPU op; take after it stays inline (option A).
func TestExpensiveNeverInline(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.compile(t, `{"schema_version":1,"plan_name":"busy","nodes":[
	 {"node_id":"src","op":"test::fixed_source","inputs":[],"params":{}},
	 {"node_id":"spin","op":"test::busy_cpu","inputs":["src"],"params":{"busy_wait_ms":1}},
	 {"node_id":"s","op":"core::sort","inputs":["src"],"params":{"by":1}},
	 {"node_id":"take","op":"core::take","inputs":["spin"],"params":{"count":1}},
	 {"node_id":"out","op":"core::concat","inputs":["take"],"params":{"rhs":"s"}}],"outputs":["out"]}`)
	res, err := b.eng.Run(context.Background(), c, user(1), plan.RunOptions{Trace: true})
	require.NoError(t, err)
	got := map[string]plan.Place{}
	for _, tr := range res.Trace {
		got[tr.NodeID] = tr.Place
	}
	require.Equal(t, plan.PlacePool, got["spin"])
	require.Equal(t, plan.PlaceInline, got["s"], "a one-row sort is under the threshold")
	require.Equal(t, plan.PlaceInline, got["take"])
	require.Equal(t, []int64{1, 1}, ids(decode(t, b.reg, res)))
}
