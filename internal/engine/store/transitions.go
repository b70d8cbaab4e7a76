package store

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/taskflow/taskflow/internal/engine/redisconn"
	"github.com/taskflow/taskflow/task"
)

// FetchRequest asks for up to N tasks for one worker.
type FetchRequest struct {
	// N is the most tasks to take (1..1000).
	N int
	// WorkerID names the worker in the task's worker field and history.
	WorkerID string
	// TokenPrefix makes the lease tokens of this call unique: each task's
	// token is TokenPrefix + ":" + its position. A worker uses its id plus a
	// call counter.
	TokenPrefix string
	// Lease is how long the tasks are held without a heartbeat.
	Lease time.Duration
	// Queue is the named queue to take from; "" means DefaultQueue.
	Queue string
}

// fetchHint collects, over the partitions of one Fetch, the shortest wait
// after which a pause or limit that held work back may let more go.
type fetchHint struct {
	mu sync.Mutex
	d  time.Duration
}

func (h *fetchHint) note(d time.Duration) {
	h.mu.Lock()
	if h.d == 0 || d < h.d {
		h.d = d
	}
	h.mu.Unlock()
}

// FetchDispatch asks a fetch to dispatch the tasks it starts of some
// types at once, in the same script call, as DispatchMany would (the
// external path's dispatcher says which and with what: dispatch.Plan):
// each such task's type has a free in-flight place, its task.create is
// published and the attempt handed off, all with its start. A task whose
// type is full, or whose task.create the script would not write exactly
// as protocol.CreateData encodes it (identifiers needing a JSON escape,
// params with whitespace, a traceparent, see fetch.lua), is returned as
// any other for the handler to dispatch. Only for a deployment of one
// partition (CanDispatch).
type FetchDispatch struct {
	// Stream is the task.create stream, MinID its retention cut-off.
	Stream, MinID string
	// EventType and Stamp are the events' event_type and timestamp.
	EventType, Stamp string
	// Grace is DispatchBatch's; DefaultTimeout the attempt's timeout of a
	// task that sets none.
	Grace, DefaultTimeout time.Duration
	// Types are the types dispatched here, each with its in-flight set and
	// bound (-1: none).
	Types []DispatchType
	// EventIDPrefix is the first 32 characters of a random UUID (v4)
	// (uuid.New().String()[:32]): the k-th event of the fetch (from 1)
	// has it followed by k in 4 hex digits as its id, a UUID (v4) too.
	EventIDPrefix string
}

// DispatchType is one type of a FetchDispatch.
type DispatchType struct {
	Name, Inflight string
	Bound          int
}

// Dispatched is a task a fetch dispatched (FetchDispatch).
type Dispatched struct {
	ID, Token, Type, EntryID, SessionID string
	// InFlight is its type's in-flight count after it (-1: unbounded);
	// Attempt its attempt, from 1.
	InFlight, Attempt int
	// First: the task was never dispatched before (DispatchResult's
	// PrevToken "").
	First bool
}

// FetchAndDispatch is FetchWithHint that also dispatches the tasks d
// names (FetchDispatch), returned apart; with several partitions (no
// CanDispatch) or a nil d it is FetchWithHint.
func (s *Store) FetchAndDispatch(ctx context.Context, r FetchRequest, d *FetchDispatch) ([]*task.Task, []Dispatched, time.Duration, error) {
	if d == nil || len(d.Types) == 0 || !s.CanDispatch() {
		ts, h, err := s.FetchWithHint(ctx, r)
		return ts, nil, h, err
	}
	if err := s.checkFetch(&r); err != nil {
		return nil, nil, 0, err
	}
	if len(d.EventIDPrefix) != 32 {
		return nil, nil, 0, fmt.Errorf("store: fetch: event id prefix %q is not 32 characters of a UUID", d.EventIDPrefix)
	}
	var h fetchHint
	ts, ds, err := s.fetchFrom(ctx, s.parts[0], r, r.TokenPrefix, &h, d)
	return ts, ds, h.d, err
}

// fetchFrom is Fetch on one partition; tokenPrefix keeps the tokens of the
// partitions of one Fetch apart. With d, the tasks it dispatched come
// apart (FetchAndDispatch).
func (s *Store) fetchFrom(ctx context.Context, k keys, r FetchRequest, tokenPrefix string, hint *fetchHint, d *FetchDispatch) ([]*task.Task, []Dispatched, error) {
	now := s.nowMS()
	w := s.cfg.PriorityWeights
	q := k.named(r.Queue)
	qname := ""
	if r.Queue != DefaultQueue {
		qname = r.Queue
	}
	keys := []string{
		q.primary(task.PriorityHigh), q.primary(task.PriorityNormal), q.primary(task.PriorityLow),
		q.retry(), k.active(), k.stateIndex(task.StatePending), k.events(), q.wake(),
		k.taskPrefix(), k.dlq(), k.stateIndex(task.StateDLQ), k.dlqPrefix(),
		k.control(), k.running(), k.rateState(), k.parkIndex(), k.parkPrefix(), k.primary(task.PriorityNormal),
	}
	if d != nil {
		keys = append(keys, k.handoff(), d.Stream)
		for _, t := range d.Types {
			keys = append(keys, t.Inflight)
		}
	}
	cmd := redisconn.EvalCmd(scriptFetch, keys, 18)
	cmd = append(cmd, now, r.N, rand.Float64(), rand.Float64(), now+r.Lease.Milliseconds(), tokenPrefix, r.WorkerID,
		s.cfg.RetryQueueWarning, s.cfg.RetryQueueCritical, ratio(s.cfg.RetryRatio), ratio(s.cfg.RetryRatioWarning), ratio(s.cfg.RetryRatioCritical),
		w[0], w[1], w[2], s.maxAgeMS(), s.cfg.EventStreamMaxLen, qname)
	if d != nil {
		cmd = append(cmd, len(d.Types), d.MinID, d.Stamp, d.Grace.Milliseconds(), d.DefaultTimeout.Milliseconds(), d.EventType)
		for _, t := range d.Types {
			cmd = append(cmd, t.Name, t.Bound)
		}
		cmd = append(cmd, d.EventIDPrefix)
	}
	res, err := redisconn.EvalStrings(ctx, s.rdb, scriptFetch, cmd)
	if err != nil {
		if errors.Is(err, redis.Nil) {
			return nil, nil, nil
		}
		return nil, nil, scriptErr("", err)
	}
	var ds []Dispatched
	if d != nil {
		if ds, res, err = dispatchedOf(res); err != nil {
			return nil, nil, err
		}
	}
	const width = 8 // fetch.lua's strings per task
	if len(res)%width == 1 {
		if d, _ := strconv.ParseInt(res[len(res)-1], 10, 64); d > 0 {
			hint.note(time.Duration(d) * time.Millisecond)
		}
	}
	out := make([]*task.Task, 0, len(res)/width)
	started := time.UnixMilli(now).UTC()
	for i := 0; i+width <= len(res); i += width {
		f := res[i : i+width]
		prio, rest, _ := strings.Cut(f[7], " ")
		timeout, rest, _ := strings.Cut(rest, " ")
		retries, rest, _ := strings.Cut(rest, " ")
		maxRetries, created, _ := strings.Cut(rest, " ")
		t := &task.Task{
			ID: f[0], Lease: f[1], Type: f[2], Content: f[3], SessionID: f[5],
			Priority: task.Priority(prio), State: task.StateActive, Worker: r.WorkerID,
			Timeout:    time.Duration(atoi(timeout)) * time.Millisecond,
			RetryCount: atoi(retries), MaxRetries: atoi(maxRetries),
			CreatedAt: msTime(created), UpdatedAt: started, StartedAt: &started,
			Traceparent: f[6], Queue: cmp.Or(r.Queue, DefaultQueue),
		}
		if p := f[4]; p != "" {
			t.Params = json.RawMessage(p)
		}
		out = append(out, t)
	}
	return out, ds, nil
}

