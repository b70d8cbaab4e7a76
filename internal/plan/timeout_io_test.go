package plan_test

import (
	"context"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/internal/plan"
	"github.com/taskflow/taskflow/internal/testrig/testredis"
)

// ioGroupPlan: fixed_source (no Redis) → follow and media, ready together,
// so they run as one IO group. Round 1 reads both lists (LRANGE); media
// then finishes and follow goes on alone (the rest of the group, on its own
// goroutine with the group's timer re-armed) to hydrate its rows' country
// (HGET), which its output shows.
const ioGroupPlan = `{"schema_version":1,"plan_name":"group","nodes":[
 {"node_id":"src","op":"test::fixed_source","inputs":[],"params":{"row_count":1}},
 {"node_id":"f","op":"core::follow","inputs":["src"],"params":{"endpoint":"ep_0001","fanout":10}},
 {"node_id":"m","op":"core::media","inputs":["src"],"params":{"endpoint":"ep_0001","fanout":3}},
 {"node_id":"both","op":"core::concat","inputs":["f"],"params":{"rhs":"m"}}],"outputs":["both"]}`

// TestTimeoutsDuringRedisReads: the node timeout and the request deadline
// end a run whose Redis read never answers — a single read (the viewer),
// an IO group's first round, and the rest of a group after one member
// finished — with the reference's messages, promptly.
func TestTimeoutsDuringRedisReads(t *testing.T) {
	t.Parallel()
	viewer := readFile(t, "testdata/plans/simple_viewer.plan.json")
	complexDAG := readFile(t, "testdata/plans/complex_dag.plan.json")
	cases := []struct {
		name, plan, stall string
		opts              plan.RunOptions
		want              error
		finished          map[string]int // nodes the trace must show done, with their rows out
	}{
		{"NodeTimeoutOnRead", viewer, "HGET", plan.RunOptions{NodeTimeout: 100 * time.Millisecond}, plan.ErrNodeTimeout, nil},
		{"DeadlineOnRead", viewer, "HGET", plan.RunOptions{Deadline: 100 * time.Millisecond}, plan.ErrDeadlineExceeded, nil},
		{"NodeTimeoutOnGroup", ioGroupPlan, "LRANGE", plan.RunOptions{NodeTimeout: 100 * time.Millisecond}, plan.ErrNodeTimeout, map[string]int{"src": 1}},
		{"DeadlineOnGroup", ioGroupPlan, "LRANGE", plan.RunOptions{Deadline: 100 * time.Millisecond}, plan.ErrDeadlineExceeded, map[string]int{"src": 1}},
		{"NodeTimeoutOnGroupRest", ioGroupPlan, "HGET", plan.RunOptions{NodeTimeout: 150 * time.Millisecond}, plan.ErrNodeTimeout, map[string]int{"src": 1, "m": 3}},
		{"DeadlineOnGroupRest", ioGroupPlan, "HGET", plan.RunOptions{Deadline: 150 * time.Millisecond}, plan.ErrDeadlineExceeded, map[string]int{"src": 1, "m": 3}},
		// complex_dag (the 10-node example) with a deadline that expires
		// while its follow and recommendation lists are being read (the
		// viewer's country is dead there: it reads nothing and finishes).
		{"ComplexDAGDeadline", complexDAG, "LRANGE", plan.RunOptions{Deadline: 100 * time.Millisecond}, plan.ErrDeadlineExceeded, map[string]int{"v": 1}},
		{"ComplexDAGNodeTimeout", complexDAG, "LRANGE", plan.RunOptions{NodeTimeout: 100 * time.Millisecond}, plan.ErrNodeTimeout, map[string]int{"v": 1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// the proxy sits in front of one server: against a cluster, a
			// server of the test's own holding the same data
			upstream := ""
			var own *testredis.Server
			if testredis.IsCluster() {
				own = testredis.StartServer(t)
				upstream = own.Addr
			}
			if upstream == "" {
				u, err := url.Parse(testredis.URL())
				require.NoError(t, err)
				upstream = u.Host
			}
			p := testredis.NewProxy(t, upstream)
			stalled := p.StallOn(tc.stall)
			b := setup(t, func(c *plan.Config) { c.RedisURL = p.URL() })
			if own != nil {
				_, err := plan.Seed(context.Background(), own.Client(), b.prefix, plan.Demo())
				require.NoError(t, err)
			}
			t.Cleanup(p.Close) // before the engine's Close, which waits for the stalled read
			c := b.compile(t, tc.plan)
			// Connect first, so the stall is on a command, not the handshake.
			require.NoError(t, b.eng.Ping(context.Background(), c))
			opts := tc.opts
			opts.Trace = true
			start := time.Now()
			res, err := b.eng.Run(context.Background(), c, user(1), opts)
			elapsed := time.Since(start)
			require.ErrorIs(t, err, tc.want)
			require.Equal(t, tc.want.Error(), err.Error())
			require.Less(t, elapsed, 900*time.Millisecond, "the limit ends the run, not the 1 s Redis call timeout")
			select {
			case <-stalled:
			default:
				t.Fatal("the run never reached the stalled read")
			}
			done := map[string]int{}
			for _, tr := range res.Trace {
				if tr.Err == "" {
					done[tr.NodeID] = tr.RowsOut
				}
			}
			if tc.finished == nil {
				tc.finished = map[string]int{}
			}
			require.Equal(t, tc.finished, done, "nodes finished before the stall")
		})
	}
}

