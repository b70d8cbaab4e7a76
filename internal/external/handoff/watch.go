package handoff

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/taskflow/taskflow/internal/engine/redisconn"
	"github.com/taskflow/taskflow/internal/engine/store"
	"github.com/taskflow/taskflow/internal/external/notify"
	"github.com/taskflow/taskflow/internal/external/protocol"
	"github.com/taskflow/taskflow/internal/platform/seconds"
	"github.com/taskflow/taskflow/task"
)

// The checks of the watcher, and which signal means what:
//
//   - before its timeout, an ACTIVE attempt whose type no live service
//     serves (no entry of the list of live services, kept alive by the
//     services' heartbeats, lists it) at a check — the first after the
//     dispatcher's Grace, then every ServiceGrace — is requeued without
//     spending a retry (ACTIVE → PENDING, due after ServiceGrace, cause
//     service_unavailable), like a task waiting for an open breaker;
//   - the attempt's timeout passes (its entry in the handoff index is due)
//     → ACTIVE → TIMEOUT, task.timeout published, the session
//     told the task still runs; a late outcome still completes it;
//   - a TIMEOUT attempt (the service was alive, or the timeout came first)
//     whose type no live service serves at a check, every ServiceGrace → a
//     task.failed with
//     SERVICE_UNAVAILABLE (retryable) is published on the service's behalf
//     and applied like any failure: retried with backoff under a new token,
//     or dead-lettered when the retries are spent;
//   - a cancel request (the store's cancel channel) → task.cancel for the
//     services; when the attempt is due and still not cancelled by its
//     service → CANCELLED by the watcher;
//   - no orchestrator at all: the handed-off lease (timeout + the
//     dispatcher's Grace) expires and the scheduler's reaper requeues the
//     task (ACTIVE → PENDING, no retry spent); the old token's outcome is
//     then ignored.
//
// Several watchers may run (one per `taskflow orchestrator`): every
// change is a guarded transition of the store (state + token) or an event
// published at most once per token.

// Tick handles the handed-off attempts that are due (at most 50 batches
// of 100), trims the streams when TrimInterval has passed, and returns how
// many attempts it looked at.
func (w *Watcher) Tick(ctx context.Context) (int, error) {
	total := 0
	var errs []error
	if err := w.trimDue(ctx); err != nil {
		errs = append(errs, err)
	}
	live := map[string]bool{}
	for range 50 {
		es, err := w.st.DueHandoffs(ctx, 100)
		if err != nil {
			return total, err
		}
		for _, e := range es {
			// one failing entry (it stays due) must not hold up the others
			if err := w.check(ctx, e, live); err != nil {
				errs = append(errs, fmt.Errorf("task %s: %w", e.ID, err))
			}
		}
		total += len(es)
		if len(es) < 100 {
			break
		}
	}
	return total, errors.Join(errs...)
}

// check looks at one handed-off attempt that is due: gone, finished or
// another attempt's (dropped), a cancel the service did not confirm (ended
// here), running (is a service alive to run it?), overdue (TIMEOUT), or
// TIMEOUT (its notice owed; failed on the service's behalf when no
// service is left).
func (w *Watcher) check(ctx context.Context, e store.HandoffEntry, live map[string]bool) error {
	t, err := w.st.Get(ctx, e.ID)
	if errors.Is(err, task.ErrNotFound) {
		return w.drop(ctx, e)
	}
	if err != nil {
		return err
	}
	if t.Lease != e.Token || !t.HandedOff || (t.State != task.StateActive && t.State != task.StateTimeout) {
		return w.dropFinished(ctx, t, e)
	}
	if t.CancelRequested && t.State == task.StateActive {
		return w.endUnconfirmedCancel(ctx, t, e)
	}
	now := w.cfg.Now()
	next := now.Add(w.cfg.ServiceGrace)
	var done bool
	switch {
	case t.State == task.StateActive && now.Before(e.TimeoutAt):
		done, err = w.checkRunning(ctx, t, e, live, now)
		if e.TimeoutAt.Before(next) {
			next = e.TimeoutAt
		}
	case t.State == task.StateActive:
		done, err = w.markOverdue(ctx, t, e)
	case t.State == task.StateTimeout:
		done, err = w.checkTimedOut(ctx, t, e, live, now)
	}
	if err != nil || done {
		return err
	}
	w.clearSuspect(e)
	return w.st.RescheduleHandoff(ctx, e, next)
}

// dropFinished forgets the entry of an attempt that is over (the task
// finished, or another attempt owns it).
func (w *Watcher) dropFinished(ctx context.Context, t *task.Task, e store.HandoffEntry) error {
	if err := w.leave(ctx, t, e.Token); err != nil {
		return err
	}
	if t.State == task.StateCancelled {
		w.publishCancel(ctx, t.ID) // cancelled while TIMEOUT: the service may still run it
	}
	return w.drop(ctx, e)
}

