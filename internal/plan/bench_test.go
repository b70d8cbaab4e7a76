package plan_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/taskflow/taskflow/internal/plan"
)

// BenchmarkHandoff measures what handing a unit of work to another
// goroutine costs against calling it: open question 1. "pool"
// is what the engine does for an offloaded CPU node (a goroutine that
// takes a slot of a bounded pool and signals completion).
func BenchmarkHandoff(b *testing.B) {
	work := func() {}
	b.Run("Inline", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			work()
		}
	})
	b.Run("Goroutine", func(b *testing.B) {
		b.ReportAllocs()
		done := make(chan struct{})
		for b.Loop() {
			go func() { work(); done <- struct{}{} }()
			<-done
		}
	})
	b.Run("Pool", func(b *testing.B) {
		b.ReportAllocs()
		pool := make(chan struct{}, runtime.GOMAXPROCS(0))
		done := make(chan struct{})
		for b.Loop() {
			go func() {
				pool <- struct{}{}
				work()
				<-pool
				done <- struct{}{}
			}()
			<-done
		}
	})
}

// chainPlan is fixed_source(rows) followed by n take nodes: CPU nodes
// that do almost nothing, so the run time is scheduling overhead.
func chainPlan(rows, n int) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, `{"schema_version":1,"plan_name":"chain","nodes":[{"node_id":"n0","op":"test::fixed_source","inputs":[],"params":{"row_count":%d}}`, rows)
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&sb, `,{"node_id":"n%d","op":"core::sort","inputs":["n%d"],"params":{"by":1}}`, i, i-1)
	}
	fmt.Fprintf(&sb, `],"outputs":["n%d"]}`, n)
	return sb.String()
}

// BenchmarkSchedulingOverhead: a 1 + 20 node chain of near-free CPU nodes
// (sort of one row); ns/op ÷ 21 is the per-node cost of each policy.
func BenchmarkSchedulingOverhead(b *testing.B) {
	for _, pol := range []struct {
		name   string
		policy string
		rows   int
	}{{"Auto", plan.PolicyAuto, 0}, {"AutoNoSizeThreshold", plan.PolicyAuto, -1}, {"Pool", plan.PolicyPool, 0}, {"Inline", plan.PolicyInline, 0}} {
		b.Run(pol.name, func(b *testing.B) {
			eng, err := plan.New(plan.Config{CPUPolicy: pol.policy, InlineMaxRows: pol.rows})
			if err != nil {
				b.Fatal(err)
			}
			defer eng.Close()
			c := compileBench(b, eng, chainPlan(1, 20))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := eng.Run(context.Background(), c, user(1), plan.RunOptions{}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/21, "ns/node")
		})
	}
}

// forkPlan: fixed_source(rows) → two independent vm + sort branches →
// concat → take 10. The two branches can use both cores only when
// handed to the pool; inline they run one after the other.
func forkPlan(rows int) string {
	return fmt.Sprintf(`{"schema_version":1,"plan_name":"fork","nodes":[
	 {"node_id":"s","op":"test::fixed_source","inputs":[],"params":{"row_count":%d}},
	 {"node_id":"a","op":"core::vm","inputs":["s"],"params":{"expr_id":"e","out_key":2001}},
	 {"node_id":"b","op":"core::vm","inputs":["s"],"params":{"expr_id":"e","out_key":2002}},
	 {"node_id":"sa","op":"core::sort","inputs":["a"],"params":{"by":2001,"order":"desc"}},
	 {"node_id":"sb","op":"core::sort","inputs":["b"],"params":{"by":2002,"order":"desc"}},
	 {"node_id":"c","op":"core::concat","inputs":["sa"],"params":{"rhs":"sb"}},
	 {"node_id":"t","op":"core::take","inputs":["c"],"params":{"count":10}}],"outputs":["t"],
	 "expr_table":{"e":{"op":"mul","a":{"op":"key_ref","key_id":1},"b":{"op":"neg","x":{"op":"const_number","value":0.5}}}}}`, rows)
}

