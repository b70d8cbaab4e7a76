package store

import (
	"errors"
	"fmt"
	"time"

	"github.com/taskflow/taskflow/internal/engine/keyspace"

	"github.com/taskflow/taskflow/internal/engine/clock"
)

// Config configures a Store. The zero value plus WithDefaults is usable;
// names in parentheses are Settings.
type Config struct {
	// Namespace is the deployment's namespace (keyspace.Parse's rules):
	// every key is "{Namespace}:...", one Redis Cluster hash tag. Required:
	// the one default is the configuration's (TASKFLOW_NAMESPACE).
	Namespace string
	// Partitions (TASKFLOW_PARTITIONS) splits the deployment's tasks into
	// this many partitions, each under its own hash tag ("{Namespace:p0}:"
	// …), so a Redis Cluster places them on different shards. Default 1:
	// one partition whose keys are "{Namespace}:..." as before partitions
	// existed. At most MaxPartitions. A deployment keeps the count it was
	// created with (CheckLayout).
	Partitions int
	// Clock gives "now" to every transition. Default clock.Real{}.
	Clock clock.Clock
	// DefaultMaxRetries (MAX_RETRIES) applies when a task sets none.
	// nil: 3. 0 means no retries. (Optional fields are pointers: nil is
	// unset, so 0 can mean 0; build them with new(value).)
	DefaultMaxRetries *int
	// MaxTaskAge (MAX_TASK_AGE): a PENDING task older than this at pickup,
	// or a FAILED one when its retry is due, goes to the DLQ. nil: 1h;
	// 0 turns the rule off.
	MaxTaskAge *time.Duration
	// RetryRatio (DEFAULT_RETRY_RATIO): share of fetches served from the
	// retry queue first while it holds fewer than RetryQueueWarning tasks.
	// nil: 0.3. For this and the two ratios below 0 means the retry queue
	// is served only when the primary queues are empty.
	RetryRatio *float64
	// RetryRatioWarning: the share between RetryQueueWarning and
	// RetryQueueCritical tasks. nil: 0.2.
	RetryRatioWarning *float64
	// RetryRatioCritical: the share above RetryQueueCritical. nil: 0.1.
	RetryRatioCritical *float64
	// RetryQueueWarning (RETRY_QUEUE_WARNING). Default 1000.
	RetryQueueWarning int
	// RetryQueueCritical (RETRY_QUEUE_CRITICAL). Default 5000.
	RetryQueueCritical int
	// PriorityWeights are the shares of high, normal and low priority in
	// what is fetched from the primary queues when all three hold tasks.
	// Default {6, 3, 1}.
	PriorityWeights [3]int
	// EventStreamMaxLen caps the lifecycle event stream (approximate
	// MAXLEN, in stream entries; one entry holds the events of one script
	// call: up to FetchBatch/AckBatch events from workers, up to
	// EnqueueChunk from a batch enqueue). Default 10000 (≈ 45 MB of
	// worker batches of 64).
	EventStreamMaxLen int64
	// EnqueueChunk is the most tasks one enqueue script call writes; a
	// larger batch is split (each chunk is atomic). Default 500.
	EnqueueChunk int
	// SessionIndexTTL is how long a session's task index
	// (SessionTasksKey) lives after the session's latest task: the enqueue
	// script adds each task that has a session to it, in the same call
	// that creates the task. Set it to the sessions' TTL. Default 24h.
	SessionIndexTTL time.Duration
	// UniqueHold is how long past its run time a unique key's record
	// (EnqueueRequest.UniqueKey) lives at least; while it lives and its
	// task is unfinished, a submit with the key answers that task. A
	// submit that finds the holder still unfinished extends it again.
	// Default 7 days.
	UniqueHold time.Duration
}