// endUnconfirmedCancel ends here a cancel the service did not confirm in
// time, and tells the session.
func (w *Watcher) endUnconfirmedCancel(ctx context.Context, t *task.Task, e store.HandoffEntry) error {
	if err := w.st.CancelActive(ctx, t.ID, e.Token, "cancelled (service did not confirm)"); err != nil && !stale(err) {
		return err
	}
	w.publishCancel(ctx, t.ID)
	t, err := w.st.Get(ctx, e.ID)
	if err != nil {
		return err
	}
	if t.State == task.StateCancelled {
		if err := w.leave(ctx, t, e.Token); err != nil {
			return err
		}
		if err := w.archive(ctx, t); err != nil {
			return err
		}
		if err := w.notify(ctx, t, e.Token, notify.KindCancelled, fmt.Sprintf("Your %s task was cancelled.", t.Type), "none"); err != nil {
			return err
		}
	}
	return w.drop(ctx, e)
}

// checkRunning: a running attempt that is not overdue needs a live
// service; without one (confirmed once more after ServiceGrace/5) it is
// requeued without spending a retry, to be dispatched again after
// ServiceGrace (as a task waits for an open breaker). done: the entry was
// rescheduled or dropped here.
func (w *Watcher) checkRunning(ctx context.Context, t *task.Task, e store.HandoffEntry, live map[string]bool, now time.Time) (done bool, err error) {
	ok, err := w.serviceAlive(ctx, t.Type, live)
	if err != nil || ok {
		return false, err
	}
	if w.suspect(e, now) {
		return true, w.st.RescheduleHandoff(ctx, e, now.Add(w.cfg.ServiceGrace/5))
	}
	err = w.st.Release(ctx, t.ID, e.Token, now.Add(w.cfg.ServiceGrace), "service_unavailable "+t.Type)
	if err != nil && !stale(err) {
		return true, err
	}
	if err := w.leave(ctx, t, e.Token); err != nil {
		return true, err
	}
	w.cfg.Logger.Warn("no live service for a dispatched task: requeued", "task_id", t.ID, "task_type", t.Type)
	return true, w.drop(ctx, e)
}

// markOverdue marks an overdue running attempt TIMEOUT and publishes its
// task.timeout (the session is told it is still running). done: the
// outcome came first (the next check drops the entry).
func (w *Watcher) markOverdue(ctx context.Context, t *task.Task, e store.HandoffEntry) (done bool, err error) {
	if err := w.st.MarkTimeout(ctx, t.ID, e.Token); err != nil {
		if stale(err) {
			return true, nil
		}
		return true, err
	}
	// on a failed publish the entry stays due: the next tick publishes it
	return false, w.publishTimeout(ctx, t, e.Token, attemptTimeout(t, e))
}

// checkTimedOut: a TIMEOUT attempt's notice is owed if the process that
// marked it died (or its publish failed) before task.timeout was written:
// published now (once). With no live service left (confirmed once more)
// it is failed on the service's behalf (transient: retried).
func (w *Watcher) checkTimedOut(ctx context.Context, t *task.Task, e store.HandoffEntry, live map[string]bool, now time.Time) (done bool, err error) {
	if err := w.publishTimeout(ctx, t, e.Token, attemptTimeout(t, e)); err != nil {
		return true, err
	}
	ok, err := w.serviceAlive(ctx, t.Type, live)
	if err != nil || ok {
		return err != nil, err
	}
	if w.suspect(e, now) {
		return true, w.st.RescheduleHandoff(ctx, e, now.Add(w.cfg.ServiceGrace/5))
	}
	return false, w.failOnBehalf(ctx, t, e.Token)
}

// trimDue trims every agent stream to Retention when TrimInterval has
// passed since the last trim (by the injected clock). Exact XTRIM MINID:
// the retention holds by time even for a stream no one writes to.
func (w *Watcher) trimDue(ctx context.Context) error {
	now := w.cfg.Now()
	w.mu.Lock()
	due := !now.Before(w.nextTrim)
	if due {
		w.nextTrim = now.Add(w.cfg.TrimInterval)
	}
	w.mu.Unlock()
	if !due {
		return nil
	}
	minID := protocol.MinID(now, w.cfg.Retention)
	var errs []error
	for _, k := range w.sk.All() {
		if err := w.rdb.XTrimMinID(ctx, k, minID).Err(); err != nil {
			errs = append(errs, fmt.Errorf("trim %s: %w", k, err))
		}
	}
	return errors.Join(errs...)
}

// suspect records that e's type had no live service at now and reports
// whether this is the first such check: a verdict is confirmed by a second
// check ServiceGrace/5 later (6 s by default), so the gap while one of a
// service's consumers stops and another re-registers (≤ one heartbeat,
// 2 s) does not count as a dead service.
func (w *Watcher) suspect(e store.HandoffEntry, now time.Time) (first bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	k := e.ID + " " + e.Token
	if _, seen := w.suspects[k]; seen {
		delete(w.suspects, k)
		return false
	}
	w.suspects[k] = now
	return true
}

