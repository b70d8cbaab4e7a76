package store

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/internal/engine/keyspace"
	"github.com/taskflow/taskflow/internal/testrig/testredis"
	"github.com/taskflow/taskflow/task"
)

func partitioned(n int) func(*Config) { return func(c *Config) { c.Partitions = n } }

func TestPartitionOfSpreadsIDs(t *testing.T) {
	counts := make([]int, 3)
	for i := range 3000 {
		p := PartitionOf(fmt.Sprintf("task-%d", i), 3)
		require.GreaterOrEqual(t, p, 0)
		require.Less(t, p, 3)
		counts[p]++
	}
	for p, n := range counts {
		require.InDelta(t, 1000, n, 150, "partition %d got %d of 3000", p, n)
	}
	require.Equal(t, 0, PartitionOf("anything", 1))
	require.Equal(t, PartitionOf("x", 7), PartitionOf("x", 7), "stable")
}

func TestPartitionsOneKeepsTheLayout(t *testing.T) {
	b := setup(t)
	tk := b.enqueue(t, EnqueueRequest{})
	n, err := b.rdb.Exists(b.ctx, b.s.Namespace().Key("task", tk.ID)).Result()
	require.NoError(t, err)
	require.EqualValues(t, 1, n, "one partition: keys stay {namespace}:task:<id>")
	require.Equal(t, []string{b.s.Namespace().Key("events")}, b.s.EventStreamKeys())
}

