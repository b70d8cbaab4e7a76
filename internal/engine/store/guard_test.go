package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/task"
)

// guardOp is one transition as a caller asks for it. token is the lease
// token of the task's last attempt ("" when it never ran).
type guardOp struct {
	name string
	do   func(b *testBundle, id, token string) error
	// allowed maps the states the transition starts from to the state it
	// leads to ("" = the task is deleted).
	allowed map[task.State]task.State
}

func guardOps() []guardOp {
	return []guardOp{
		{"Complete", func(b *testBundle, id, tok string) error {
			return b.s.Complete(b.ctx, id, tok, json.RawMessage(`1`))
		}, map[task.State]task.State{task.StateActive: task.StateCompleted, task.StateTimeout: task.StateCompleted}},
		{"Fail", func(b *testBundle, id, tok string) error {
			_, err := b.s.Fail(b.ctx, id, tok, Failure{ErrorType: task.ErrTypeServiceUnavailable, Message: "503",
				RetryAt: b.clk.Now().Add(time.Minute), Attempt: 1, Worker: "w1"})
			return err
		}, map[task.State]task.State{task.StateActive: task.StateFailed, task.StateTimeout: task.StateFailed}},
		{"MarkTimeout", func(b *testBundle, id, tok string) error {
			return b.s.MarkTimeout(b.ctx, id, tok)
		}, map[task.State]task.State{task.StateActive: task.StateTimeout}},
		{"Release", func(b *testBundle, id, tok string) error {
			return b.s.Release(b.ctx, id, tok, time.Time{}, "shutdown")
		}, map[task.State]task.State{task.StateActive: task.StatePending}},
		{"CancelActive", func(b *testBundle, id, tok string) error {
			return b.s.CancelActive(b.ctx, id, tok, "cancelled")
		}, map[task.State]task.State{task.StateActive: task.StateCancelled, task.StateTimeout: task.StateCancelled}},
		{"Handoff", func(b *testBundle, id, tok string) error {
			now := b.clk.Now()
			_, err := b.s.Handoff(b.ctx, id, tok, "external:x", now.Add(time.Minute), now.Add(2*time.Minute), now.Add(time.Second))
			return err
		}, map[task.State]task.State{task.StateActive: task.StateActive}},
		{"Retry", func(b *testBundle, id, _ string) error {
			return b.s.Retry(b.ctx, id)
		}, map[task.State]task.State{task.StateFailed: task.StatePending, task.StateDLQ: task.StatePending}},
		{"Cancel", func(b *testBundle, id, _ string) error {
			_, err := b.s.Cancel(b.ctx, id)
			return err
		}, map[task.State]task.State{task.StatePending: task.StateCancelled, task.StateTimeout: task.StateCancelled,
			task.StateActive: task.StateActive}}, // ACTIVE: a request to the holder
		{"Delete", func(b *testBundle, id, _ string) error {
			return b.s.Delete(b.ctx, id)
		}, map[task.State]task.State{task.StatePending: "", task.StateCompleted: "", task.StateFailed: "",
			task.StateDLQ: "", task.StateTimeout: "", task.StateCancelled: ""}},
	}
}

// into puts a new task "g" into state s and returns the token of its last
// attempt ("" when it never ran).
func (b *testBundle) into(t *testing.T, s task.State) string { return b.put(t, "g", s) }

// put creates task id and moves it into state s (FAILED waits for a retry
// due in a minute), returning the token of its last attempt ("" when it
// never ran). No other task may be waiting in a queue (it fetches one).
func (b *testBundle) put(t *testing.T, id string, s task.State) string {
	t.Helper()
	b.enqueue(t, EnqueueRequest{ID: id})
	if s == task.StatePending {
		return ""
	}
	if s == task.StateCancelled {
		_, err := b.s.Cancel(b.ctx, id)
		require.NoError(t, err)
		return ""
	}
	tk := b.fetchOne(t)
	require.Equal(t, id, tk.ID)
	tok := tk.Lease
	var err error
	switch s {
	case task.StateCompleted:
		err = b.s.Complete(b.ctx, id, tok, nil)
	case task.StateFailed:
		_, err = b.s.Fail(b.ctx, id, tok, Failure{ErrorType: task.ErrTypeNetworkTimeout, Message: "slow",
			RetryAt: b.clk.Now().Add(time.Minute), Attempt: 1, Worker: "w1"})
	case task.StateDLQ:
		_, err = b.s.Fail(b.ctx, id, tok, Failure{ErrorType: task.ErrTypeInvalidInput, Message: "bad", Permanent: true, Attempt: 1, Worker: "w1"})
	case task.StateTimeout:
		err = b.s.MarkTimeout(b.ctx, id, tok)
	}
	require.NoError(t, err)
	require.Equal(t, s, b.state(t, id))
	return tok
}

