package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/redis/go-redis/v9"
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
func (s *Store) eachPartition(n int, id func(int) string, fn func(k keys, at []int) error) error {
	if len(s.parts) == 1 {
		at := make([]int, n)
		for i := range at {
			at[i] = i
		}
		return fn(s.parts[0], at)
	}
	groups := byPartition(n, len(s.parts), id)
	return s.allPartitions(func(p int, k keys) error {
		if len(groups[p]) == 0 {
			return nil
		}
		return fn(k, groups[p])
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
