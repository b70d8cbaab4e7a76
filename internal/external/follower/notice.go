package follower

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/taskflow/taskflow/internal/engine/eventlog"
	"github.com/taskflow/taskflow/internal/engine/store"
	"github.com/taskflow/taskflow/internal/external/notify"
	"github.com/taskflow/taskflow/internal/tasktypes"
	"github.com/taskflow/taskflow/task"
)

// NoticeConfig configures an InProcessNotifier.
type NoticeConfig struct {
	// External lists the task types external services perform: the
	// outcome consumer notifies those itself, so they are skipped (but for a
	// cancel while PENDING or TIMEOUT, which it does not see). Default none.
	External []string
	// Types gives each type's completion notification text
	// (tasktypes.Registry.ReadyMessage); its external types are skipped as
	// External's are. Default nil.
	Types *tasktypes.Registry
	// Since is where a first run (no cursor saved yet) starts: tasks that
	// finished before it are not announced, so deploying the notifier does
	// not replay the whole capped event stream to the sessions. Default
	// Now() when Run starts.
	Since time.Time
	// Logger defaults to a discarding logger.
	Logger *slog.Logger
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// InProcessNotifier tells a session that one of its tasks run by in-process
// handlers (summarize, noop, sleep, plan, any type that is not external)
// has finished, in the format the outcome consumer (internal/external/outcome) uses
// for external tasks: COMPLETED → task_completed ("ready", retrieve_result),
// DLQ → task_failed with the last error (view_error), CANCELLED →
// task_cancelled. It follows the store's lifecycle events from its own
// cursor ({ns}:agent:notice:cursor; see follower for the capped stream's
// gaps, swept from the finished-task indexes). Each notification's id is
// notify.StableID(kind, task, finish time in ms), written once, so a
// replayed event, a gap's sweep or several notifiers at once never notify
// twice. Tasks without a session are skipped, and so are external types'
// tasks, which the outcome consumer announces, except those that ended off its
// path (finishedOffTheExternalPath: cancelled or dead-lettered while no
// attempt ran), of which no outcome reaches the outcome consumer.
type InProcessNotifier struct {
	f     *follower
	note  *notify.Notifier
	ext   map[string]bool
	types *tasktypes.Registry
}

// finishedOffTheExternalPath says whether t, of an external type, ended
// where the outcome consumer does not see it, so that no outcome of a service
// announces it:
//   - cancelled while PENDING (never dispatched, or waiting for a retry) or
//     TIMEOUT (store.Cancel), or by the reaper (a cancel requested while
//     the handed-off lease ran out, cause lease_expired); the outcome consumer
//     announces a cancel of a running attempt itself;
//   - dead-lettered while PENDING (too old at pickup or by the age sweep),
//     or by the retry promotion (FAILED long enough to pass the max age
//     when its retry came due: cause max_age, later than the failure).
//     The outcome consumer's own failures write FAILED and DLQ in one
//     transition, at the same instant.
func finishedOffTheExternalPath(t *task.Task) bool {
	n := len(t.StateHistory)
	if n == 0 {
		return false
	}
	last := t.StateHistory[n-1]
	if last.To != t.State {
		return false
	}
	switch t.State {
	case task.StateCancelled:
		return last.From == task.StatePending || last.From == task.StateTimeout ||
			(last.From == task.StateActive && last.Cause == "lease_expired")
	case task.StateDLQ:
		if last.From == task.StatePending {
			return true
		}
		return last.From == task.StateFailed && last.Cause == "max_age" && n >= 2 &&
			t.StateHistory[n-2].At.Before(last.At)
	}
	return false
}

// NewInProcessNotifier returns the notifier of st's namespace.
func NewInProcessNotifier(st *store.Store, note *notify.Notifier, cfg NoticeConfig) *InProcessNotifier {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	n := &InProcessNotifier{note: note, ext: map[string]bool{}, types: cfg.Types}
	for _, t := range cfg.External {
		n.ext[t] = true
	}
	if cfg.Types != nil {
		for _, t := range cfg.Types.Names() {
			if cfg.Types.IsExternal(t) {
				n.ext[t] = true
			}
		}
	}
	f := newFollower(st, "notifier", newKeys(st.Namespace()).noticeCursor(), cfg.Logger)
	f.start = func(context.Context) (string, error) {
		since := cfg.Since
		if since.IsZero() {
			since = cfg.Now()
		}
		// entries from since's millisecond on, in every stream
		return f.reader.At(strconv.FormatInt(max(since.UnixMilli()-1, 0), 10) + "-0"), nil
	}
	f.want = func(e eventlog.Event) bool {
		return e.SessionID != "" && (!n.ext[e.TaskType] || e.To == task.StateCancelled || e.To == task.StateDLQ)
	}
	f.handle = n.announce
	n.f = f
	return n
}

// Gaps counts the times the notifier found events trimmed before it read
// them (and swept the finished-task indexes instead).
func (n *InProcessNotifier) Gaps() int64 { return n.f.gaps.Load() }

// OnGap makes fn run at each gap too (Metrics.Gap counts them); call it
// before Run.
func (n *InProcessNotifier) OnGap(fn func()) { n.f.onGap = fn }

// Run notifies until ctx ends.
func (n *InProcessNotifier) Run(ctx context.Context) error { return n.f.run(ctx) }

// announce notifies the session of each finished in-process task of ts
// (as it is now: a task retried out of the DLQ and completed since is
// announced once, as completed).
func (n *InProcessNotifier) announce(ctx context.Context, ts []*task.Task) error {
	for _, t := range ts {
		if t.SessionID == "" || (n.ext[t.Type] && !finishedOffTheExternalPath(t)) {
			continue
		}
		var kind notify.Kind
		var msg, action string
		switch t.State {
		case task.StateCompleted:
			kind, msg, action = notify.KindCompleted, n.types.ReadyMessage(ctx, t.Type, t.Params), "retrieve_result"
		case task.StateDLQ:
			kind, msg, action = notify.KindFailed, fmt.Sprintf("Your %s task failed: %s", t.Type, t.LastError), "view_error"
		case task.StateCancelled:
			kind, msg, action = notify.KindCancelled, fmt.Sprintf("Your %s task was cancelled.", t.Type), "none"
		default:
			continue // moved on since (retried): its next finish is announced
		}
		// The finish's time (the transition's updated_at, the event's at)
		// names this finish: the same one read twice gets the same id.
		finish := "finished@" + strconv.FormatInt(t.UpdatedAt.UnixMilli(), 10)
		_, err := n.note.Notify(ctx, t.SessionID, notify.Notification{NotificationID: notify.StableID(kind, t.ID, finish),
			Type: kind, TaskID: t.ID, TaskType: t.Type, Message: msg, Action: action, Priority: string(t.Priority)})
		if err != nil && !errors.Is(err, notify.ErrNoSession) {
			return err
		}
	}
	return nil
}