// TestPartitionedLifecycle runs tasks through a deployment of three
// partitions: each task's keys are in its own partition, fetches take
// from all of them, and the listings and counts add the partitions up.
func TestPartitionedLifecycle(t *testing.T) {
	b := setup(t, partitioned(3))
	ns := b.s.Namespace()
	var reqs []EnqueueRequest
	for i := range 60 {
		reqs = append(reqs, EnqueueRequest{Type: "noop", SessionID: "s1", Content: fmt.Sprint(i)})
	}
	created, err := b.s.EnqueueBatch(b.ctx, reqs)
	require.NoError(t, err)
	require.Len(t, created, 60)
	perPart := map[int]int{}
	for i, tk := range created {
		require.Equal(t, fmt.Sprint(i), tk.Content, "answers in request order")
		p := b.s.PartitionOf(tk.ID)
		perPart[p]++
		n, err := b.rdb.Exists(b.ctx, ns.PartitionPrefixes(3)[p]+"task:"+tk.ID).Result()
		require.NoError(t, err)
		require.EqualValues(t, 1, n, "task %s lives in partition %d", tk.ID, p)
	}
	require.Len(t, perPart, 3, "60 random ids fall in all three partitions")
	if cc, ok := b.rdb.(*redis.ClusterClient); ok { // the 3-master test cluster
		masters := map[string]bool{}
		for _, p := range ns.PartitionPrefixes(3) {
			m, err := cc.MasterForKey(b.ctx, p+"x")
			require.NoError(t, err)
			masters[m.Options().Addr] = true
		}
		require.Len(t, masters, 3, "three partitions on three masters")
	}

	qs := b.status(t)
	require.EqualValues(t, 60, qs.Primary)
	require.EqualValues(t, 60, qs.States[task.StatePending])
	ids, total, err := b.s.QueueContents(b.ctx, QueuePrimary, ListOptions{Limit: 1000})
	require.NoError(t, err)
	require.EqualValues(t, 60, total)
	require.ElementsMatch(t, taskIDs(created), ids)

	// fetches go round the partitions until they have what they asked for
	var got []*task.Task
	for len(got) < 60 {
		f := b.fetch(t, 25)
		require.NotEmpty(t, f)
		got = append(got, f...)
	}
	require.ElementsMatch(t, taskIDs(created), taskIDs(got))
	require.Empty(t, b.fetch(t, 5))
	require.EqualValues(t, 60, b.status(t).States[task.StateActive])

	// a batch of completions spans the partitions: one call each
	var cs []Completion
	for _, tk := range got[:50] {
		cs = append(cs, Completion{ID: tk.ID, Token: tk.Lease, Result: []byte(`{"ok":true}`)})
	}
	cs = append(cs, Completion{ID: got[50].ID, Token: "stale"}, Completion{ID: "nope", Token: "x"})
	errs, err := b.s.CompleteBatch(b.ctx, cs)
	require.NoError(t, err)
	for i := range 50 {
		require.NoError(t, errs[i])
	}
	require.ErrorIs(t, errs[50], task.ErrLeaseLost)
	require.ErrorIs(t, errs[51], task.ErrNotFound)

	// heartbeats too
	var leases []Lease
	for _, tk := range got[50:] {
		leases = append(leases, Lease{ID: tk.ID, Token: tk.Lease})
	}
	hr, err := b.s.Heartbeat(b.ctx, append(leases, Lease{ID: got[0].ID, Token: got[0].Lease}), time.Minute)
	require.NoError(t, err)
	require.Equal(t, []string{got[0].ID}, hr.Lost, "the completed one is no longer held")

	// the rest fail for good: the DLQ lists them across partitions, newest first
	for i, tk := range got[50:] {
		b.clk.Advance(time.Millisecond)
		out, err := b.s.Fail(b.ctx, tk.ID, tk.Lease, Failure{ErrorType: "x", Message: fmt.Sprint(i), Permanent: true})
		require.NoError(t, err)
		require.Equal(t, task.StateDLQ, out.State)
	}
	dlq, n, err := b.s.ListDLQ(b.ctx, ListOptions{Limit: 4, Offset: 2})
	require.NoError(t, err)
	require.EqualValues(t, 10, n)
	require.Len(t, dlq, 4)
	for i, e := range dlq {
		require.Equal(t, got[50+7-i].ID, e.Task.ID, "newest first across partitions")
		require.Equal(t, "x", e.Snapshot["error_type"])
	}
	page, err := b.s.ListByState(b.ctx, task.StateCompleted, ListOptions{Limit: 1000})
	require.NoError(t, err)
	require.EqualValues(t, 50, page.Total)
	require.Len(t, page.Tasks, 50)
	qs = b.status(t)
	require.EqualValues(t, 50, qs.States[task.StateCompleted])
	require.EqualValues(t, 10, qs.States[task.StateDLQ])
	require.EqualValues(t, 10, qs.DLQ)

	// retried from the DLQ, each in its own partition
	require.NoError(t, b.s.Retry(b.ctx, got[55].ID))
	require.Equal(t, task.StatePending, b.state(t, got[55].ID))
	// the session's index has an entry per task, in the task's partition
	var inIndex int64
	for _, k := range b.s.SessionTasksKeys("s1") {
		n, err := b.rdb.ZCard(b.ctx, k).Result()
		require.NoError(t, err)
		inIndex += n
	}
	require.EqualValues(t, 60, inIndex)
	require.True(t, strings.HasPrefix(b.s.SessionTasksKeyOf("s1", got[0].ID), ns.PartitionPrefixes(3)[b.s.PartitionOf(got[0].ID)]))
}

func taskIDs(ts []*task.Task) []string { return ids(ts) }

