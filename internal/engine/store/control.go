package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/taskflow/taskflow/task"
)

// Named queues, pauses and limits (docs/architecture.md, "Queues, pauses
// and limits"). Every partition holds the same control entries (keys.go,
// control); fetch reads them in its own script call, so a change applies
// to the next fetch on every worker, and a pause holds from the moment
// its call returns. The whole figures of the limits are kept in the global
// hash limits; each partition enforces its share.

var queueNameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}$`)

// ValidQueueName checks a named queue's name: 1 to 64 characters of
// a-z, 0-9, '.', '_' and '-', starting with a letter or digit.
func ValidQueueName(q string) error {
	if !queueNameRE.MatchString(q) {
		return &ValidationError{Field: "queue", Reason: fmt.Sprintf("must match ^[a-z0-9][a-z0-9._-]{0,63}$ (got %q)", q)}
	}
	return nil
}

// MaxLimitKey is the longest limit key, in bytes.
const MaxLimitKey = 200

func validLimitKey(k string) error {
	if len(k) > MaxLimitKey {
		return &ValidationError{Field: "limit_key", Reason: fmt.Sprintf("must be at most %d bytes", MaxLimitKey)}
	}
	for _, r := range k {
		if r < ' ' || r == 0x7f {
			return &ValidationError{Field: "limit_key", Reason: "must not contain control characters"}
		}
	}
	return nil
}

// LimitScope is what a limit counts: the tasks of a task type, of a
// named queue, or of a limit key.
type LimitScope string

// The limit scopes.
const (
	ScopeTaskType LimitScope = "task_type"
	ScopeQueue    LimitScope = "queue"
	ScopeKey      LimitScope = "key"
)

// ParseLimitScope parses a scope's wire name.
func ParseLimitScope(s string) (LimitScope, error) {
	switch LimitScope(s) {
	case ScopeTaskType, ScopeQueue, ScopeKey:
		return LimitScope(s), nil
	}
	return "", &ValidationError{Field: "scope", Reason: fmt.Sprintf("must be task_type, queue or key (got %q)", s)}
}

func (sc LimitScope) letter() string {
	switch sc {
	case ScopeTaskType:
		return "t"
	case ScopeQueue:
		return "q"
	}
	return "k"
}

// RateLimit is at most Limit task starts per Per.
type RateLimit struct {
	Limit int           `json:"limit"`
	Per   time.Duration `json:"-"`
}

// Limit is the fleet-wide limit of one scope: a rate of starts and/or a
// concurrency (attempts running at once). A task over a limit waits,
// keeping its place and priority; it is not failed.
type Limit struct {
	Scope LimitScope `json:"scope"`
	// Name is the task type, the queue, or the limit key ("*": every key
	// its own limit, for the keys without one of their own).
	Name string `json:"name"`
	// Rate is nil for no rate limit.
	Rate *RateLimit `json:"rate"`
	// Concurrency is nil for no concurrency limit; 0 starts nothing.
	Concurrency *int `json:"concurrency"`
}

// limitRecord is a Limit as the global limits hash holds it.
type limitRecord struct {
	RateLimit   int  `json:"rate_limit,omitempty"`
	RatePerMS   int  `json:"rate_per_ms,omitempty"`
	Concurrency *int `json:"concurrency,omitempty"`
}

// Validate checks a limit: a known scope, a valid name, at least one of
// rate and concurrency, a rate of 1..1,000,000 per 1 ms..1 day, a
// concurrency of 0..1,000,000.
func (l Limit) Validate() error {
	if _, err := ParseLimitScope(string(l.Scope)); err != nil {
		return err
	}
	switch l.Scope {
	case ScopeQueue:
		if err := ValidQueueName(l.Name); err != nil {
			return &ValidationError{Field: "name", Reason: err.(*ValidationError).Reason}
		}
	case ScopeTaskType:
		if strings.TrimSpace(l.Name) == "" || len(l.Name) > 200 || strings.ContainsAny(l.Name, "\x1e\x1f\n") {
			return &ValidationError{Field: "name", Reason: "must be a task type: 1 to 200 characters without control separators"}
		}
	case ScopeKey:
		if l.Name == "" {
			return &ValidationError{Field: "name", Reason: "must be a limit key, or * for every key"}
		}
		if err := validLimitKey(l.Name); err != nil {
			return &ValidationError{Field: "name", Reason: err.(*ValidationError).Reason}
		}
	}
	if l.Rate == nil && l.Concurrency == nil {
		return &ValidationError{Field: "rate", Reason: "a limit needs a rate, a concurrency or both"}
	}
	if r := l.Rate; r != nil {
		if r.Limit < 1 || r.Limit > 1_000_000 {
			return &ValidationError{Field: "rate.limit", Reason: "must be within [1, 1000000]"}
		}
		if r.Per < time.Millisecond || r.Per > 24*time.Hour {
			return &ValidationError{Field: "rate.per", Reason: "must be within [0.001, 86400] seconds"}
		}
	}
	if c := l.Concurrency; c != nil && (*c < 0 || *c > 1_000_000) {
		return &ValidationError{Field: "concurrency", Reason: "must be within [0, 1000000]"}
	}
	return nil
}

// scope is the limit's scope id in the control hash: "t:<type>",
// "q:<queue>", "k:<key>".
func (l Limit) scope() string { return l.Scope.letter() + ":" + l.Name }

// share is partition p's (of n) entry for l: the rate divided evenly, the
// concurrency split into whole slots (the first N mod n partitions get one
// more), so the partitions' shares add up to the limit exactly.
func (l Limit) share(p, n int) string {
	rate, per := "0", "1000"
	if l.Rate != nil {
		rate = strconv.FormatFloat(float64(l.Rate.Limit)/float64(n), 'f', -1, 64)
		per = strconv.FormatInt(l.Rate.Per.Milliseconds(), 10)
	}
	conc := -1
	if l.Concurrency != nil {
		c := *l.Concurrency
		conc = c / n
		if p < c%n {
			conc++
		}
	}
	return rate + "/" + per + "/" + strconv.Itoa(conc)
}

// control sets (value != "") or clears one control entry on every
// partition (control.lua); queue names the queue whose workers to wake.
func (s *Store) control(ctx context.Context, field string, value func(p int) string, queue string) error {
	return s.allPartitions(func(p int, k keys) error {
		v := ""
		if value != nil {
			v = value(p)
		}
		keys := []string{k.control(), k.parkIndex(), k.parkWake(), k.named(queue).wake(), k.rateState()}
		if err := scriptControl.Run(ctx, s.rdb, keys, s.nowMS(), field, v).Err(); err != nil {
			return scriptErr("", err)
		}
		return nil
	})
}

// PauseQueue pauses a named queue fleet-wide: once it returns no worker
// starts a task of it; its tasks stay queued in order, running ones
// finish. The pause is kept in Redis, so it survives restarts.
func (s *Store) PauseQueue(ctx context.Context, q string) error {
	if err := ValidQueueName(q); err != nil {
		return err
	}
	if err := s.registerQueues(ctx, []EnqueueRequest{{Queue: q}}); err != nil { // a queue paused before its first task is listed
		return err
	}
	return s.control(ctx, "p:q:"+q, func(int) string { return "1" }, q)
}

// ResumeQueue lifts a queue's pause.
func (s *Store) ResumeQueue(ctx context.Context, q string) error {
	if err := ValidQueueName(q); err != nil {
		return err
	}
	return s.control(ctx, "p:q:"+q, nil, q)
}

// PauseTaskType pauses a task type fleet-wide in every queue: its tasks
// that workers take meanwhile are parked in order (park:t:<type>) instead
// of started, so the other types' tasks proceed; ResumeTaskType moves them
// back to the head of their queues.
func (s *Store) PauseTaskType(ctx context.Context, taskType string) error {
	if err := validTaskTypeName(taskType); err != nil {
		return err
	}
	return s.control(ctx, "p:t:"+taskType, func(int) string { return "1" }, "")
}

// ResumeTaskType lifts a task type's pause.
func (s *Store) ResumeTaskType(ctx context.Context, taskType string) error {
	if err := validTaskTypeName(taskType); err != nil {
		return err
	}
	return s.control(ctx, "p:t:"+taskType, nil, "")
}

func validTaskTypeName(t string) error {
	if strings.TrimSpace(t) == "" || len(t) > 200 || strings.ContainsAny(t, "\x1e\x1f\n") {
		return &ValidationError{Field: "task_type", Reason: "must be 1 to 200 characters without control separators"}
	}
	return nil
}

// SetLimit creates or replaces a limit, fleet-wide, at once.
func (s *Store) SetLimit(ctx context.Context, l Limit) error {
	if err := l.Validate(); err != nil {
		return err
	}
	rec := limitRecord{Concurrency: l.Concurrency}
	if l.Rate != nil {
		rec.RateLimit, rec.RatePerMS = l.Rate.Limit, int(l.Rate.Per.Milliseconds())
	}
	b, _ := json.Marshal(rec)
	if err := s.rdb.HSet(ctx, s.global.limits(), l.scope(), b).Err(); err != nil {
		return fmt.Errorf("store: set limit: %w", err)
	}
	n := len(s.parts)
	queue := ""
	if l.Scope == ScopeQueue {
		queue = l.Name
		if err := s.registerQueues(ctx, []EnqueueRequest{{Queue: queue}}); err != nil {
			return err
		}
	}
	return s.control(ctx, "l:"+l.scope(), func(p int) string { return l.share(p, n) }, queue)
}

// SeedLimit sets l unless its scope and name already have a limit (set
// at runtime, which a restart must not undo); set says whether it did.
// The LLM's OPENROUTER_RATE_LIMIT is seeded this way as a rate limit on
// the summarize task type.
func (s *Store) SeedLimit(ctx context.Context, l Limit) (set bool, err error) {
	if err := l.Validate(); err != nil {
		return false, err
	}
	rec := limitRecord{Concurrency: l.Concurrency}
	if l.Rate != nil {
		rec.RateLimit, rec.RatePerMS = l.Rate.Limit, int(l.Rate.Per.Milliseconds())
	}
	b, _ := json.Marshal(rec)
	ok, err := s.rdb.HSetNX(ctx, s.global.limits(), l.scope(), b).Result()
	if err != nil || !ok {
		if err != nil {
			err = fmt.Errorf("store: seed limit: %w", err)
		}
		return false, err
	}
	n := len(s.parts)
	return true, s.control(ctx, "l:"+l.scope(), func(p int) string { return l.share(p, n) }, "")
}

// ErrNoLimit: DeleteLimit found no such limit.
var ErrNoLimit = errors.New("no such limit")

// DeleteLimit removes a limit; the tasks it held back go.
func (s *Store) DeleteLimit(ctx context.Context, scope LimitScope, name string) error {
	if _, err := ParseLimitScope(string(scope)); err != nil {
		return err
	}
	l := Limit{Scope: scope, Name: name}
	n, err := s.rdb.HDel(ctx, s.global.limits(), l.scope()).Result()
	if err != nil {
		return fmt.Errorf("store: delete limit: %w", err)
	}
	queue := ""
	if scope == ScopeQueue && ValidQueueName(name) == nil {
		queue = name
	}
	if err := s.control(ctx, "l:"+l.scope(), nil, queue); err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("%s %q: %w", scope, name, ErrNoLimit)
	}
	return nil
}

// Limits lists the limits, by scope then name.
func (s *Store) Limits(ctx context.Context) ([]Limit, error) {
	h, err := s.rdb.HGetAll(ctx, s.global.limits()).Result()
	if err != nil {
		return nil, fmt.Errorf("store: limits: %w", err)
	}
	out := make([]Limit, 0, len(h))
	for f, v := range h {
		letter, name, ok := strings.Cut(f, ":")
		if !ok {
			continue
		}
		var rec limitRecord
		if json.Unmarshal([]byte(v), &rec) != nil {
			continue
		}
		l := Limit{Name: name, Concurrency: rec.Concurrency}
		switch letter {
		case "t":
			l.Scope = ScopeTaskType
		case "q":
			l.Scope = ScopeQueue
		default:
			l.Scope = ScopeKey
		}
		if rec.RateLimit > 0 {
			l.Rate = &RateLimit{Limit: rec.RateLimit, Per: time.Duration(rec.RatePerMS) * time.Millisecond}
		}
		out = append(out, l)
	}
	slices.SortFunc(out, func(a, b Limit) int {
		if c := strings.Compare(string(a.Scope), string(b.Scope)); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out, nil
}

// Paused lists the paused queues and task types (as partition 0 holds
// them: every partition holds the same).
func (s *Store) Paused(ctx context.Context) (queues, taskTypes []string, err error) {
	h, err := s.rdb.HGetAll(ctx, s.parts[0].control()).Result()
	if err != nil {
		return nil, nil, fmt.Errorf("store: paused: %w", err)
	}
	for f := range h {
		if q, ok := strings.CutPrefix(f, "p:q:"); ok {
			queues = append(queues, q)
		} else if t, ok := strings.CutPrefix(f, "p:t:"); ok {
			taskTypes = append(taskTypes, t)
		}
	}
	slices.Sort(queues)
	slices.Sort(taskTypes)
	return queues, taskTypes, nil
}

// registerQueues adds the named queues of reqs to the deployment's set of
// queues, once per queue and process (the set only grows).
func (s *Store) registerQueues(ctx context.Context, reqs []EnqueueRequest) error {
	var add []any
	for _, r := range reqs {
		if r.Queue == DefaultQueue || r.Queue == "" {
			continue
		}
		if _, known := s.knownQueues.Load(r.Queue); known || slices.Contains(add, any(r.Queue)) {
			continue
		}
		add = append(add, r.Queue)
	}
	if len(add) == 0 {
		return nil
	}
	if err := s.rdb.SAdd(ctx, s.global.queues(), add...).Err(); err != nil {
		return fmt.Errorf("store: register queues: %w", err)
	}
	for _, q := range add {
		s.knownQueues.Store(q, struct{}{})
	}
	return nil
}

// QueueInfo is one named queue's state, summed over the partitions.
type QueueInfo struct {
	Name   string `json:"name"`
	Paused bool   `json:"paused"`
	// Pending counts the tasks waiting in its primary lists by priority.
	Pending map[task.Priority]int64 `json:"pending"`
	// Retry counts those waiting in its retry list.
	Retry int64 `json:"retry"`
	// Scheduled counts its tasks in the scheduled set (delayed first
	// runs, retries not yet due, breaker waits), among the first
	// MaxScheduledCounted entries of each partition's set.
	Scheduled int64 `json:"scheduled"`
	// Active counts the attempts running (a named queue's exactly; the
	// default queue's are the lease set's minus the named queues').
	Active int64 `json:"active"`
	// CompletedPerMin is the completions of the last minute (the past
	// full minute weighed by the part of it still in the last 60 s, plus
	// the current minute's).
	CompletedPerMin float64 `json:"completed_per_min"`
	// OldestPendingAge is how long the task at the head of its lists has
	// waited (since created or due), 0 when empty.
	OldestPendingAge time.Duration `json:"-"`
	// Limits are the limits of scope queue on it.
	Limits []Limit `json:"limits"`
}

// QueueNames lists the deployment's queues: default first, then the named
// ones in order.
func (s *Store) QueueNames(ctx context.Context) ([]string, error) {
	names, err := s.rdb.SMembers(ctx, s.global.queues()).Result()
	if err != nil {
		return nil, fmt.Errorf("store: queues: %w", err)
	}
	slices.Sort(names)
	names = slices.DeleteFunc(names, func(n string) bool { return n == DefaultQueue })
	return append([]string{DefaultQueue}, names...), nil
}

// Queues returns every queue's state.
func (s *Store) Queues(ctx context.Context) ([]QueueInfo, error) {
	names, err := s.QueueNames(ctx)
	if err != nil {
		return nil, err
	}
	return s.queueInfos(ctx, names)
}

// ErrNoQueue: the queue has never been used.
var ErrNoQueue = errors.New("no such queue")

// Queue returns one queue's state; a queue never used is ErrNoQueue.
func (s *Store) Queue(ctx context.Context, name string) (*QueueInfo, error) {
	if err := ValidQueueName(name); err != nil {
		return nil, err
	}
	if name != DefaultQueue {
		ok, err := s.rdb.SIsMember(ctx, s.global.queues(), name).Result()
		if err != nil {
			return nil, fmt.Errorf("store: queue: %w", err)
		}
		if !ok {
			return nil, fmt.Errorf("queue %q: %w", name, ErrNoQueue)
		}
	}
	qs, err := s.queueInfos(ctx, []string{name})
	if err != nil {
		return nil, err
	}
	return &qs[0], nil
}

func (s *Store) queueInfos(ctx context.Context, names []string) ([]QueueInfo, error) {
	pausedQ, _, err := s.Paused(ctx)
	if err != nil {
		return nil, err
	}
	limits, err := s.Limits(ctx)
	if err != nil {
		return nil, err
	}
	now := s.cfg.Clock.Now()
	minute := now.UnixMilli() / 60000
	frac := float64(now.UnixMilli()%60000) / 60000
	out := make([]QueueInfo, len(names))
	for i, n := range names {
		out[i] = QueueInfo{Name: n, Paused: slices.Contains(pausedQ, n), Pending: map[task.Priority]int64{},
			Limits: []Limit{}}
		for _, l := range limits {
			if l.Scope == ScopeQueue && l.Name == n {
				out[i].Limits = append(out[i].Limits, l)
			}
		}
	}
	var mu sync.Mutex
	var totalActive, namedActive int64
	err = s.allPartitions(func(_ int, k keys) error {
		pipe := s.rdb.Pipeline()
		type cmds struct {
			high, normal, low, retry *redis.IntCmd
			heads                    [4]*redis.StringCmd
			running                  *redis.StringCmd
			cur, prev                *redis.StringCmd
		}
		cs := make([]cmds, len(names))
		for i, n := range names {
			q := k.named(n)
			c := &cs[i]
			c.high, c.normal, c.low = pipe.LLen(ctx, q.primary(task.PriorityHigh)), pipe.LLen(ctx, q.primary(task.PriorityNormal)), pipe.LLen(ctx, q.primary(task.PriorityLow))
			c.retry = pipe.LLen(ctx, q.retry())
			for j, l := range []string{q.primary(task.PriorityHigh), q.primary(task.PriorityNormal), q.primary(task.PriorityLow), q.retry()} {
				c.heads[j] = pipe.LIndex(ctx, l, 0)
			}
			c.running = pipe.HGet(ctx, k.running(), "q:"+n)
			c.cur = pipe.HGet(ctx, k.queueDone(), n+"|"+strconv.FormatInt(minute, 10))
			c.prev = pipe.HGet(ctx, k.queueDone(), n+"|"+strconv.FormatInt(minute-1, 10))
		}
		active := pipe.ZCard(ctx, k.active())
		runAll := pipe.HGetAll(ctx, k.running())
		if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
			return fmt.Errorf("store: queues: %w", err)
		}
		// the heads' ages: one read of their created/due times
		var headIDs []string
		for i := range cs {
			for _, h := range cs[i].heads {
				if id, err := h.Result(); err == nil {
					headIDs = append(headIDs, id)
				}
			}
		}
		since := map[string]time.Time{}
		if len(headIDs) > 0 {
			pipe := s.rdb.Pipeline()
			hm := make([]*redis.SliceCmd, len(headIDs))
			for j, id := range headIDs {
				hm[j] = pipe.HMGet(ctx, k.task(id), fCreated, fNotBefore)
			}
			if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
				return fmt.Errorf("store: queues: %w", err)
			}
			for j, id := range headIDs {
				v := hm[j].Val()
				if len(v) < 2 || v[0] == nil {
					continue
				}
				t := msTime(str(v[0]))
				if nb, ok := v[1].(string); ok && nb != "" {
					if d := msTime(nb); d.After(t) {
						t = d
					}
				}
				since[id] = t
			}
		}
		mu.Lock()
		defer mu.Unlock()
		totalActive += active.Val()
		for sc, v := range runAll.Val() {
			if q, ok := strings.CutPrefix(sc, "q:"); ok && q != DefaultQueue {
				n, _ := strconv.ParseInt(v, 10, 64)
				namedActive += n
			}
		}
		for i := range cs {
			c, q := &cs[i], &out[i]
			q.Pending[task.PriorityHigh] += c.high.Val()
			q.Pending[task.PriorityNormal] += c.normal.Val()
			q.Pending[task.PriorityLow] += c.low.Val()
			q.Retry += c.retry.Val()
			r, _ := strconv.ParseInt(c.running.Val(), 10, 64)
			q.Active += r
			cur, _ := strconv.ParseFloat(c.cur.Val(), 64)
			prev, _ := strconv.ParseFloat(c.prev.Val(), 64)
			q.CompletedPerMin += cur + prev*(1-frac)
			for _, h := range c.heads {
				if t, ok := since[h.Val()]; ok {
					if age := now.Sub(t); age > q.OldestPendingAge {
						q.OldestPendingAge = age
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if err := s.countScheduled(ctx, out); err != nil {
		return nil, err
	}
	// the default queue's running attempts are not counted on their own
	// (the unlimited path writes nothing for them): the lease set's less
	// the named queues'
	for i := range out {
		if out[i].Name == DefaultQueue && out[i].Active == 0 {
			out[i].Active = max(0, totalActive-namedActive)
		}
	}
	return out, nil
}

// MaxScheduledCounted bounds the scheduled entries per partition whose
// queue Queues looks up (one pipelined HGET each).
const MaxScheduledCounted = 10000

// countScheduled adds to each of out its tasks in the scheduled sets.
func (s *Store) countScheduled(ctx context.Context, out []QueueInfo) error {
	at := make(map[string]int, len(out))
	for i, q := range out {
		at[q.Name] = i
	}
	var mu sync.Mutex
	return s.allPartitions(func(_ int, k keys) error {
		ids, err := s.rdb.ZRange(ctx, k.scheduled(), 0, MaxScheduledCounted-1).Result()
		if err != nil || len(ids) == 0 {
			if err != nil {
				return fmt.Errorf("store: queues: %w", err)
			}
			return nil
		}
		pipe := s.rdb.Pipeline()
		cmds := make([]*redis.StringCmd, len(ids))
		for i, id := range ids {
			cmds[i] = pipe.HGet(ctx, k.task(id), fQueue)
		}
		if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
			return fmt.Errorf("store: queues: %w", err)
		}
		mu.Lock()
		defer mu.Unlock()
		for _, c := range cmds {
			q, err := c.Result()
			if errors.Is(err, redis.Nil) || q == "" {
				q = DefaultQueue
			}
			if i, ok := at[q]; ok {
				out[i].Scheduled++
			}
		}
		return nil
	})
}

// Parked counts the tasks held back by paused types and limits, by scope
// ("t:<type>", "k:<key>").
func (s *Store) Parked(ctx context.Context) (map[string]int64, error) {
	out := map[string]int64{}
	var mu sync.Mutex
	err := s.allPartitions(func(_ int, k keys) error {
		scopes, err := s.rdb.ZRange(ctx, k.parkIndex(), 0, -1).Result()
		if err != nil {
			return fmt.Errorf("store: parked: %w", err)
		}
		for _, sc := range scopes {
			n, err := s.rdb.LLen(ctx, k.park(sc)).Result()
			if err != nil {
				return fmt.Errorf("store: parked: %w", err)
			}
			mu.Lock()
			out[sc] += n
			mu.Unlock()
		}
		return nil
	})
	return out, err
}
