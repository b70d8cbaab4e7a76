package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/internal/engine/keyspace"
	"github.com/taskflow/taskflow/internal/engine/redisconn"
	"github.com/taskflow/taskflow/internal/engine/store"
	"github.com/taskflow/taskflow/internal/testrig/testredis"
	"github.com/taskflow/taskflow/internal/testrig/testwait"
	"github.com/taskflow/taskflow/task"
)

// TestPartitionedClusterMasterCrash: a deployment of three partitions on a
// cluster of three masters with a replica each, run as a partitioned
// deployment should be (cluster-require-full-coverage no: a master goes on
// serving its slots while another's are uncovered; with the default, yes,
// every master refuses every command from when it marks the cluster failed
// until the replica has taken over). The master holding partition 0 is
// killed; until its replica takes over (after the node timeout), the other
// two partitions go on: tasks submitted to them are acknowledged and
// completed by the same workers before partition 0 answers again (fetches
// and idle waits leave a partition whose shard is gone out until it
// answers). Afterwards every task, partition 0's included, completes,
// none twice.
func TestPartitionedClusterMasterCrash(t *testing.T) {
	t.Parallel()
	cl := testredis.StartClusterWithReplicas(t, 1, "--cluster-require-full-coverage", "no")
	ctx := context.Background()
	rdb, err := redisconn.Open(ctx, cl.URL(), redisconn.Options{PoolSize: 64})
	require.NoError(t, err)
	t.Cleanup(func() { _ = rdb.Close() })
	cc := rdb.(*redis.ClusterClient)
	const ns = "partcrash"
	st, err := store.New(rdb, store.Config{Namespace: ns, Partitions: 3})
	require.NoError(t, err)
	prefixes := keyspace.MustParse(ns).PartitionPrefixes(3)
	masters := map[string]bool{}
	for _, p := range prefixes {
		m, err := cc.MasterForKey(ctx, p+"x")
		require.NoError(t, err)
		masters[m.Options().Addr] = true
	}
	require.Len(t, masters, 3, "one partition per master")
	m0, err := cc.MasterForKey(ctx, prefixes[0]+"x")
	require.NoError(t, err)
	master0 := m0.Options().Addr
	replica0 := replicaOf(t, cl, master0)

	var runs runCounter
	mux := NewMux()
	mux.HandleFunc("pc", func(ctx context.Context, tk *task.Task) (json.RawMessage, error) {
		runs.add(tk.ID)
		return json.RawMessage(`1`), nil
	})
	// tasks running on partition 0 when its master dies: they end after
	// the kill, so their acknowledgements meet the dead shard
	killed := make(chan struct{})
	var slowStarted sync.WaitGroup
	mux.HandleFunc("pcslow", func(ctx context.Context, tk *task.Task) (json.RawMessage, error) {
		if runs.get(tk.ID) == 0 {
			slowStarted.Done()
		}
		runs.add(tk.ID)
		<-killed
		return json.RawMessage(`1`), nil
	})
	// (a lease longer than the failover: an acknowledgement written
	// aside lands after it, rather than the task running again)
	runFailoverEngine(t, st, mux, Config{Concurrency: 8, Lease: 15 * time.Second, HeartbeatInterval: 300 * time.Millisecond,
		IdleWait: time.Second})

	// ids of a partition, drawn in order
	next := 0
	idsIn := func(part, n int) []string {
		var out []string
		for len(out) < n {
			id := fmt.Sprintf("pc%06d", next)
			next++
			if store.PartitionOf(id, 3) == part {
				out = append(out, id)
			}
		}
		return out
	}
	submit := func(ids []string) error {
		reqs := make([]store.EnqueueRequest, len(ids))
		for i, id := range ids {
			reqs[i] = store.EnqueueRequest{ID: id, Type: "pc"}
		}
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		_, err := st.EnqueueBatch(cctx, reqs)
		return err
	}
	completed := func(ids []string) int {
		ts, err := st.GetMany(ctx, ids)
		if err != nil {
			return -1
		}
		n := 0
		for _, tk := range ts {
			if tk.State == task.StateCompleted {
				n++
			}
		}
		return n
	}
	before := append(append(idsIn(0, 100), idsIn(1, 100)...), idsIn(2, 100)...)
	require.NoError(t, submit(before))
	require.Eventually(t, func() bool { return completed(before) == len(before) }, 30*time.Second, 50*time.Millisecond)

	slow := idsIn(0, 4)
	slowReqs := make([]store.EnqueueRequest, len(slow))
	for i, id := range slow {
		slowReqs[i] = store.EnqueueRequest{ID: id, Type: "pcslow"}
	}
	slowStarted.Add(len(slow))
	_, err = st.EnqueueBatch(ctx, slowReqs)
	require.NoError(t, err)
	slowStarted.Wait()

	// partition 0's replica has every write so far. Replication is
	// asynchronous: under load a replica promoted right after the kill
	// may lack writes acknowledged a moment before it — within the bound
	// docs/guarantees.md states and TestClusterFailover measures, not
	// this test's subject. (A make test run on 2026-11-26 ended with 100
	// of the 700 tasks missing and every other one COMPLETED: partition
	// 0's first batch, absent on the promoted replica; the CI failure of
	// stop 20, the last wait running out, fits the same.)
	var wait *redis.Cmd
	_, err = cl.Node(master0).Client().Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, prefixes[0]+"synced", "1", time.Minute) // (WAIT counts this connection's writes)
		wait = p.Do(ctx, "WAIT", 1, 10000)
		return nil
	})
	require.NoError(t, err)
	require.EqualValues(t, 1, wait.Val(), "partition 0's replica acknowledged every write before the kill")

	// partition 0's master dies
	cl.Node(master0).Stop()
	killedAt := time.Now()
	close(killed) // partition 0's running tasks end now
	require.Error(t, submit(idsIn(0, 1)), "partition 0 does not answer right after its master died")
	failedAfter := time.Since(killedAt)
	// it is marked down now: the next submit there is refused without
	// waiting for the client's retries
	t1 := time.Now()
	require.ErrorIs(t, submit(idsIn(0, 1)), store.ErrPartitionDown)
	refusedIn := time.Since(t1)
	others := append(idsIn(1, 100), idsIn(2, 100)...)
	t0 := time.Now()
	require.NoError(t, submit(others), "the other partitions take submits meanwhile")
	took, acked := time.Since(t0), time.Since(killedAt)
	// tasks with neither id nor partition key go to the partitions up
	keyless := make([]store.EnqueueRequest, 100)
	for i := range keyless {
		keyless[i] = store.EnqueueRequest{Type: "pc"}
	}
	created, err := st.EnqueueBatch(ctx, keyless)
	require.NoError(t, err, "a keyless batch is placed on the partitions that answer")
	for _, tk := range created {
		require.NotZero(t, store.PartitionOf(tk.ID, 3), "keyless task %s placed in the partition down", tk.ID)
		others = append(others, tk.ID)
	}
	// counts need every partition: a 503 at once, not after the retries
	_, err = st.QueueStatus(ctx)
	require.ErrorIs(t, err, store.ErrPartitionDown)
	// partition 0 answers again once the replica took over: its first
	// write marks that
	var back time.Duration
	recovered := make(chan struct{})
	go func() {
		defer close(recovered)
		for time.Since(killedAt) < 60*time.Second {
			cctx, cancel := context.WithTimeout(ctx, time.Second)
			err := rdb.Set(cctx, prefixes[0]+"probe-back", "1", time.Minute).Err()
			cancel()
			if err == nil {
				back = time.Since(killedAt)
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	var othersDone, othersFirst time.Duration
	require.Eventually(t, func() bool {
		c := completed(others)
		if c > 0 && othersFirst == 0 {
			othersFirst = time.Since(killedAt)
		}
		if c == len(others) {
			othersDone = time.Since(killedAt)
			return true
		}
		return false
	}, 60*time.Second, 20*time.Millisecond)
	<-recovered
	require.NotZero(t, back, "partition 0 never answered again")
	require.Less(t, acked, back, "the other partitions acknowledged submits while partition 0 was down (acknowledged %s, partition 0 back %s)", acked, back)
	require.Less(t, othersDone, back, "the other partitions' tasks completed while partition 0 was down (completed %s, partition 0 back %s)", othersDone, back)

	// after the failover: partition 0 works again, and nothing ran twice
	waitRole(t, replica0, "master")
	after := idsIn(0, 100)
	// (refused with ErrPartitionDown until the store's own probe finds
	// the new master — a client retries a 503)
	promoted := time.Now()
	var lastErr error
	require.Eventually(t, func() bool {
		lastErr = submit(after)
		return lastErr == nil || !errors.Is(lastErr, store.ErrPartitionDown)
	}, 30*time.Second, 20*time.Millisecond)
	require.NoError(t, lastErr)
	t.Logf("partition 0 took submits again %s after its replica became master", time.Since(promoted).Round(time.Millisecond))
	require.Eventually(t, func() bool { return completed(after) == len(after) }, 60*time.Second, 50*time.Millisecond)
	all := append(append(append(before, slow...), others...), after...)
	// (60 s: a completion the old master acknowledged and had not yet
	// replicated runs again after its lease)
	testwait.Until(t, 60*time.Second, 50*time.Millisecond, func() bool { return completed(all) == len(all) }, func() string {
		ts, err := st.GetMany(ctx, all)
		states := map[task.State]int{}
		for _, tk := range ts {
			states[tk.State]++
		}
		var stuck []string
		for _, tk := range ts {
			if tk.State != task.StateCompleted && len(stuck) < 3 {
				stuck = append(stuck, fmt.Sprintf("%s %s (partition %d) %+v", tk.ID, tk.State, store.PartitionOf(tk.ID, 3), tk.StateHistory))
			}
		}
		// which are missing: their group, partition, and whether any
		// node of the cluster holds the key
		found := map[string]bool{}
		for _, tk := range ts {
			found[tk.ID] = true
		}
		group := func(id string) string {
			for _, g := range []struct {
				name string
				ids  []string
			}{{"before", before}, {"others", others}, {"after", after}} {
				if slices.Contains(g.ids, id) {
					return g.name
				}
			}
			return "?"
		}
		missing := map[string]int{}
		var example string
		for _, id := range all {
			if !found[id] {
				missing[fmt.Sprintf("%s/p%d", group(id), store.PartitionOf(id, 3))]++
				if example == "" {
					example = id
				}
			}
		}
		if example != "" {
			key := prefixes[store.PartitionOf(example, 3)] + "task:" + example
			for _, node := range cl.Nodes {
				addr := node.Addr
				n, err := cl.Node(addr).Client().Exists(ctx, key).Result()
				role, _ := cl.Node(addr).Client().Do(ctx, "ROLE").Slice()
				r := ""
				if len(role) > 0 {
					r = fmt.Sprint(role[0])
				}
				example += fmt.Sprintf(" [%s %s: exists %d %v]", addr, r, n, err)
			}
		}
		return fmt.Sprintf("not every task completed within 60 s of the failover: %d of %d found (%v), states %v; %v; missing by group/partition %v, e.g. %s", len(ts), len(all), err, states, stuck, missing, example)
	})
	ts, err := st.GetMany(ctx, all)
	require.NoError(t, err)
	again := completedOnce(t, ts, &runs).ranAgain
	for _, id := range slow {
		require.Equal(t, 1, runs.get(id), "task %s was running on partition 0 when its master died: its acknowledgement, written aside until the failover, landed, and it did not run again", id)
	}
	t.Logf("partition 0's master killed: a submit to it failed after %s, the next refused in %s; the other partitions' 200 submits answered in %s (at %s), 100 keyless placed there, all completed from %s to %s; partition 0 answered again at %s; %d of %d tasks run more than once (the %d running on partition 0 at the kill: once)",
		failedAfter.Round(time.Millisecond), refusedIn.Round(time.Microsecond), took.Round(time.Millisecond), acked.Round(time.Millisecond), othersFirst.Round(time.Millisecond), othersDone.Round(time.Millisecond),
		back.Round(time.Millisecond), again, len(all), len(slow))
}