// TestPartitionKeyKeepsTasksTogether: tasks given one partition key share a
// partition and are fetched in the order they were submitted.
func TestPartitionKeyKeepsTasksTogether(t *testing.T) {
	b := setup(t, partitioned(4))
	var want []string
	for i := range 20 {
		tk := b.enqueue(t, EnqueueRequest{PartitionKey: "customer-42", Content: fmt.Sprint(i)})
		require.Equal(t, PartitionOf("customer-42", 4), b.s.PartitionOf(tk.ID))
		want = append(want, tk.ID)
	}
	var got []string
	for len(got) < 20 {
		for _, tk := range b.fetch(t, 3) {
			got = append(got, tk.ID)
		}
	}
	require.Equal(t, want, got, "FIFO within the key's partition")

	// a caller-chosen id must fall in the key's partition
	var other string
	for i := 0; ; i++ {
		if id := fmt.Sprintf("mine-%d", i); PartitionOf(id, 4) != PartitionOf("customer-42", 4) {
			other = id
			break
		}
	}
	_, err := b.s.Enqueue(b.ctx, EnqueueRequest{Type: "noop", ID: other, PartitionKey: "customer-42"})
	var ve *ValidationError
	require.ErrorAs(t, err, &ve)
	require.Equal(t, "partition_key", ve.Field)
	_, err = b.s.Enqueue(b.ctx, EnqueueRequest{Type: "noop", PartitionKey: strings.Repeat("k", 201)})
	require.ErrorAs(t, err, &ve)
	require.Equal(t, "partition_key", ve.Field)
}

// TestPartitionedScheduler: promotion, reaping and purging cover every
// partition.
func TestPartitionedScheduler(t *testing.T) {
	b := setup(t, partitioned(3))
	var delayed []string
	for range 30 {
		delayed = append(delayed, b.enqueue(t, EnqueueRequest{RunAt: t0.Add(time.Minute)}).ID)
	}
	require.EqualValues(t, 30, b.status(t).Scheduled)
	b.clk.Advance(2 * time.Minute)
	n, err := b.s.PromoteDue(b.ctx, 100)
	require.NoError(t, err)
	require.Equal(t, 30, n)
	got := b.fetch(t, 30)
	require.ElementsMatch(t, delayed, ids(got))

	b.clk.Advance(time.Minute) // every lease (30 s) has expired
	reaped, handled, err := b.s.ReapExpired(b.ctx, 100)
	require.NoError(t, err)
	require.Equal(t, 30, handled)
	require.ElementsMatch(t, delayed, reaped)

	got = b.fetch(t, 30)
	var cs []Completion
	for _, tk := range got {
		cs = append(cs, Completion{ID: tk.ID, Token: tk.Lease})
	}
	_, err = b.s.CompleteBatch(b.ctx, cs)
	require.NoError(t, err)
	b.clk.Advance(time.Hour)
	deleted, _, err := b.s.Purge(b.ctx, task.StateCompleted, time.Minute, 100)
	require.NoError(t, err)
	require.Equal(t, 30, deleted)
	require.EqualValues(t, 0, b.status(t).States[task.StateCompleted])
}

// TestPartitionedWaitForWork: a worker blocked on three partitions wakes
// when a task arrives in any of them, and Interrupt ends its wait.
func TestPartitionedWaitForWork(t *testing.T) {
	b := setup(t, partitioned(3))
	for p := range 3 {
		var id string
		for i := 0; ; i++ {
			if id = fmt.Sprintf("w%d-%d", p, i); PartitionOf(id, 3) == p {
				break
			}
		}
		type answer struct {
			ok  bool
			err error
		}
		woke := make(chan answer, 1)
		go func() {
			ok, err := b.s.WaitForWork(b.ctx, fmt.Sprint("worker-", p), 5*time.Second)
			woke <- answer{ok, err}
		}()
		time.Sleep(100 * time.Millisecond) // let it block first
		b.enqueue(t, EnqueueRequest{ID: id})
		a := <-woke
		require.NoError(t, a.err)
		require.True(t, a.ok, "woken by the task in partition %d, not by the timeout", p)
		require.Len(t, b.fetch(t, 10), 1)
	}
	done := make(chan bool, 1)
	go func() {
		ok, _ := b.s.WaitForWork(b.ctx, "worker-b", 5*time.Second)
		done <- ok
	}()
	time.Sleep(100 * time.Millisecond)
	require.NoError(t, b.s.Interrupt(b.ctx, "worker-b"))
	require.True(t, <-done)
}