// WithDefaults returns c with every unset field set to its default.
func (c Config) WithDefaults() Config {
	if c.Partitions == 0 {
		c.Partitions = 1
	}
	if c.Clock == nil {
		c.Clock = clock.Real{}
	}
	if c.DefaultMaxRetries == nil {
		c.DefaultMaxRetries = new(3)
	}
	if c.MaxTaskAge == nil {
		c.MaxTaskAge = new(time.Hour)
	}
	if c.RetryRatio == nil {
		c.RetryRatio = new(0.3)
	}
	if c.RetryRatioWarning == nil {
		c.RetryRatioWarning = new(0.2)
	}
	if c.RetryRatioCritical == nil {
		c.RetryRatioCritical = new(0.1)
	}
	if c.RetryQueueWarning == 0 {
		c.RetryQueueWarning = 1000
	}
	if c.RetryQueueCritical == 0 {
		c.RetryQueueCritical = 5000
	}
	if c.PriorityWeights == [3]int{} {
		c.PriorityWeights = [3]int{6, 3, 1}
	}
	if c.EventStreamMaxLen == 0 {
		c.EventStreamMaxLen = 10000
	}
	if c.EnqueueChunk == 0 {
		c.EnqueueChunk = 500
	}
	if c.SessionIndexTTL == 0 {
		c.SessionIndexTTL = 24 * time.Hour
	}
	if c.UniqueHold == 0 {
		c.UniqueHold = 7 * 24 * time.Hour
	}
	return c
}

// Validate says in words what is wrong with c (after WithDefaults).
func (c Config) Validate() error {
	var errs []error
	if _, err := keyspace.Parse(c.Namespace); err != nil {
		errs = append(errs, fmt.Errorf("store: Namespace: %w", err))
	}
	if c.Partitions < 1 || c.Partitions > MaxPartitions {
		errs = append(errs, fmt.Errorf("store: Partitions %d must be within [1, %d]", c.Partitions, MaxPartitions))
	}
	for name, r := range map[string]*float64{"RetryRatio": c.RetryRatio, "RetryRatioWarning": c.RetryRatioWarning, "RetryRatioCritical": c.RetryRatioCritical} {
		if r != nil && (*r < 0 || *r > 1) {
			errs = append(errs, fmt.Errorf("store: %s %v must be within [0, 1]", name, *r))
		}
	}
	if c.DefaultMaxRetries != nil && *c.DefaultMaxRetries < 0 {
		errs = append(errs, fmt.Errorf("store: DefaultMaxRetries %d must not be negative", *c.DefaultMaxRetries))
	}
	if c.MaxTaskAge != nil && *c.MaxTaskAge < 0 {
		errs = append(errs, fmt.Errorf("store: MaxTaskAge %s must not be negative (0 turns the rule off)", *c.MaxTaskAge))
	}
	if c.RetryQueueWarning < 0 || c.RetryQueueCritical < c.RetryQueueWarning {
		errs = append(errs, fmt.Errorf("store: need 0 <= RetryQueueWarning (%d) <= RetryQueueCritical (%d)", c.RetryQueueWarning, c.RetryQueueCritical))
	}
	sum := 0
	for _, w := range c.PriorityWeights {
		if w < 0 {
			errs = append(errs, fmt.Errorf("store: PriorityWeights %v must not be negative", c.PriorityWeights))
		}
		sum += w
	}
	if sum == 0 {
		errs = append(errs, errors.New("store: PriorityWeights must not all be zero"))
	}
	if c.EventStreamMaxLen < 1 {
		errs = append(errs, fmt.Errorf("store: EventStreamMaxLen %d must be >= 1", c.EventStreamMaxLen))
	}
	if c.EnqueueChunk < 1 || c.EnqueueChunk > 2000 {
		errs = append(errs, fmt.Errorf("store: EnqueueChunk %d must be within [1, 2000]", c.EnqueueChunk))
	}
	if c.SessionIndexTTL < time.Millisecond {
		errs = append(errs, fmt.Errorf("store: SessionIndexTTL %s must be at least 1ms", c.SessionIndexTTL))
	}
	return errors.Join(errs...)
}

// maxRetries is DefaultMaxRetries (after WithDefaults).
func (c Config) maxRetries() int { return *c.DefaultMaxRetries }

// ratio is a configured retry ratio (after WithDefaults).
func ratio(r *float64) float64 { return *r }
