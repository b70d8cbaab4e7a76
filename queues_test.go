package taskflow_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow"
	"github.com/taskflow/taskflow/task"
)

// TestQueuesPausesAndLimitsThroughTheClient: a worker serving a named
// queue, a pause that holds its tasks, a limit set and removed.
func TestQueuesPausesAndLimitsThroughTheClient(t *testing.T) {
	d := newDeployment(t)
	cfg := d.cfg
	cfg.Queues = []taskflow.QueueConfig{{Name: "emails", Weight: 2}, {Name: "default"}}
	w, err := taskflow.NewWorker(cfg)
	require.NoError(t, err)
	w.HandleFunc("email.send", func(ctx context.Context, t *task.Task) (json.RawMessage, error) {
		return json.RawMessage(`"sent"`), nil
	})
	c := d.client(t, taskflow.Config{RedisURL: d.cfg.RedisURL, Namespace: d.cfg.Namespace,
		Types: []taskflow.TypeInfo{{Name: "email.send"}}})

	require.NoError(t, c.PauseQueue(d.ctx, "emails"))
	tk, err := c.Enqueue(d.ctx, "email.send", nil, taskflow.Queue("emails"), taskflow.LimitKey("tenant-1"))
	require.NoError(t, err)
	require.Equal(t, "emails", tk.Queue)
	d.run(t, w)

	q, err := c.QueueInfo(d.ctx, "emails")
	require.NoError(t, err)
	require.True(t, q.Paused)
	require.Equal(t, int64(1), q.Pending.Normal)
	time.Sleep(300 * time.Millisecond) // the worker polls: nothing may start
	got, err := c.Get(d.ctx, tk.ID)
	require.NoError(t, err)
	require.Equal(t, task.StatePending, got.State)

	require.NoError(t, c.ResumeQueue(d.ctx, "emails"))
	done, err := c.Wait(d.ctx, tk.ID)
	require.NoError(t, err)
	require.Equal(t, task.StateCompleted, done.State)

	two := 2
	require.NoError(t, c.SetLimit(d.ctx, taskflow.Limit{Scope: taskflow.LimitKeyScope, Name: "tenant-1", Rate: 5, RatePer: time.Second, Concurrency: &two}))
	ls, err := c.Limits(d.ctx)
	require.NoError(t, err)
	require.Equal(t, []taskflow.Limit{{Scope: taskflow.LimitKeyScope, Name: "tenant-1", Rate: 5, RatePer: time.Second, Concurrency: &two}}, ls)
	deleted, err := c.DeleteLimit(d.ctx, taskflow.LimitKeyScope, "tenant-1")
	require.NoError(t, err)
	require.True(t, deleted)
	deleted, err = c.DeleteLimit(d.ctx, taskflow.LimitKeyScope, "tenant-1")
	require.NoError(t, err)
	require.False(t, deleted)
	_, err = c.QueueInfo(d.ctx, "never-used")
	require.True(t, errors.Is(err, taskflow.ErrNotFound))

	err = c.SetLimit(d.ctx, taskflow.Limit{Scope: taskflow.LimitQueue, Name: "emails"})
	var e *taskflow.Error
	require.ErrorAs(t, err, &e)
	require.True(t, errors.Is(err, taskflow.ErrInvalid))
	require.Equal(t, "rate", e.Field)
	_, err = c.Enqueue(d.ctx, "email.send", nil, taskflow.Queue("Bad Queue"))
	require.ErrorAs(t, err, &e)
	require.Equal(t, "queue", e.Field)

	list, err := c.Queues(d.ctx)
	require.NoError(t, err)
	require.Len(t, list.Queues, 2)
	require.InDelta(t, 1, list.Queues[1].CompletedPerMin, 0.01)
}