// dispatchedOf reads the tasks a fetch dispatched off the head of its
// answer (fetch.lua: their number, then "<id> <token> <type> <in-flight
// count> <entry id> <attempt> <first> <session>" each) and returns the
// rest.
func dispatchedOf(res []string) ([]Dispatched, []string, error) {
	if len(res) == 0 {
		return nil, res, errors.New("store: fetch.lua answered nothing of its dispatches")
	}
	k, err := strconv.Atoi(res[0])
	if err != nil || k < 0 || k > len(res)-1 {
		return nil, res, fmt.Errorf("store: fetch.lua answered %q for its dispatches", res[0])
	}
	if k == 0 {
		return nil, res[1:], nil
	}
	ds := make([]Dispatched, k)
	for i, v := range res[1 : 1+k] {
		var f [8]string
		for j := 0; j < 7; j++ {
			f[j], v, _ = strings.Cut(v, " ")
		}
		f[7] = v
		ds[i] = Dispatched{ID: f[0], Token: f[1], Type: f[2], InFlight: atoiOr(f[3], -1), EntryID: f[4],
			Attempt: atoi(f[5]), First: f[6] == "1", SessionID: f[7]}
	}
	return ds, res[1+k:], nil
}

// Fetch moves up to N PENDING tasks to ACTIVE in one script call per
// partition it takes from (FIFO per queue, the adaptive retry ratio,
// priority weights, all within a partition; with several partitions, while
// the queues are deep it takes a whole batch from one partition in turn,
// else it asks each for its share of N at once) and returns them with
// Lease set to their fencing token. A task older than MaxTaskAge at pickup
// goes to the DLQ instead. An empty result means no queue holds a task;
// WaitForWork blocks until one might.
func (s *Store) Fetch(ctx context.Context, r FetchRequest) ([]*task.Task, error) {
	out, _, err := s.FetchWithHint(ctx, r)
	return out, err
}

// FetchWithHint is Fetch that also says, when a pause or a limit held
// work back (tasks wait that may start later), after how long a fetch
// may get more: 0 when nothing was held back or only the end of a running
// attempt (which wakes the workers) can let it go. A worker waits at
// most that long before it fetches again.
func (s *Store) FetchWithHint(ctx context.Context, r FetchRequest) ([]*task.Task, time.Duration, error) {
	var h fetchHint
	out, err := s.fetch(ctx, r, &h)
	return out, h.d, err
}

// checkFetch checks r and sets its default queue.
func (s *Store) checkFetch(r *FetchRequest) error {
	if r.Queue == "" {
		r.Queue = DefaultQueue
	} else if err := ValidQueueName(r.Queue); err != nil {
		return err
	}
	if r.N < 1 || r.N > 1000 {
		return fmt.Errorf("store: fetch N %d must be within [1, 1000]", r.N)
	}
	if r.Lease <= 0 {
		return errors.New("store: fetch lease must be positive")
	}
	return nil
}

func (s *Store) fetch(ctx context.Context, r FetchRequest, h *fetchHint) ([]*task.Task, error) {
	if err := s.checkFetch(&r); err != nil {
		return nil, err
	}
	n := len(s.parts)
	if n == 1 {
		ts, _, err := s.fetchFrom(ctx, s.parts[0], r, r.TokenPrefix, h, nil)
		return ts, err
	}
	start := int(s.turn.Add(1) % uint32(n))
	if h := s.woke.Swap(0); h > 0 {
		start = int(h - 1)
	}
	if s.deep.Load() {
		// the last fetch was full: the queues are deep, so one partition
		// likely has the whole batch — take it from the one in turn (one
		// script call, a full batch), going on to the next while short
		out, err := s.fetchInTurn(ctx, r, start, h)
		s.deep.Store(len(out) == r.N)
		return out, err
	}
	// shallow queues: ask each partition for its share at once (one round
	// trip on a cluster, where they sit on different masters, so a task
	// waiting in any is found at once); the shares add up to N exactly,
	// the odd ones going first to the partition whose wake-up ended this
	// process's wait, else to the next in its turn. A partition that gave
	// its whole share may hold more: the rest of N is asked of those, round
	// after round.
	out, err := s.fetchShares(ctx, r, start, h)
	s.deep.Store(len(out) == r.N)
	return out, err
}

// fetchInTurn is Fetch from the partitions one after the other, from
// start, until N are taken.
func (s *Store) fetchInTurn(ctx context.Context, r FetchRequest, start int, h *fetchHint) ([]*task.Task, error) {
	n := len(s.parts)
	var out []*task.Task
	var firstErr error
	answered := false
	want := r.N
	order := make([]int, n)
	for i := range order {
		order[i] = (start + i) % n
	}
	for _, p := range s.upFirst(order) {
		if len(out) >= want {
			break
		}
		r.N = want - len(out)
		var ts []*task.Task
		err := s.onPartition(ctx, p, func(ctx context.Context) (err error) {
			ts, _, err = s.fetchFrom(ctx, s.parts[p], r, r.TokenPrefix+"p"+strconv.Itoa(p), h, nil)
			return err
		})
		if err != nil {
			firstErr = cmp.Or(firstErr, err)
			continue // the others may answer: one partition's shard down does not stop the rest
		}
		answered = true
		out = append(out, ts...)
	}
	if !answered {
		return nil, firstErr
	}
	return out, nil
}