func (w *Watcher) drop(ctx context.Context, e store.HandoffEntry) error {
	w.clearSuspect(e)
	return w.st.DropHandoff(ctx, e)
}

func (w *Watcher) clearSuspect(e store.HandoffEntry) {
	w.mu.Lock()
	delete(w.suspects, e.ID+" "+e.Token)
	w.mu.Unlock()
}

// publishTimeout publishes the attempt's task.timeout unless it was
// published before (the marker is written with the event, in one script).
// Marking the task TIMEOUT and publishing are two steps: a TIMEOUT task
// whose event is missing is published by the watcher's next check of it.
// attemptTimeout is the timeout the dispatcher set for the attempt: the
// task's own, else the default it applied (from the handed-off deadline).
func attemptTimeout(t *task.Task, e store.HandoffEntry) time.Duration {
	if t.Timeout > 0 || t.StartedAt == nil {
		return t.Timeout
	}
	return e.TimeoutAt.Sub(*t.StartedAt).Round(10 * time.Millisecond)
}

func (w *Watcher) publishTimeout(ctx context.Context, t *task.Task, token string, limit time.Duration) error {
	now := w.cfg.Now()
	elapsed := now.Sub(t.CreatedAt)
	if t.StartedAt != nil {
		elapsed = now.Sub(*t.StartedAt)
	}
	e, err := protocol.New(protocol.TypeTimeout, now, protocol.TimeoutData{
		TaskID: t.ID, Status: "timeout", ElapsedMS: elapsed.Milliseconds(),
		Message: fmt.Sprintf("Task exceeded timeout of %s seconds", seconds.Format(limit)),
	})
	if err != nil {
		return err
	}
	wrote, err := w.publishOnce(ctx, t.ID, token, e)
	if err != nil {
		return fmt.Errorf("timeout event not published: %w", err)
	}
	if wrote {
		w.cfg.Logger.Warn("Task timeout", "task_id", t.ID, "elapsed", elapsed.Milliseconds())
	}
	return nil
}

// failOnBehalf publishes the task.failed a dead service can no longer
// send; the consumer applies it (once per token) like any failure.
func (w *Watcher) failOnBehalf(ctx context.Context, t *task.Task, token string) error {
	retryable := true
	e, err := protocol.New(protocol.TypeFailed, w.cfg.Now(), protocol.FailedData{
		TaskID: t.ID, Status: "failed", FailedBy: "agent", Token: token,
		Error: protocol.ErrorInfo{Code: "SERVICE_UNAVAILABLE", Retryable: &retryable,
			Message: fmt.Sprintf("no live service serves task type %s", t.Type)},
	})
	if err != nil {
		return err
	}
	if _, err := w.pub.Publish(ctx, w.sk.Failed(), e); err != nil {
		return err
	}
	w.cfg.Logger.Warn("no live service for an overdue task: failed on its behalf", "task_id", t.ID, "task_type", t.Type)
	return nil
}

// serviceAlive says whether a registered service (its registry entry is
// kept alive by its heartbeat) serves typ; live caches answers per tick.
func (w *Watcher) serviceAlive(ctx context.Context, typ string, live map[string]bool) (bool, error) {
	if ok, seen := live[typ]; seen {
		return ok, nil
	}
	names, err := w.rdb.SMembers(ctx, w.sk.Services()).Result()
	if err != nil {
		return false, err
	}
	for _, n := range names {
		types, err := w.rdb.HGet(ctx, w.sk.Service(n), "types").Result()
		if err != nil {
			continue // expired: that service is gone
		}
		for _, ty := range strings.Split(types, ",") {
			live[ty] = true
		}
	}
	ok := live[typ]
	live[typ] = ok
	return ok, nil
}

func (w *Watcher) publishCancel(ctx context.Context, id string) {
	e, err := protocol.New(protocol.TypeCancel, w.cfg.Now(), protocol.CancelData{TaskID: id, Reason: "cancelled"})
	if err == nil {
		_, err = w.pub.Publish(ctx, w.sk.Cancel(), e)
	}
	if err != nil {
		w.cfg.Logger.Warn("cancel event not published", "task_id", id, "err", err)
	}
}

// forwardCancels follows the store's cancel channels (one per partition)
// and tells the services of the cancel requests of handed-off attempts (a
// worker holding an in-process task does the same for its own).
func (w *Watcher) forwardCancels(ctx context.Context) {
	err := redisconn.ListenAll(ctx, w.rdb, w.st.CancelChannels(), 0, nil, func(id string) {
		t, err := w.st.Get(ctx, id)
		if err != nil || !t.HandedOff || t.State != task.StateActive {
			return
		}
		w.publishCancel(ctx, t.ID)
	})
	if err != nil {
		w.cfg.Logger.Warn("cancel forwarder stopped", "err", err)
	}
}
