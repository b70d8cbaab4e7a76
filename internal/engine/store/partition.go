package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/taskflow/taskflow/internal/engine/redisconn"
)

// MaxPartitions is the most partitions a deployment may have.
const MaxPartitions = 256

// Partitions is the number of partitions the store spreads tasks over
// (Config.Partitions).
func (s *Store) Partitions() int { return len(s.parts) }

// PartitionOf is the partition of task id in a deployment of n
// partitions: a hash of the id (FNV-1a), so any process finds a task's
// keys from its id alone. A task never moves: its hash, queue entries,
// lease, indexes and events stay in this partition.
func PartitionOf(id string, n int) int {
	if n <= 1 {
		return 0
	}
	h := uint32(2166136261)
	for i := 0; i < len(id); i++ {
		h ^= uint32(id[i])
		h *= 16777619
	}
	return int(h % uint32(n))
}

// PartitionOf is the partition of task id in this store's deployment.
func (s *Store) PartitionOf(id string) int { return PartitionOf(id, len(s.parts)) }

// part is the keys of task id's partition.
func (s *Store) part(id string) keys { return s.parts[PartitionOf(id, len(s.parts))] }

// byPartition groups the positions 0..n-1 of a batch by the partition of
// the id at each position, keeping their order within a partition.
func byPartition(n, partitions int, id func(int) string) [][]int {
	groups := make([][]int, partitions)
	for i := 0; i < n; i++ {
		p := PartitionOf(id(i), partitions)
		groups[p] = append(groups[p], i)
	}
	return groups
}

// ErrLayout is wrapped by CheckLayout's refusals.
var ErrLayout = errors.New("deployment layout differs")

// CheckLayout records this store's partition count as the deployment's on
// first use and refuses (ErrLayout) to serve a deployment created with
// another: a process with a different TASKFLOW_PARTITIONS would look for
// tasks where they are not, and its tasks where the others do not look.
// A deployment from before the count was recorded counts as one
// partition. Every process calls it at start (app.Open).
func (s *Store) CheckLayout(ctx context.Context) error {
	want := strconv.Itoa(len(s.parts))
	ok, err := s.rdb.HSetNX(ctx, s.global.meta(), "partitions", want).Result()
	if err != nil {
		return fmt.Errorf("store: check layout: %w", err)
	}
	if ok {
		if len(s.parts) > 1 {
			// a deployment of one partition from before the count was
			// recorded keeps its tasks under {namespace}: refuse rather
			// than lose sight of them
			old := partitionKeys(s.ns, 1)[0]
			n, err := s.rdb.Exists(ctx, old.events(), old.stateIndex("PENDING"), old.stateIndex("COMPLETED"), old.active()).Result()
			if err != nil {
				return fmt.Errorf("store: check layout: %w", err)
			}
			if n > 0 {
				_ = s.rdb.HDel(ctx, s.global.meta(), "partitions").Err()
				return fmt.Errorf("%w: namespace %q holds tasks of a deployment of 1 partition, and this process has TASKFLOW_PARTITIONS=%d: drain it first (docs/guarantees.md, \"Changing the number of partitions\")",
					ErrLayout, s.ns, len(s.parts))
			}
		}
		return nil
	}
	have, err := s.rdb.HGet(ctx, s.global.meta(), "partitions").Result()
	if errors.Is(err, redis.Nil) {
		return s.CheckLayout(ctx) // removed meanwhile
	}
	if err != nil {
		return fmt.Errorf("store: check layout: %w", err)
	}
	if have != want {
		return fmt.Errorf("%w: namespace %q was created with %s partitions, and this process has TASKFLOW_PARTITIONS=%s: start it with %s, or drain the deployment first (docs/guarantees.md, \"Changing the number of partitions\")",
			ErrLayout, s.ns, have, want, have)
	}
	return nil
}

// eachPartition groups the n items of a batch by the partition of each
// one's id and calls fn once per partition that has some, with their
// positions in order: one script call per partition (a script cannot touch
// two partitions' keys). The calls run at once when there are several, so
// a batch over a cluster's shards costs one round trip. It returns the
// errors joined.
func (s *Store) eachPartition(n int, id func(int) string, fn func(p int, k keys, at []int) error) error {
	if len(s.parts) == 1 {
		at := make([]int, n)
		for i := range at {
			at[i] = i
		}
		return fn(0, s.parts[0], at)
	}
	groups := byPartition(n, len(s.parts), id)
	return s.allPartitions(func(p int, k keys) error {
		if len(groups[p]) == 0 {
			return nil
		}
		return fn(p, k, groups[p])
	})
}

// allPartitions calls fn for every partition, at once when there are
// several, and returns the errors joined.
func (s *Store) allPartitions(fn func(p int, k keys) error) error {
	if len(s.parts) == 1 {
		return fn(0, s.parts[0])
	}
	errs := make([]error, len(s.parts))
	var wg sync.WaitGroup
	for p, k := range s.parts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[p] = fn(p, k)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// A partition whose shard stops answering (a master's crash, until its
// replica takes over) would make every fetch across partitions wait out
// the client's retries there. So the first call that finds it gone marks
// it down: fetches leave it out while one goroutine probes it, and the
// mark clears when it answers again (or after downProbeFor, when fetches
// try it themselves once more).
const downProbeFor = 30 * time.Second

// isDown reports whether partition p is marked down.
func (s *Store) isDown(p int) bool { return s.probing[p].Load() }

// downSignal is a context ended when its partition is marked down, and
// replaced by a new one when the mark clears.
type downSignal struct {
	mu     sync.Mutex
	ctx    context.Context
	cancel context.CancelFunc
}

func newDownSignals(n int) []downSignal {
	ds := make([]downSignal, n)
	for i := range ds {
		ds[i].ctx, ds[i].cancel = context.WithCancel(context.Background())
	}
	return ds
}

func (d *downSignal) current() context.Context {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.ctx
}

func (d *downSignal) fire() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.cancel()
}