// busyPlan: fixed_source → busy_cpu (a CPU node spinning for ms).
func busyPlan(ms int) string {
	return `{"schema_version":1,"plan_name":"busy","nodes":[
	 {"node_id":"src","op":"test::fixed_source","inputs":[],"params":{}},
	 {"node_id":"spin","op":"test::busy_cpu","inputs":["src"],"params":{"busy_wait_ms":` + itoa(ms) + `}}],"outputs":["spin"]}`
}

func itoa(n int) string { return strconv.Itoa(n) }

// TestDeadlineDuringCPUNode: the request deadline passing while a CPU node
// runs is that node's timeout, "Node execution timeout" (a CPU node is
// waited for min(deadline, node timeout), as docs/plan.md says), on the pool or inline; during IO it stays "Request deadline
// exceeded" (TestDeadlineTimeoutFailFast, TestTimeoutsDuringRedisReads).
func TestDeadlineDuringCPUNode(t *testing.T) {
	t.Parallel()
	for _, policy := range []string{plan.PolicyPool, plan.PolicyAuto, plan.PolicyInline} {
		t.Run(policy, func(t *testing.T) {
			t.Parallel()
			b := setup(t, func(c *plan.Config) { c.CPUPolicy = policy })
			start := time.Now()
			_, err := b.eng.Run(context.Background(), b.compile(t, busyPlan(30_000)), user(1), plan.RunOptions{Deadline: 50 * time.Millisecond})
			require.ErrorIs(t, err, plan.ErrNodeTimeout)
			require.Equal(t, "Node execution timeout", err.Error())
			require.Less(t, time.Since(start), 10*time.Second)
		})
	}
}

// TestNodeTimeoutCountsPoolWait: a CPU node's timeout starts when it is
// handed to the pool, so the time it waits for a busy worker counts (as in
// the reference, whose timer starts at submission). Two 300 ms CPU nodes on
// one worker: the second waits ~300 ms and runs ~300 ms, past a 450 ms
// timeout; with two workers neither waits and the run succeeds.
func TestNodeTimeoutCountsPoolWait(t *testing.T) {
	t.Parallel()
	const two = `{"schema_version":1,"plan_name":"two","nodes":[
	 {"node_id":"src","op":"test::fixed_source","inputs":[],"params":{}},
	 {"node_id":"a","op":"test::busy_cpu","inputs":["src"],"params":{"busy_wait_ms":300}},
	 {"node_id":"b","op":"test::busy_cpu","inputs":["src"],"params":{"busy_wait_ms":300}},
	 {"node_id":"c","op":"core::concat","inputs":["a"],"params":{"rhs":"b"}}],"outputs":["c"]}`
	opts := plan.RunOptions{NodeTimeout: 450 * time.Millisecond}
	t.Run("OneWorker", func(t *testing.T) {
		t.Parallel()
		b := setup(t, func(c *plan.Config) { c.CPUPolicy, c.CPUWorkers = plan.PolicyPool, 1 })
		_, err := b.eng.Run(context.Background(), b.compile(t, two), user(1), opts)
		require.ErrorIs(t, err, plan.ErrNodeTimeout)
	})
	t.Run("TwoWorkers", func(t *testing.T) {
		t.Parallel()
		b := setup(t, func(c *plan.Config) { c.CPUPolicy, c.CPUWorkers = plan.PolicyPool, 2 })
		res, err := b.eng.Run(context.Background(), b.compile(t, two), user(1), opts)
		require.NoError(t, err)
		require.Equal(t, 2, res.Rows())
	})
}