// TestCheckLayout: a deployment keeps the partition count it was created
// with; a process with another is refused with a message that says what to
// do, and tasks of an unrecorded one-partition layout are never hidden.
func TestCheckLayout(t *testing.T) {
	rdb, ns := testredis.Client(t)
	ctx := context.Background()
	open := func(n int) *Store {
		s, err := New(rdb, Config{Namespace: ns, Partitions: n})
		require.NoError(t, err)
		return s
	}
	require.NoError(t, open(3).CheckLayout(ctx))
	require.NoError(t, open(3).CheckLayout(ctx), "the same count again")
	err := open(1).CheckLayout(ctx)
	require.ErrorIs(t, err, ErrLayout)
	require.Contains(t, err.Error(), "created with 3 partitions")
	require.ErrorIs(t, open(2).CheckLayout(ctx), ErrLayout)

	// a one-partition deployment from before the count was recorded
	rdb2, ns2 := testredis.Client(t)
	old, err := New(rdb2, Config{Namespace: ns2})
	require.NoError(t, err)
	_, err = old.Enqueue(ctx, EnqueueRequest{Type: "noop"})
	require.NoError(t, err)
	s3, err := New(rdb2, Config{Namespace: ns2, Partitions: 3})
	require.NoError(t, err)
	err = s3.CheckLayout(ctx)
	require.ErrorIs(t, err, ErrLayout)
	require.Contains(t, err.Error(), "holds tasks of a deployment of 1 partition")
	require.NoError(t, old.CheckLayout(ctx), "the old layout still starts")
	require.ErrorIs(t, s3.CheckLayout(ctx), ErrLayout)
	has, err := rdb2.HGet(ctx, keyspace.MustParse(ns2).Key("meta"), "partitions").Result()
	require.NoError(t, err)
	require.Equal(t, "1", has)
	_, err = rdb2.HGet(ctx, keyspace.MustParse(ns).Key("meta"), "nothing").Result()
	require.True(t, errors.Is(err, redis.Nil))
}

func TestPartitionsValidated(t *testing.T) {
	rdb, ns := testredis.Client(t)
	for _, n := range []int{-1, MaxPartitions + 1} {
		_, err := New(rdb, Config{Namespace: ns, Partitions: n})
		require.ErrorContains(t, err, "Partitions")
	}
	_, err := keyspace.Parse("deploy:p3")
	require.ErrorIs(t, err, keyspace.ErrInvalid, "a name that ends like a partition's tag")
}

// TestPartitionedFetchShares: a fetch asks the partitions for shares that
// add up to what it wants, so it never takes more, and a single waiting
// task is found by one fetch of one, whichever partition holds it.
func TestPartitionedFetchShares(t *testing.T) {
	b := setup(t, partitioned(4))
	for p := range 4 {
		for range 3 { // wherever the turn starts
			var id string
			for i := 0; ; i++ {
				if id = fmt.Sprintf("one-%d-%d-%d", p, i, time.Now().UnixNano()); PartitionOf(id, 4) == p {
					break
				}
			}
			b.enqueue(t, EnqueueRequest{ID: id})
			got := b.fetch(t, 1)
			require.Len(t, got, 1, "the task in partition %d", p)
			require.Equal(t, id, got[0].ID)
		}
	}
	for range 10 {
		b.enqueue(t, EnqueueRequest{})
	}
	require.Len(t, b.fetch(t, 4), 4, "never more than asked")
	require.Len(t, b.fetch(t, 3), 3)
	require.Len(t, b.fetch(t, 5), 3, "what is left")
}