// fetchShares is Fetch asking the partitions for shares of N at once.
func (s *Store) fetchShares(ctx context.Context, r FetchRequest, start int, h *fetchHint) ([]*task.Task, error) {
	n := len(s.parts)
	live := make([]int, n)
	for i := range live {
		live[i] = (start + i) % n
	}
	live = s.upFirst(live)
	want := r.N
	var out []*task.Task
	var firstErr error
	answered := false
	for round := 0; len(live) > 0 && len(out) < want; round++ {
		rem := want - len(out)
		type part struct {
			p, share int
			got      []*task.Task
			err      error
		}
		asked := make([]part, 0, len(live))
		var idle []int // not asked this round (a share of 0)
		for i, p := range live {
			share := rem / len(live)
			if i < rem%len(live) {
				share++
			}
			if share > 0 {
				asked = append(asked, part{p: p, share: share})
			} else {
				idle = append(idle, p)
			}
		}
		var wg sync.WaitGroup
		for i := range asked {
			a := &asked[i]
			wg.Add(1)
			go func() {
				defer wg.Done()
				rr := r
				rr.N = a.share
				a.err = s.onPartition(ctx, a.p, func(ctx context.Context) (err error) {
					a.got, _, err = s.fetchFrom(ctx, s.parts[a.p], rr, r.TokenPrefix+"p"+strconv.Itoa(a.p)+"r"+strconv.Itoa(round), h, nil)
					return err
				})
			}()
		}
		wg.Wait()
		next := idle
		progress := false
		for _, a := range asked {
			if a.err != nil {
				firstErr = cmp.Or(firstErr, a.err)
				continue
			}
			answered = true
			out = append(out, a.got...)
			progress = progress || len(a.got) > 0
			if len(a.got) == a.share {
				next = append(next, a.p) // it may hold more
			}
		}
		if !progress {
			next = idle // those asked had nothing: only the ones not asked may
		}
		live = next
	}
	if !answered {
		return nil, firstErr
	}
	// one partition's shard down does not stop the others: its error
	// shows in the next fetch only when none answers (and in the
	// scheduler's steps, which cover every partition)
	return out, nil
}

// WaitForWork blocks until an enqueue, a promotion or a requeue signals
// work, or Interrupt(workerID) is called, or timeout passes. It consumes
// the wake-up token, so one idle worker process wakes per signal; the
// fetch that follows passes the token on while tasks remain. timeout is
// rounded up to whole seconds. (A blocked Redis read does not end with
// ctx: stop it with Interrupt.)
//
// queues are the named queues whose wake-ups end the wait (none: the
// default queue's); the parking wake-up (parked tasks may move back, see
// control.go) ends it too.
func (s *Store) WaitForWork(ctx context.Context, workerID string, timeout time.Duration, queues ...string) (bool, error) {
	if timeout < time.Second {
		timeout = time.Second
	}
	if len(queues) == 0 {
		queues = []string{DefaultQueue}
	}
	if len(s.parts) == 1 {
		return s.waitOn(ctx, s.parts[0], workerID, timeout, queues)
	}
	// several partitions: block on each one's wake-up list at once (a
	// cluster cannot BLPOP lists of two slots in one call); the first to
	// answer ends the others through their private lists, so the wait
	// still ends within one round trip of a signal.
	type answer struct {
		p   int
		got bool
		err error
	}
	all := make([]int, len(s.parts))
	for p := range all {
		all[p] = p
	}
	waited := s.upFirst(all) // not those whose shard is down (partition.go)
	answers := make(chan answer, len(waited))
	for _, p := range waited {
		go func() {
			got, err := s.waitOn(ctx, s.parts[p], workerID, timeout, queues)
			answers <- answer{p, got, err}
		}()
	}
	// the first token wins, and the first plain timeout ends the wait (the
	// others time out with it); a partition whose shard does not answer
	// (an error) does not end it while the others may still signal, nor
	// hold it up: its read may take the client's retries to fail
	var firstErr error
	for pending := len(waited); pending > 0; {
		a := <-answers
		pending--
		if a.err != nil {
			s.noteFailure(a.p, a.err)
			firstErr = cmp.Or(firstErr, a.err)
			continue
		}
		if !a.got {
			return false, nil
		}
		s.woke.Store(int32(a.p) + 1) // the next Fetch starts there
		if pending > 0 {
			// best effort, and never held up by a shard that does not
			// answer (a pipeline waits for its slowest node): not to
			// partitions marked down, and not for long; the others end at
			// their timeout anyway
			pipe := s.rdb.Pipeline()
			for _, p := range waited {
				if p != a.p && !s.isDown(p) {
					pipe.RPush(ctx, s.parts[p].wakeWorker(workerID), "stop")
					pipe.PExpire(ctx, s.parts[p].wakeWorker(workerID), 10*time.Second)
				}
			}
			if pipe.Len() > 0 {
				sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stopPushWait)
				_, _ = pipe.Exec(sctx)
				cancel()
			}
			// the others end within a round trip (answers has room for
			// them); the caller fetches meanwhile
		}
		return true, nil
	}
	return false, firstErr
}

// stopPushWait bounds WaitForWork's push that ends its other partitions'
// waits: a shard that died during the wait, not yet marked down, must not
// hold the worker's next fetch for the client's retries.
const stopPushWait = 250 * time.Millisecond

// waitOn is WaitForWork on one partition's lists.
func (s *Store) waitOn(ctx context.Context, k keys, workerID string, timeout time.Duration, queues []string) (bool, error) {
	lists := make([]string, 0, len(queues)+2)
	lists = append(lists, k.wakeWorker(workerID))
	for _, q := range queues {
		lists = append(lists, k.named(q).wake())
	}
	lists = append(lists, k.parkWake())
	err := s.rdb.BLPop(ctx, timeout, lists...).Err()
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, redis.Nil):
		return false, nil
	case ctx.Err() != nil:
		return false, ctx.Err()
	}
	return false, fmt.Errorf("store: wait for work: %w", err)
}

// Interrupt ends the WaitForWork of workerID at once (used at shutdown).
func (s *Store) Interrupt(ctx context.Context, workerID string) error {
	pipe := s.rdb.Pipeline()
	for _, k := range s.parts {
		pipe.RPush(ctx, k.wakeWorker(workerID), "stop")
		pipe.PExpire(ctx, k.wakeWorker(workerID), 10*time.Second)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("store: interrupt %s: %w", workerID, err)
	}
	return nil
}

// Completion is one task's successful end, as a worker or an external
// service reports it.
type Completion struct {
	ID     string
	Token  string          // the lease (fencing) token of the attempt
	Result json.RawMessage // stored as the task's result
}

// Complete moves one ACTIVE (or TIMEOUT) task to COMPLETED. token is the
// lease token of the attempt: the worker's, or the one an orchestrator
// recorded when it dispatched the task. Errors: task.ErrNotFound,
// task.ErrLeaseLost, *task.StateError (e.g. completing twice).
func (s *Store) Complete(ctx context.Context, id, token string, result json.RawMessage) error {
	errs, err := s.CompleteBatch(ctx, []Completion{{ID: id, Token: token, Result: result}})
	if err != nil {
		return err
	}
	return errs[0]
}