// BenchmarkOffloadThreshold answers open question 2: from which
// input size does handing CPU nodes to the pool pay? Pool (parallel
// branches, a hand-off per node) against Inline (no hand-off, branches in
// sequence) for growing inputs.
func BenchmarkOffloadThreshold(b *testing.B) {
	for _, rows := range []int{10, 100, 1000, 4096, 10000, 100000} {
		for _, pol := range []string{plan.PolicyInline, plan.PolicyPool} {
			b.Run(fmt.Sprintf("Rows%d/%s", rows, pol), func(b *testing.B) {
				eng, err := plan.New(plan.Config{CPUPolicy: pol})
				if err != nil {
					b.Fatal(err)
				}
				defer eng.Close()
				c := compileBench(b, eng, forkPlan(rows))
				b.ReportAllocs()
				for b.Loop() {
					if _, err := eng.Run(context.Background(), c, user(1), plan.RunOptions{}); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkExprEval: the compiled vm expression of the examples per row.
func BenchmarkExprEval(b *testing.B) {
	eng, err := plan.New(plan.Config{CPUPolicy: plan.PolicyInline})
	if err != nil {
		b.Fatal(err)
	}
	defer eng.Close()
	const rows = 100000
	c := compileBench(b, eng, fmt.Sprintf(`{"schema_version":1,"plan_name":"vm","nodes":[
	 {"node_id":"s","op":"test::fixed_source","inputs":[],"params":{"row_count":%d}},
	 {"node_id":"v","op":"core::vm","inputs":["s"],"params":{"expr_id":"e","out_key":2002}}],"outputs":["v"],
	 "expr_table":{"e":{"op":"mul","a":{"op":"key_ref","key_id":1},"b":{"op":"coalesce","a":{"op":"param_ref","param_id":4},"b":{"op":"const_number","value":0.1}}}}}`, rows))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := eng.Run(context.Background(), c, user(1), plan.RunOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/rows, "ns/row")
}

func compileBench(b *testing.B, eng *plan.Engine, src string) *plan.Compiled {
	b.Helper()
	p, err := plan.Parse([]byte(src), "bench")
	if err != nil {
		b.Fatal(err)
	}
	c, err := eng.Compile(p)
	if err != nil {
		b.Fatal(err)
	}
	return c
}

// BenchmarkPlans runs the benchmark plans against the shared Redis with 1
// and 4 plans in flight; rtt_us is one measured PING round trip and
// bound_us the critical-path bound (dependent round trips × rtt).
func BenchmarkPlans(b *testing.B) {
	bd := setup(b)
	for _, name := range []string{"complex_dag", "ranked_follows", "one_node"} {
		c := bd.load(b, name)
		for _, conc := range []int{1, 4} {
			b.Run(fmt.Sprintf("%s/C%d", name, conc), func(b *testing.B) {
				res, err := bd.eng.Run(context.Background(), c, user(1), plan.RunOptions{})
				if err != nil {
					b.Fatal(err)
				}
				ep := c.Endpoints[0]
				rtt, err := bd.eng.RTT(context.Background(), ep, 200)
				if err != nil {
					b.Fatal(err)
				}
				b.ReportAllocs()
				b.ResetTimer()
				var wg sync.WaitGroup
				per := make(chan struct{}, b.N)
				for i := 0; i < b.N; i++ {
					per <- struct{}{}
				}
				close(per)
				for w := 0; w < conc; w++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for range per {
							if _, err := bd.eng.Run(context.Background(), c, user(1), plan.RunOptions{}); err != nil {
								b.Error(err)
								return
							}
						}
					}()
				}
				wg.Wait()
				b.StopTimer()
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "plans/s")
				b.ReportMetric(float64(res.CriticalRoundTrips), "round_trips")
				b.ReportMetric(float64(rtt.Microseconds()), "rtt_us")
				b.ReportMetric(float64(res.CriticalRoundTrips)*float64(rtt.Nanoseconds())/1000, "bound_us")
			})
		}
	}
}