// TestPartitionMarkedDown: while one partition is marked down (its shard
// refused a connection; partition.go) and the others are not, a call that
// must go there fails at once with ErrPartitionDown and writes nothing; a
// task with neither id nor partition key goes to a partition that is up;
// what concerns the other partitions is done. With every partition
// marked, calls go to Redis again. (The mark is set here by hand: the
// cluster test worker.TestPartitionedClusterMasterCrash kills a master.)
func TestPartitionMarkedDown(t *testing.T) {
	b := setup(t, partitioned(3))
	idIn := func(p int, tag string) string {
		for i := 0; ; i++ {
			if id := fmt.Sprintf("%s-%d", tag, i); PartitionOf(id, 3) == p {
				return id
			}
		}
	}
	// a task in partition 0 and one in 1, both ACTIVE
	in0, in1 := idIn(0, "d"), idIn(1, "d")
	b.enqueue(t, EnqueueRequest{ID: in0})
	b.enqueue(t, EnqueueRequest{ID: in1})
	got := b.fetch(t, 2)
	require.Len(t, got, 2)
	lease := map[string]string{}
	for _, tk := range got {
		lease[tk.ID] = tk.Lease
	}

	b.s.probing[0].Store(true)
	t.Cleanup(func() { b.s.probing[0].Store(false) })

	// pinned there by id or by key: refused, nothing written
	id := idIn(0, "new")
	_, err := b.s.Enqueue(b.ctx, EnqueueRequest{ID: id, Type: "noop"})
	require.ErrorIs(t, err, ErrPartitionDown)
	n, err := b.rdb.Exists(b.ctx, b.s.part(id).task(id)).Result()
	require.NoError(t, err)
	require.Zero(t, n, "nothing written")
	key := "k"
	for PartitionOf(key, 3) != 0 {
		key += "k"
	}
	_, err = b.s.Enqueue(b.ctx, EnqueueRequest{Type: "noop", PartitionKey: key})
	require.ErrorIs(t, err, ErrPartitionDown)

	// neither id nor key: never partition 0 while it is marked
	var reqs []EnqueueRequest
	for range 60 {
		reqs = append(reqs, EnqueueRequest{Type: "noop"})
	}
	created, err := b.s.EnqueueBatch(b.ctx, reqs)
	require.NoError(t, err)
	seen := map[int]int{}
	for _, tk := range created {
		seen[PartitionOf(tk.ID, 3)]++
	}
	require.Zero(t, seen[0], "no keyless task went to the partition marked down: %v", seen)
	require.Positive(t, seen[1])
	require.Positive(t, seen[2])

	// a heartbeat extends partition 1's lease and says partition 0 failed
	hr, err := b.s.Heartbeat(b.ctx, []Lease{{ID: in0, Token: lease[in0]}, {ID: in1, Token: lease[in1]}}, time.Hour)
	require.ErrorIs(t, err, ErrPartitionDown)
	require.Equal(t, 1, hr.Answered)
	require.Empty(t, hr.Lost)
	dl, err := b.rdb.ZScore(b.ctx, b.s.part(in1).active(), in1).Result()
	require.NoError(t, err)
	require.Greater(t, dl, float64(b.s.nowMS()+(50*time.Minute).Milliseconds()), "partition 1's lease extended")
	dl, err = b.rdb.ZScore(b.ctx, b.s.part(in0).active(), in0).Result()
	require.NoError(t, err)
	require.Less(t, dl, float64(b.s.nowMS()+(50*time.Minute).Milliseconds()), "partition 0's lease not touched")

	// acknowledgements: partition 1's applied, partition 0's to write again
	errs, err := b.s.CompleteBatch(b.ctx, []Completion{{ID: in0, Token: lease[in0], Result: []byte(`1`)}, {ID: in1, Token: lease[in1], Result: []byte(`1`)}})
	require.NoError(t, err)
	require.ErrorIs(t, errs[0], ErrUnapplied)
	require.ErrorIs(t, errs[0], ErrPartitionDown)
	require.NoError(t, errs[1])
	st0, err := b.rdb.HGet(b.ctx, b.s.part(in0).task(in0), "state").Result() // (the store does not read there now)
	require.NoError(t, err)
	require.Equal(t, "ACTIVE", st0)
	require.Equal(t, task.StateCompleted, b.state(t, in1))

	// reads: a task of partition 1 is read, one of partition 0 is not
	// (at once); counts and listings need every partition
	tk, err := b.s.Get(b.ctx, in1)
	require.NoError(t, err)
	require.Equal(t, task.StateCompleted, tk.State)
	_, err = b.s.Get(b.ctx, in0)
	require.ErrorIs(t, err, ErrPartitionDown)
	_, err = b.s.GetMany(b.ctx, []string{in1, in0})
	require.ErrorIs(t, err, ErrPartitionDown)
	_, err = b.s.GetHeads(b.ctx, []string{in0})
	require.ErrorIs(t, err, ErrPartitionDown)
	_, err = b.s.QueueStatus(b.ctx)
	require.ErrorIs(t, err, ErrPartitionDown)
	_, _, err = b.s.StateIndex(b.ctx, task.StateCompleted, ListOptions{})
	require.ErrorIs(t, err, ErrPartitionDown)
	_, _, err = b.s.QueueContents(b.ctx, QueuePrimary, ListOptions{})
	require.ErrorIs(t, err, ErrPartitionDown)

	// every partition marked: calls go to Redis (which answers here)
	b.s.probing[1].Store(true)
	b.s.probing[2].Store(true)
	t.Cleanup(func() { b.s.probing[1].Store(false); b.s.probing[2].Store(false) })
	_, err = b.s.Enqueue(b.ctx, EnqueueRequest{ID: id, Type: "noop"})
	require.NoError(t, err)
	errs, err = b.s.CompleteBatch(b.ctx, []Completion{{ID: in0, Token: lease[in0], Result: []byte(`1`)}})
	require.NoError(t, err)
	require.NoError(t, errs[0])
	require.Equal(t, task.StateCompleted, b.state(t, in0))
	qs, err := b.s.QueueStatus(b.ctx)
	require.NoError(t, err)
	require.EqualValues(t, 2, qs.States[task.StateCompleted])
}