// CompleteBatch completes many tasks in one script call per partition
// (workers flush their acknowledgements this way). The returned slice
// holds one error (or nil) per completion, in order; the second result is
// a Redis failure, in which case nothing is known to have been applied.
// With several partitions, a partition whose call failed while another's
// succeeded gives its items errors wrapping ErrUnapplied instead.
func (s *Store) CompleteBatch(ctx context.Context, cs []Completion) ([]error, error) {
	if len(cs) == 0 {
		return nil, nil
	}
	out := make([]error, len(cs))
	var mu sync.Mutex
	var failed []error
	parts := 0
	err := s.eachPartition(len(cs), func(i int) string { return cs[i].ID }, func(p int, k keys, at []int) error {
		err := s.onPartition(ctx, p, func(ctx context.Context) error { return s.completeIn(ctx, k, cs, at, out, nil) })
		mu.Lock()
		defer mu.Unlock()
		parts++
		if err != nil {
			failed = append(failed, err)
			for _, i := range at { // that partition's call failed: nothing of it is known applied
				out[i] = fmt.Errorf("%w: %w", ErrUnapplied, err)
			}
		}
		return nil
	})
	if err == nil && len(failed) == parts {
		err = errors.Join(failed...) // every call failed: as with one partition, the batch's error
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ErrUnapplied is wrapped by the per-item errors of a batch (CompleteBatch)
// whose partition's script call failed in Redis while another partition's
// succeeded: those items are not known to be applied; write them again.
var ErrUnapplied = errors.New("not applied: its partition's Redis call failed")

// CompleteNotices is CompleteBatch for a deployment of one partition
// (CanDispatch) that also returns, in the same script call, what the
// completion's notification and result cache take of each task it
// completed: its ID, Type, SessionID, Priority and Params, with Result
// and State COMPLETED (nil where the task was not completed: its error
// says why).
func (s *Store) CompleteNotices(ctx context.Context, cs []Completion) ([]error, []*task.Task, error) {
	if !s.CanDispatch() {
		return nil, nil, errors.New("store: CompleteNotices needs a deployment of one partition")
	}
	out := make([]error, len(cs))
	ts := make([]*task.Task, len(cs))
	if len(cs) == 0 {
		return out, ts, nil
	}
	at := make([]int, len(cs))
	for i := range at {
		at[i] = i
	}
	if err := s.onPartition(ctx, 0, func(ctx context.Context) error { return s.completeIn(ctx, s.parts[0], cs, at, out, ts) }); err != nil {
		return nil, nil, err
	}
	return out, ts, nil
}

// CompletionKeys are the keys of complete.lua's writes for a whole batch,
// its KEYS[1..10] in order (the active set, the COMPLETED and TIMEOUT
// indexes, the events, the running counts, the park index, prefix and
// wake list, the queues' completions, the handoff index), and TaskKey a
// task's hash, in a deployment of one partition (CanDispatch): for a
// script that completes attempts with lib.lua's complete_task (LuaLib).
// NowMS is the store clock's time as those scripts take it, and
// EventStreamMaxLen the events stream's cap.
func (s *Store) CompletionKeys() []string {
	k := s.parts[0]
	return []string{k.active(), k.stateIndex(task.StateCompleted), k.stateIndex(task.StateTimeout), k.events(),
		k.running(), k.parkIndex(), k.parkPrefix(), k.parkWake(), k.queueDone(), k.handoff()}
}

// TaskKey: see CompletionKeys.
func (s *Store) TaskKey(id string) string { return s.parts[0].task(id) }

// NowMS: see CompletionKeys.
func (s *Store) NowMS() int64 { return s.nowMS() }

// EventStreamMaxLen: see CompletionKeys.
func (s *Store) EventStreamMaxLen() int64 { return s.cfg.EventStreamMaxLen }

// completeIn runs CompleteBatch for the completions at positions at, all
// in partition k, and sets their errors in out; with ts non-nil, also each
// completed task's notice fields (CompleteNotices).
func (s *Store) completeIn(ctx context.Context, k keys, cs []Completion, at []int, out []error, ts []*task.Task) error {
	cmd := redisconn.EvalHead(scriptComplete, 10+len(at), 10+len(at)+3+3*len(at))
	cmd = append(cmd, k.active(), k.stateIndex(task.StateCompleted), k.stateIndex(task.StateTimeout), k.events(),
		k.running(), k.parkIndex(), k.parkPrefix(), k.parkWake(), k.queueDone(), k.handoff()) // (CompletionKeys' order)
	for _, i := range at {
		cmd = append(cmd, k.task(cs[i].ID))
	}
	notice, per := "0", 1
	if ts != nil {
		notice, per = "1", 5
	}
	cmd = append(cmd, s.nowMS(), s.cfg.EventStreamMaxLen, notice)
	for _, i := range at {
		cmd = append(cmd, cs[i].ID, cs[i].Token, string(cs[i].Result))
	}
	res, err := redisconn.EvalStrings(ctx, s.rdb, scriptComplete, cmd)
	if err != nil {
		return scriptErr("", err)
	}
	if len(res) != per*len(at) {
		return fmt.Errorf("store: complete answered %d entries for %d tasks", len(res), len(at))
	}
	for n := range at {
		i, code := at[n], res[per*n]
		if ts != nil && code == "OK" {
			f := res[per*n+1 : per*n+5]
			t := &task.Task{ID: cs[i].ID, Type: f[0], SessionID: f[1], Priority: task.Priority(f[2]), State: task.StateCompleted,
				Result: cs[i].Result}
			if f[3] != "" {
				t.Params = json.RawMessage(f[3])
			}
			ts[i] = t
		}
		switch {
		case code == "OK":
		case code == "NOTFOUND":
			out[i] = fmt.Errorf("task %s: %w", cs[i].ID, task.ErrNotFound)
		case code == "LEASE":
			out[i] = fmt.Errorf("task %s: %w", cs[i].ID, task.ErrLeaseLost)
		case strings.HasPrefix(code, "STATE:"):
			out[i] = &task.StateError{TaskID: cs[i].ID, Have: task.State(strings.TrimPrefix(code, "STATE:")),
				Want: []task.State{task.StateActive, task.StateTimeout}}
		default:
			out[i] = fmt.Errorf("store: complete %s: unexpected answer %q", cs[i].ID, code)
		}
	}
	return nil
}

// Failure describes one failed attempt.
type Failure struct {
	// ErrorType is recorded on the task (error types).
	ErrorType string
	// Message is the error text (last_error and the history entry).
	Message string
	// Permanent sends the task to the DLQ without retrying.
	Permanent bool
	// RetryAt is when a retry becomes due (ignored when the task goes to
	// the DLQ); the caller computes it from the task's retry_count with the
	// retry package. Zero means now.
	RetryAt time.Time
	// Attempt is the attempt number for the history (retry_count + 1).
	Attempt int
	// Worker names who ran the attempt.
	Worker string
	// Details, when set, is a JSON object recorded with the error in the
	// task's error history (an external service's error.details).
	Details json.RawMessage
}

// FailOutcome says where a failed task went.
type FailOutcome struct {
	// State is FAILED (waiting for a retry) or DLQ.
	State task.State
	// Reason is "retry", or why it went to the DLQ: "permanent",
	// "max_retries" or "max_age".
	Reason string
}

// Fail records a failed attempt of an ACTIVE (or TIMEOUT) task held with
// token: ACTIVE → FAILED, then a scheduled retry at f.RetryAt, or FAILED →
// DLQ when f.Permanent, retry_count >= max_retries, or the task is older
// than MaxTaskAge (the script decides, atomically).
func (s *Store) Fail(ctx context.Context, id, token string, f Failure) (FailOutcome, error) {
	k := s.part(id)
	now := s.cfg.Clock.Now()
	due := f.RetryAt
	if due.IsZero() || due.Before(now) {
		due = now
	}
	rec := encodeErrorRecord(task.ErrorRecord{At: now, Attempt: f.Attempt, ErrorType: f.ErrorType, Message: f.Message, Worker: f.Worker,
		Details: f.Details})
	perm := 0
	if f.Permanent {
		perm = 1
	}
	keys := []string{k.task(id), k.active(), k.stateIndex(task.StateTimeout), k.stateIndex(task.StateFailed),
		k.scheduled(), k.dlq(), k.stateIndex(task.StateDLQ), k.dlqTask(id), k.events(),
		k.running(), k.parkIndex(), k.parkPrefix(), k.parkWake()}
	res, err := scriptFail.Run(ctx, s.rdb, keys, ms(now), token, perm, ms(due), f.ErrorType, f.Message, rec,
		s.maxAgeMS(), s.cfg.EventStreamMaxLen).StringSlice()
	if err != nil {
		return FailOutcome{}, scriptErr(id, err, task.StateActive, task.StateTimeout)
	}
	return FailOutcome{State: task.State(res[0]), Reason: res[1]}, nil
}

// Release hands an ACTIVE task held with token back to PENDING without
// spending a retry: at the front of its queue when due is zero or past
// (graceful shutdown), else through the scheduled set (an open circuit
// breaker). cause is recorded in the state history.
func (s *Store) Release(ctx context.Context, id, token string, due time.Time, cause string) error {
	k := s.part(id)
	dueMS := int64(0)
	if !due.IsZero() {
		dueMS = ms(due)
	}
	keys := []string{k.task(id), k.active(), k.stateIndex(task.StatePending), k.scheduled(),
		k.events(), k.wake(), k.primary(task.PriorityHigh), k.primary(task.PriorityNormal),
		k.primary(task.PriorityLow), k.retry(), k.running(), k.parkIndex(), k.parkPrefix(), k.parkWake()}
	err := scriptRelease.Run(ctx, s.rdb, keys, s.nowMS(), token, dueMS, sanitizeCause(cause), s.cfg.EventStreamMaxLen).Err()
	return scriptErr(id, err, task.StateActive)
}

// CancelActive ends an ACTIVE (or TIMEOUT) task held with token as
// CANCELLED: the holder's handler saw the cancel request or returned
// task.Cancel.
func (s *Store) CancelActive(ctx context.Context, id, token, cause string) error {
	k := s.part(id)
	keys := []string{k.task(id), k.active(), k.stateIndex(task.StateTimeout),
		k.stateIndex(task.StateCancelled), k.events(), k.running(), k.parkIndex(), k.parkPrefix(), k.parkWake()}
	err := scriptCancelActive.Run(ctx, s.rdb, keys, s.nowMS(), token, sanitizeCause(cause), s.cfg.EventStreamMaxLen).Err()
	return scriptErr(id, err, task.StateActive, task.StateTimeout)
}

// MarkTimeout moves an ACTIVE task held with token to TIMEOUT (overdue).
// The task keeps its token, so a late Complete still moves it to
// COMPLETED; Fail and Cancel apply too. The detector of external-service
// timeouts calls it with the token recorded at dispatch.
func (s *Store) MarkTimeout(ctx context.Context, id, token string) error {
	k := s.part(id)
	keys := []string{k.task(id), k.active(), k.stateIndex(task.StateTimeout), k.events()}
	err := scriptTimeout.Run(ctx, s.rdb, keys, s.nowMS(), token, s.cfg.EventStreamMaxLen).Err()
	return scriptErr(id, err, task.StateActive)
}

// Lease identifies one held task.
type Lease struct {
	ID    string
	Token string
}

// HeartbeatResult lists held tasks the worker must stop: Lost (the lease is
// no longer theirs) and CancelRequested (cancel them, then CancelActive).
type HeartbeatResult struct {
	Lost            []string
	CancelRequested []string
	// Answered is how many partitions' calls succeeded (with several
	// partitions some may answer while another's shard is down).
	Answered int
}

// Heartbeat extends the leases still held to now+lease in one call per
// partition. When some partitions' calls fail, the result holds what the
// others answered, beside the error.
func (s *Store) Heartbeat(ctx context.Context, leases []Lease, lease time.Duration) (HeartbeatResult, error) {
	if len(leases) == 0 {
		return HeartbeatResult{}, nil
	}
	var mu sync.Mutex
	var hr HeartbeatResult
	err := s.eachPartition(len(leases), func(i int) string { return leases[i].ID }, func(p int, k keys, at []int) error {
		return s.onPartition(ctx, p, func(ctx context.Context) error { return s.heartbeatIn(ctx, k, leases, at, lease, &mu, &hr) })
	})
	// with several partitions, what the answering ones said comes back
	// with the failed ones' error
	return hr, err
}

// heartbeatIn runs Heartbeat for the leases at positions at, all in
// partition k, adding what it answers to hr under mu.
func (s *Store) heartbeatIn(ctx context.Context, k keys, leases []Lease, at []int, lease time.Duration, mu *sync.Mutex, hr *HeartbeatResult) error {
	keys := make([]string, 0, 1+len(at))
	keys = append(keys, k.active())
	args := make([]any, 0, 1+2*len(at))
	args = append(args, s.nowMS()+lease.Milliseconds())
	for _, i := range at {
		keys = append(keys, k.task(leases[i].ID))
		args = append(args, leases[i].ID, leases[i].Token)
	}
	res, err := scriptHeartbeat.Run(ctx, s.rdb, keys, args...).StringSlice()
	if err != nil {
		return scriptErr("", err)
	}
	mu.Lock()
	defer mu.Unlock()
	hr.Answered++
	cancel := false
	for _, id := range res {
		switch {
		case id == "":
			cancel = true
		case cancel:
			hr.CancelRequested = append(hr.CancelRequested, id)
		default:
			hr.Lost = append(hr.Lost, id)
		}
	}
	return nil
}

// CancelOutcome says what Cancel did.
type CancelOutcome string

const (
	// Cancelled: the task is CANCELLED now (it was PENDING or TIMEOUT).
	Cancelled CancelOutcome = "cancelled"
	// CancelRequested: the task is ACTIVE; its worker is told and ends it
	// CANCELLED promptly (or the reaper does, if the worker is gone).
	CancelRequested CancelOutcome = "requested"
)

// Cancel cancels a task: PENDING or TIMEOUT → CANCELLED at once; ACTIVE →
// a cancel request announced to the worker holding it. Any other state is a
// *task.StateError; an unknown id task.ErrNotFound.
func (s *Store) Cancel(ctx context.Context, id string) (CancelOutcome, error) {
	k := s.part(id)
	keys := []string{k.task(id), k.stateIndex(task.StatePending), k.stateIndex(task.StateTimeout),
		k.stateIndex(task.StateCancelled), k.scheduled(), k.events(), k.primary(task.PriorityHigh),
		k.primary(task.PriorityNormal), k.primary(task.PriorityLow), k.retry(),
		k.running(), k.parkIndex(), k.parkPrefix(), k.parkWake()}
	res, err := scriptCancel.Run(ctx, s.rdb, keys, s.nowMS(), k.cancelChannel(), s.cfg.EventStreamMaxLen, redisconn.PublishCommand(s.rdb)).Text()
	if err != nil {
		return "", scriptErr(id, err, task.StatePending, task.StateActive, task.StateTimeout)
	}
	if res == "REQUESTED" {
		return CancelRequested, nil
	}
	return Cancelled, nil
}

// Retry is the manual retry: a FAILED or DLQ task goes back to
// PENDING in the retry queue with retry_count 0, leaving the DLQ list (and
// its snapshot) or the scheduled set. Other states: *task.StateError.
func (s *Store) Retry(ctx context.Context, id string) error {
	k := s.part(id)
	keys := []string{k.task(id), k.stateIndex(task.StateFailed), k.stateIndex(task.StateDLQ), k.dlq(),
		k.dlqTask(id), k.scheduled(), k.stateIndex(task.StatePending), k.retry(), k.events(), k.wake(),
		k.primary(task.PriorityNormal)}
	err := scriptRetry.Run(ctx, s.rdb, keys, s.nowMS(), s.cfg.EventStreamMaxLen).Err()
	return scriptErr(id, err, task.StateFailed, task.StateDLQ)
}

// Delete removes a task and every index entry naming it. An ACTIVE task is
// refused with a *task.StateError (cancel it first: a worker holds it).
// Delete emits no lifecycle event.
func (s *Store) Delete(ctx context.Context, id string) error {
	return s.deleteIf(ctx, id, "")
}

// DeleteIf deletes task id only while it is in state; another state is a
// *task.StateError (the task is left as it is).
func (s *Store) DeleteIf(ctx context.Context, id string, state task.State) error {
	return s.deleteIf(ctx, id, state)
}

func (s *Store) deleteIf(ctx context.Context, id string, state task.State) error {
	k := s.part(id)
	keys := []string{k.task(id), k.dlqTask(id), k.dlq(), k.scheduled(),
		k.primary(task.PriorityHigh), k.primary(task.PriorityNormal), k.primary(task.PriorityLow), k.retry()}
	for _, st := range task.States {
		keys = append(keys, k.stateIndex(st))
	}
	keys = append(keys, k.running(), k.parkIndex(), k.parkPrefix(), k.parkWake())
	err := scriptDelete.Run(ctx, s.rdb, keys, string(state), s.nowMS()).Err()
	want := []task.State{task.StatePending, task.StateCompleted, task.StateFailed, task.StateDLQ, task.StateTimeout, task.StateCancelled}
	if state != "" {
		want = []task.State{state}
	}
	return scriptErr(id, err, want...)
}

// PromoteDue moves up to limit due entries of the scheduled set to their
// queues (FAILED → PENDING into the retry queue, delayed PENDING tasks into
// their primary queue; too-old FAILED tasks to the DLQ). It returns how
// many entries it handled; the scheduler calls it until that is < limit.
func (s *Store) PromoteDue(ctx context.Context, limit int) (int, error) {
	var total atomic.Int64
	err := s.allPartitions(func(_ int, k keys) error {
		keys := []string{k.scheduled(), k.stateIndex(task.StatePending), k.stateIndex(task.StateFailed),
			k.dlq(), k.stateIndex(task.StateDLQ), k.dlqPrefix(), k.events(), k.wake(),
			k.primary(task.PriorityHigh), k.primary(task.PriorityNormal), k.primary(task.PriorityLow),
			k.retry(), k.taskPrefix()}
		n, err := scriptPromote.Run(ctx, s.rdb, keys, s.nowMS(), limit, s.maxAgeMS(), s.cfg.EventStreamMaxLen).Int()
		if err != nil {
			return scriptErr("", err)
		}
		total.Add(int64(n))
		return nil
	})
	return int(total.Load()), err
}

// ReapExpired returns up to limit ACTIVE tasks whose lease has expired to
// the front of their queue (or to CANCELLED if a cancel was requested). It
// returns their ids and how many lease entries it handled: entries whose
// task is no longer ACTIVE (stale) are dropped and not in ids, so callers
// loop while handled == limit.
func (s *Store) ReapExpired(ctx context.Context, limit int) (ids []string, handled int, err error) {
	var mu sync.Mutex
	err = s.allPartitions(func(_ int, k keys) error {
		keys := []string{k.active(), k.stateIndex(task.StatePending), k.stateIndex(task.StateCancelled),
			k.events(), k.wake(), k.primary(task.PriorityHigh), k.primary(task.PriorityNormal),
			k.primary(task.PriorityLow), k.retry(), k.taskPrefix(),
			k.running(), k.parkIndex(), k.parkPrefix(), k.parkWake()}
		res, err := scriptReap.Run(ctx, s.rdb, keys, s.nowMS(), limit, s.cfg.EventStreamMaxLen).Slice()
		if err != nil {
			return scriptErr("", err)
		}
		if len(res) == 0 {
			return fmt.Errorf("store: reap: empty reply")
		}
		n, ok := res[0].(int64)
		if !ok {
			return fmt.Errorf("store: reap: unexpected reply %v", res)
		}
		mu.Lock()
		defer mu.Unlock()
		handled += int(n)
		for _, v := range res[1:] {
			ids = append(ids, str(v))
		}
		return nil
	})
	return ids, handled, err
}

// RequeueOrphaned is operator action: every ACTIVE task whose
// lease has expired goes back to its queue now (the scheduler does the same
// continuously). It returns the ids requeued or cancelled.
func (s *Store) RequeueOrphaned(ctx context.Context) ([]string, error) {
	var all []string
	for {
		ids, handled, err := s.ReapExpired(ctx, 500)
		all = append(all, ids...)
		if err != nil || handled < 500 {
			return all, err
		}
	}
}

// SweepAged dead-letters up to limit PENDING tasks waiting in a queue that
// are older than MaxTaskAge (fetch applies the rule at pickup; the
// scheduler sweeps so that tasks nobody picks up are caught too). It
// returns how many it dead-lettered; 0 when the rule is off.
func (s *Store) SweepAged(ctx context.Context, limit int) (int, error) {
	age := s.maxAgeMS()
	if age == 0 {
		return 0, nil
	}
	now := s.nowMS()
	var total atomic.Int64
	err := s.allPartitions(func(_ int, k keys) error {
		keys := []string{k.stateIndex(task.StatePending), k.dlq(), k.stateIndex(task.StateDLQ), k.dlqPrefix(),
			k.events(), k.primary(task.PriorityHigh), k.primary(task.PriorityNormal), k.primary(task.PriorityLow),
			k.retry(), k.taskPrefix(), k.scheduled(), k.parkPrefix()}
		n, err := scriptSweep.Run(ctx, s.rdb, keys, now, now-age, limit, age, s.cfg.EventStreamMaxLen).Int()
		if err != nil {
			return scriptErr("", err)
		}
		total.Add(int64(n))
		return nil
	})
	return int(total.Load()), err
}

// sanitizeCause keeps a history cause free of the history's separators.
func sanitizeCause(c string) string {
	return strings.NewReplacer(",", " ", ";", " ").Replace(c)
}

// Handoff hands the ACTIVE task held with token to the external path: it
// stays ACTIVE with the same token, Worker becomes holder, the holder's
// heartbeat no longer extends it (a heartbeat reports it lost), its lease
// deadline becomes leaseUntil, and the attempt (with its timeoutAt) is
// indexed for the orchestrator's watcher, due at checkAt (DueHandoffs).
// Refused like the other holder transitions: *task.StateError when it is
// no longer ACTIVE (the outcome came first), task.ErrLeaseLost for another
// attempt. cancelRequested reports a cancel requested before the handoff:
// the caller must tell the new holder (nobody else will).
func (s *Store) Handoff(ctx context.Context, id, token, holder string, timeoutAt, leaseUntil, checkAt time.Time) (cancelRequested bool, err error) {
	r := s.HandoffMany(ctx, []HandoffRequest{{ID: id, Token: token, Holder: holder, TimeoutAt: timeoutAt, LeaseUntil: leaseUntil, CheckAt: checkAt}})
	return r[0].CancelRequested, r[0].Err
}

// HandoffRequest is one Handoff of HandoffMany.
type HandoffRequest struct {
	ID, Token, Holder              string
	TimeoutAt, LeaseUntil, CheckAt time.Time
}

// HandoffResult is the answer to one HandoffRequest, as Handoff's.
type HandoffResult struct {
	CancelRequested bool
	Err             error
}

// HandoffMany is Handoff for several tasks in one round trip (a pipeline
// of the same script, each call atomic by itself), in order.
func (s *Store) HandoffMany(ctx context.Context, rs []HandoffRequest) []HandoffResult {
	calls := make([]redisconn.ScriptCall, len(rs))
	now := s.nowMS()
	for i, r := range rs {
		k := s.part(r.ID)
		calls[i] = redisconn.ScriptCall{Keys: []string{k.task(r.ID), k.active(), k.handoff()},
			Args: []any{now, r.Token, r.Holder, ms(r.TimeoutAt), ms(r.LeaseUntil), ms(r.CheckAt)}}
	}
	out := make([]HandoffResult, len(rs))
	for i, c := range redisconn.RunScripts(ctx, s.rdb, scriptHandoff, calls) {
		n, err := c.Int()
		if err != nil {
			out[i].Err = scriptErr(rs[i].ID, err, task.StateActive)
			continue
		}
		out[i].CancelRequested = n == 1
	}
	return out
}

// HandoffEntry is one handed-off attempt due for a check.
type HandoffEntry struct {
	ID, Token string
	// TimeoutAt is the attempt's timeout deadline.
	TimeoutAt time.Time
	// Due is when the check was due.
	Due time.Time
}

func (e HandoffEntry) member() string {
	return e.ID + " " + e.Token + " " + strconv.FormatInt(ms(e.TimeoutAt), 10)
}

// DueHandoffs returns up to limit handed-off attempts whose check time has
// come (by the store's clock), oldest first. Entries stay until
// RescheduleHandoff or DropHandoff: several watchers may see the same
// entry; the transitions they apply are guarded by state and token.
func (s *Store) DueHandoffs(ctx context.Context, limit int) ([]HandoffEntry, error) {
	var mu sync.Mutex
	var out []HandoffEntry
	err := s.allPartitions(func(_ int, k keys) error {
		zs, err := s.rdb.ZRangeByScoreWithScores(ctx, k.handoff(), &redis.ZRangeBy{
			Min: "-inf", Max: strconv.FormatInt(s.nowMS(), 10), Count: int64(limit)}).Result()
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		for _, z := range zs {
			m, _ := z.Member.(string)
			p := strings.Split(m, " ")
			if len(p) != 3 {
				continue
			}
			tms, err := strconv.ParseInt(p[2], 10, 64)
			if err != nil {
				continue
			}
			out = append(out, HandoffEntry{ID: p[0], Token: p[1], TimeoutAt: time.UnixMilli(tms).UTC(),
				Due: time.UnixMilli(int64(z.Score)).UTC()})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(s.parts) > 1 { // oldest first across the partitions, limit in all
		sort.SliceStable(out, func(i, j int) bool { return out[i].Due.Before(out[j].Due) })
		out = out[:min(len(out), limit)]
	}
	return out, nil
}

// RescheduleHandoff sets the next check of a handed-off attempt (only if
// it is still indexed).
func (s *Store) RescheduleHandoff(ctx context.Context, e HandoffEntry, at time.Time) error {
	k := s.part(e.ID)
	return s.rdb.ZAddXX(ctx, k.handoff(), redis.Z{Score: float64(ms(at)), Member: e.member()}).Err()
}

// DropHandoff removes a handed-off attempt from the index (it finished, or
// another attempt owns the task).
func (s *Store) DropHandoff(ctx context.Context, e HandoffEntry) error {
	k := s.part(e.ID)
	return s.rdb.ZRem(ctx, k.handoff(), e.member()).Err()
}

// Purge deletes up to limit tasks that have been in state (COMPLETED,
// CANCELLED or DLQ) for longer than olderThan, by the store's clock, with
// their index entries (and, for DLQ, the DLQ list entry and snapshot). It
// returns how many tasks it deleted and how many index entries it handled
// (stale entries of tasks that moved on are dropped too); the scheduler
// calls it until fewer than limit entries were handled. Other states are
// refused: they are not final (FAILED and TIMEOUT still change).
func (s *Store) Purge(ctx context.Context, state task.State, olderThan time.Duration, limit int) (deleted, handled int, err error) {
	switch state {
	case task.StateCompleted, task.StateCancelled, task.StateDLQ:
	default:
		return 0, 0, fmt.Errorf("store: purge: %s is not a final state", state)
	}
	if olderThan <= 0 || limit < 1 {
		return 0, 0, fmt.Errorf("store: purge: olderThan %s and limit %d must be positive", olderThan, limit)
	}
	var deletedN, handledN atomic.Int64
	err = s.allPartitions(func(_ int, k keys) error {
		keys := []string{k.stateIndex(state), k.taskPrefix(), k.dlq(), k.dlqPrefix()}
		res, err := scriptPurge.Run(ctx, s.rdb, keys, s.nowMS()-olderThan.Milliseconds(), limit, string(state)).Int64Slice()
		if err != nil {
			return scriptErr("", err)
		}
		if len(res) != 2 {
			return fmt.Errorf("store: purge: unexpected reply %v", res)
		}
		deletedN.Add(res[0])
		handledN.Add(res[1])
		return nil
	})
	return int(deletedN.Load()), int(handledN.Load()), err
}

// DispatchBatch is what the attempts of one DispatchMany call share: the
// task.create stream and its retention cut-off (MINID), every event's
// event_type and timestamp (the time of publishing), and the grace after
// an attempt's timeout: its lease deadline and the deadline of its
// in-flight place are its timeout + Grace, its first check the sooner of
// now + Grace and its timeout (as HandoffRequest's LeaseUntil and CheckAt
// for a dispatcher that hands off in a second step).
type DispatchBatch struct {
	Stream, MinID    string
	EventType, Stamp string
	Grace            time.Duration
}

// DispatchRequest is one attempt of DispatchMany: the handoff of the
// ACTIVE task ID held with Token to Holder, its timeout at TimeoutAt,
// together with the publication of its task.create by the external path,
// whose own keys and values the caller gives: its type's in-flight set (a
// place taken when Bound >= 0, its member "<task id> <token>") and the
// event's id and data.
type DispatchRequest struct {
	ID, Token, Holder string
	TimeoutAt         time.Time
	Inflight          string
	Bound             int
	EventID, Data     string
}

// DispatchResult is the answer to one DispatchRequest.
type DispatchResult struct {
	// Published: the event was published and the attempt handed off.
	Published bool
	// Full: its type had no free in-flight place (nothing written).
	Full bool
	// CancelRequested: a cancel was requested first (nothing written; the
	// holder cancels the attempt).
	CancelRequested bool
	// PrevToken is the task's last dispatch token before this one ("" for
	// its first dispatch); EntryID the task.create entry's id.
	PrevToken, EntryID string
	// InFlight is the type's in-flight count after the attempt, when it
	// was published or found its type full (-1 otherwise, or unbounded).
	InFlight int
	// Err is *task.StateError, task.ErrLeaseLost or task.ErrNotFound when
	// the attempt is no longer the holder's (nothing written), or a Redis
	// error.
	Err error
}

// HandoffToken is the token the task was last handed off with (its
// handoff field, written by DispatchMany and Handoff; kept when the task
// finishes): "" when it never was, or the task is gone.
func (s *Store) HandoffToken(ctx context.Context, id string) (string, error) {
	v, err := s.rdb.HGet(ctx, s.part(id).task(id), "handoff").Result()
	if errors.Is(err, redis.Nil) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("store: handoff token of %s: %w", id, err)
	}
	return v, nil
}

// CanDispatch reports whether DispatchMany serves this deployment: its
// script touches the task's keys and the protocol's streams together, so
// they must share a hash slot, as they do with one partition.
func (s *Store) CanDispatch() bool { return len(s.parts) == 1 }

// DispatchMany publishes and hands off several attempts in one script call
// (scripts/dispatch.lua), each all or nothing, in order: the event of an
// attempt goes out exactly when its handoff is written. batch is what the
// attempts share (the stream, its cut-off, the events' type and time, the
// grace). The task hash's handoff field keeps the token of its last
// dispatch (HandoffToken), hto its timeout (the completion removes the
// attempt's handoff-index entry by it). Only for a deployment of one
// partition (CanDispatch).
func (s *Store) DispatchMany(ctx context.Context, batch DispatchBatch, rs []DispatchRequest) []DispatchResult {
	out := make([]DispatchResult, len(rs))
	if len(rs) == 0 {
		return out
	}
	if !s.CanDispatch() {
		err := errors.New("store: DispatchMany needs a deployment of one partition")
		for i := range out {
			out[i].Err = err
		}
		return out
	}
	k := s.parts[0]
	// the call: EVALSHA, the keys (the indexes, the stream, then per
	// attempt its task and in-flight set), the batch's arguments, then per
	// attempt its own
	cmd := redisconn.EvalHead(scriptDispatch, 3+2*len(rs), 3+2*len(rs)+6+6*len(rs))
	cmd = append(cmd, k.active(), k.handoff(), batch.Stream)
	// a type's in-flight set, a holder and a bound repeat across a batch's
	// attempts: each is boxed once per run of equal values
	var set, holder redisconn.Boxed[string]
	var bound redisconn.Boxed[int]
	for _, r := range rs {
		cmd = append(cmd, k.task(r.ID), set.Of(r.Inflight))
	}
	cmd = append(cmd, s.nowMS(), batch.MinID, len(rs), batch.Grace.Milliseconds(), batch.EventType, batch.Stamp)
	for _, r := range rs {
		cmd = append(cmd, r.Token, holder.Of(r.Holder), ms(r.TimeoutAt), bound.Of(r.Bound), r.EventID, r.Data)
	}
	res, err := redisconn.EvalStrings(ctx, s.rdb, scriptDispatch, cmd)
	if err == nil && len(res) != len(rs) {
		err = fmt.Errorf("store: dispatch.lua answered %d results for %d attempts", len(res), len(rs))
	}
	if err != nil {
		for i := range out {
			out[i].Err = fmt.Errorf("store: dispatch: %w", err)
		}
		return out
	}
	for i, v := range res {
		out[i].InFlight = -1
		status, rest, _ := strings.Cut(v, " ")
		switch status {
		case "OK": // OK <count> <entry id> <previous token>
			count, rest, _ := strings.Cut(rest, " ")
			id, prev, _ := strings.Cut(rest, " ")
			out[i].Published, out[i].PrevToken, out[i].EntryID = true, prev, id
			out[i].InFlight = atoiOr(count, -1)
		case "FULL": // FULL <count>
			out[i].Full = true
			out[i].InFlight = atoiOr(rest, -1)
		case "CANCEL":
			out[i].CancelRequested = true
		default:
			out[i].Err = scriptErr(rs[i].ID, errors.New(v), task.StateActive)
		}
	}
	return out
}
