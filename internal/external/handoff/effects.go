package handoff

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/taskflow/taskflow/internal/external/dispatch"
	"github.com/taskflow/taskflow/internal/external/notify"
	"github.com/taskflow/taskflow/internal/external/protocol"
	"github.com/taskflow/taskflow/task"
)

//go:embed scripts/publish_timeout.lua
var publishTimeoutLua string

var publishTimeoutScript = redis.NewScript(publishTimeoutLua)

// markerTTL is how long a timeout marker lives: the retention of the
// streams, beyond which no attempt's entry is still due.
const markerTTL = 7 * 24 * time.Hour

// publishOnce appends the task.timeout e of the attempt (taskID, token)
// unless it was published before; it reports whether it wrote.
func (w *Watcher) publishOnce(ctx context.Context, taskID, token string, e protocol.Event) (bool, error) {
	args := []any{int64(markerTTL / time.Second), protocol.MinID(w.cfg.Now(), w.cfg.Retention)}
	args = append(args, e.Values()...)
	err := publishTimeoutScript.Run(ctx, w.rdb, []string{w.k.timeoutPublished(taskID, token), w.sk.Timeout()}, args...).Err()
	if errors.Is(err, redis.Nil) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("handoff: publish %s: %w", e.Type, err)
	}
	return true, nil
}

// stale reports whether a transition error means the attempt is no longer
// the task's (another attempt owns it, it is finished or gone): the check
// has nothing left to do.
func stale(err error) bool {
	return errors.Is(err, task.ErrLeaseLost) || errors.Is(err, task.ErrWrongState) || errors.Is(err, task.ErrNotFound)
}

// leave frees the in-flight place of t's attempt with token tok (see
// dispatch.Config.InFlight).
func (w *Watcher) leave(ctx context.Context, t *task.Task, tok string) error {
	return dispatch.Release(ctx, w.rdb, w.ns, t.Type, t.ID, tok)
}

func (w *Watcher) archive(ctx context.Context, t *task.Task) error {
	if w.arc == nil {
		return nil
	}
	if err := w.arc.Put(ctx, t); err != nil {
		return fmt.Errorf("handoff: archive %s: %w", t.ID, err)
	}
	return nil
}

// notify tells t's session about kind for the attempt with token tok, once
// (the notification id is derived from kind, task and token).
func (w *Watcher) notify(ctx context.Context, t *task.Task, tok string, kind notify.Kind, msg, action string) error {
	if w.note == nil || t.SessionID == "" {
		return nil
	}
	_, err := w.note.Notify(ctx, t.SessionID, notify.Notification{NotificationID: notify.StableID(kind, t.ID, tok),
		Type: kind, TaskID: t.ID, TaskType: t.Type, Message: msg, Action: action, Priority: string(t.Priority)})
	if err != nil && !errors.Is(err, notify.ErrNoSession) {
		return err
	}
	return nil
}