// TestPartitionCallEndsWhenMarkedDown: a call in flight to a partition
// (one retrying against a dead master, in a cluster) ends with
// ErrPartitionDown when the partition is marked down meanwhile, instead
// of running out the client's retries; the other partitions' calls do not.
func TestPartitionCallEndsWhenMarkedDown(t *testing.T) {
	b := setup(t, partitioned(3))
	release := make(chan struct{})
	// call runs a call to partition p that lasts until its context ends
	// (its error) or release is closed (nil); it returns once the call
	// has started
	call := func(p int) <-chan error {
		started, done := make(chan struct{}), make(chan error, 1)
		go func() {
			done <- b.s.onPartition(b.ctx, p, func(ctx context.Context) error {
				close(started)
				select {
				case <-ctx.Done():
					return ctx.Err()
				case <-release:
					return nil
				}
			})
		}()
		<-started
		return done
	}
	inFlight, other := call(0), call(1)
	// what a refused dial says (redisconn.NodeFailed)
	b.s.noteFailure(0, &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connect: connection refused")})
	var err error
	select {
	case err = <-inFlight:
	case <-time.After(10 * time.Second): // (a hang guard: it ends at once)
		close(release)
		t.Fatal("the call to partition 0 did not end when the partition was marked down")
	}
	require.ErrorIs(t, err, ErrPartitionDown)
	require.ErrorIs(t, err, context.Canceled, "the call's own error stays in the chain")
	close(release)
	require.NoError(t, <-other, "partition 1's call is not ended")
	// the probe finds partition 0 answering (this Redis is up): the mark
	// clears and calls there run again
	require.Eventually(t, func() bool { return !b.s.isDown(0) }, 5*time.Second, 5*time.Millisecond)
	require.NoError(t, b.s.onPartition(b.ctx, 0, func(ctx context.Context) error { return ctx.Err() }))
}