// snapshot is everything a transition may touch: the task hash, its DLQ
// snapshot, its place in every queue and index, the counters, and the
// length of the event stream.
func (b *testBundle) snapshot(t *testing.T, id string) map[string]string {
	t.Helper()
	out := map[string]string{}
	h, err := b.rdb.HGetAll(b.ctx, b.s.parts[0].task(id)).Result()
	require.NoError(t, err)
	for k, v := range h {
		out["task."+k] = v
	}
	d, err := b.rdb.HGetAll(b.ctx, b.s.parts[0].dlqTask(id)).Result()
	require.NoError(t, err)
	for k, v := range d {
		out["dlq."+k] = v
	}
	for _, z := range []string{b.s.parts[0].active(), b.s.parts[0].scheduled(), b.s.parts[0].handoff()} {
		if sc, err := b.rdb.ZScore(b.ctx, z, id).Result(); err == nil {
			out[z] = fmt.Sprint(sc)
		}
	}
	for _, l := range []string{b.s.parts[0].primary(task.PriorityNormal), b.s.parts[0].retry(), b.s.parts[0].dlq()} {
		items, err := b.rdb.LRange(b.ctx, l, 0, -1).Result()
		require.NoError(t, err)
		out[l] = fmt.Sprint(items)
	}
	qs, err := json.Marshal(b.status(t))
	require.NoError(t, err)
	out["status"] = string(qs)
	n, err := b.rdb.XLen(b.ctx, b.s.parts[0].events()).Result()
	require.NoError(t, err)
	out["events"] = fmt.Sprint(n)
	return out
}

// requireRefused: err is the guard's refusal naming the state the task is
// in, and nothing changed.
func (b *testBundle) requireRefused(t *testing.T, err error, have task.State, before map[string]string) {
	t.Helper()
	requireState(t, err, have)
	require.Equal(t, before, b.snapshot(t, "g"), "a refused transition changes nothing")
}

// TestGuardMatrix tries every transition from every state: from a state
// the state machine allows it leads where docs/state_machine.md says (an
// arrow task.CanTransition knows) and repeating it is harmless; from any
// other state it is refused with a *task.StateError naming the state, and
// leaves the task, its queues, the counters and the event stream untouched.
func TestGuardMatrix(t *testing.T) {
	t.Parallel()
	for _, op := range guardOps() {
		for _, from := range task.States {
			t.Run(op.name+"From"+string(from), func(t *testing.T) {
				t.Parallel()
				b := setup(t)
				tok := b.into(t, from)
				before := b.snapshot(t, "g")
				to, ok := op.allowed[from]
				err := op.do(b, "g", tok)
				if !ok {
					b.requireRefused(t, err, from, before)
					return
				}
				require.NoError(t, err)
				if to != from && to != "" {
					ev, _, err := b.s.Events().Read(b.ctx, "0", 1000, 0)
					require.NoError(t, err)
					last := ev[len(ev)-1]
					require.Equal(t, "g", last.TaskID)
					require.Equal(t, from, last.From)
					require.Equal(t, to, last.To, "the transition's lifecycle event comes last")
				}
				if to == "" {
					_, err := b.s.Get(b.ctx, "g")
					require.ErrorIs(t, err, task.ErrNotFound)
					qs := b.status(t)
					for _, s := range task.States {
						require.Zero(t, qs.States[s], "no count keeps a deleted task (%s)", s)
					}
					require.ErrorIs(t, op.do(b, "g", tok), task.ErrNotFound, "deleting twice")
					return
				}
				require.Equal(t, to, b.state(t, "g"))
				if to != from {
					require.True(t, task.CanTransition(from, to), "%s → %s is not an arrow of task.CanTransition", from, to)
				}
				qs := b.status(t)
				require.Equal(t, int64(1), qs.States[to], "the counters follow the transition")
				if to != from {
					require.Zero(t, qs.States[from])
				}

				// Repeating it is safe: refused with the new state and no
				// change, or (a transition into the same state) a no-op.
				after := b.snapshot(t, "g")
				err = op.do(b, "g", tok)
				if to == from {
					require.NoError(t, err)
					require.Equal(t, to, b.state(t, "g"))
					return
				}
				if errors.Is(err, task.ErrLeaseLost) { // the new attempt's token differs
					require.Equal(t, after, b.snapshot(t, "g"))
					return
				}
				b.requireRefused(t, err, to, after)
			})
		}
	}
}