func (d *downSignal) renew() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.cancel()
	d.ctx, d.cancel = context.WithCancel(context.Background())
}

// onPartition runs a call to partition p's keys: at once ErrPartitionDown
// when p is marked down and another is not (skipDown); otherwise fn with a
// context that ends when p is marked down during the call — by another
// call's failure, or by a refused dial of this one's retries (nodeDown) —
// so a call retrying against a dead master returns at its next retry, not
// after all of the cluster client's (≈ 1.7 s). A failure that says the
// shard is gone marks it.
func (s *Store) onPartition(ctx context.Context, p int, fn func(ctx context.Context) error) error {
	if len(s.parts) == 1 {
		return fn(ctx)
	}
	if err := s.skipDown(p); err != nil {
		return err
	}
	if s.isDown(p) { // every partition is: let Redis answer
		err := fn(ctx)
		s.noteFailure(p, err)
		return err
	}
	cctx, cancel := context.WithCancelCause(ctx)
	stop := context.AfterFunc(s.downs[p].current(), func() { cancel(ErrPartitionDown) })
	err := fn(cctx)
	stop()
	if err != nil && ctx.Err() == nil && errors.Is(context.Cause(cctx), ErrPartitionDown) {
		err = fmt.Errorf("store: partition %d: %w (marked down during the call: %w)", p, ErrPartitionDown, err)
	}
	cancel(nil)
	s.noteFailure(p, err)
	return err
}

// noteFailure marks partition p down when err says its shard is gone.
func (s *Store) noteFailure(p int, err error) {
	if len(s.parts) == 1 || !redisconn.NodeFailed(err) || !s.probing[p].CompareAndSwap(false, true) {
		return
	}
	s.downs[p].fire()
	go func() {
		defer s.probing[p].Store(false)
		defer s.downs[p].renew() // (before the mark clears: a call that sees it clear gets the new one)
		deadline := time.Now().Add(downProbeFor)
		for time.Now().Before(deadline) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			err := s.rdb.Set(ctx, s.parts[p].probe(), "1", 10*time.Second).Err()
			cancel()
			if err == nil || errors.Is(err, redis.ErrClosed) {
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
}

// nodeDown marks down the partitions whose master (as the client's slot
// map has it) is addr, which refused a connection: before a fetch meets
// them and waits out the cluster client's retries (≈ 1.7 s). New has
// redisconn.OnNodeDialFailure call it when there are several partitions.
func (s *Store) nodeDown(addr string, err error) {
	cc, ok := s.rdb.(*redis.ClusterClient)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	for p, k := range s.parts {
		if m, e := cc.MasterForKey(ctx, k.probe()); e == nil && m.Options().Addr == addr {
			s.noteFailure(p, err)
		}
	}
}

// ErrPartitionDown is wrapped by the error of a call to a partition marked
// down (below) while another partition answers: the call is not sent, so
// a submit, acknowledgement, heartbeat or read there fails at once instead
// of after the cluster client's retries (≈ 1.7 s), and nothing is written.
// A call ended in flight when the mark was set (onPartition) wraps it too;
// like any call that fails mid-way, that one may have been applied.
var ErrPartitionDown = errors.New("its shard does not answer (marked down at a failed call, probed until it answers)")

// skipDown is the error for a call to partition p while it is marked down
// and another partition is not, else nil. When every partition is marked
// down, calls go to Redis and its error shows, as with upFirst.
func (s *Store) skipDown(p int) error {
	if !s.isDown(p) || !s.anyUp() { // (p is down: any partition up is another)
		return nil
	}
	return fmt.Errorf("store: partition %d: %w", p, ErrPartitionDown)
}

// readDown is skipDown for a read: over the partitions of ids, or over
// every partition when ids is nil (counts, listings). A read pipeline
// waits for its slowest shard, so a read that needs a partition marked
// down fails at once (a 503) instead of waiting out the client's retries
// there; a read of tasks in the other partitions goes on.
func (s *Store) readDown(ids []string) error {
	if len(s.parts) == 1 {
		return nil
	}
	if ids == nil {
		for p := range s.parts {
			if err := s.skipDown(p); err != nil {
				return err
			}
		}
		return nil
	}
	for _, id := range ids {
		if err := s.skipDown(PartitionOf(id, len(s.parts))); err != nil {
			return err
		}
	}
	return nil
}

// anyUp reports whether some partition is not marked down.
func (s *Store) anyUp() bool {
	for p := range s.parts {
		if !s.isDown(p) {
			return true
		}
	}
	return false
}

// upFirst orders partitions ps with those marked down left out, unless
// all are (then they are all asked, and the error shows).
func (s *Store) upFirst(ps []int) []int {
	out := make([]int, 0, len(ps))
	for _, p := range ps {
		if !s.isDown(p) {
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		return ps
	}
	return out
}
