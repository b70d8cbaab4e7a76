package taskflow_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow"
	"github.com/taskflow/taskflow/task"
)

func TestClientUniqueAndIdempotent(t *testing.T) {
	t.Parallel()
	d := newDeployment(t)
	c := d.client(t, taskflow.Config{RedisURL: d.cfg.RedisURL, Namespace: d.cfg.Namespace, Types: []taskflow.TypeInfo{{Name: "report.build"}}})

	t.Run("UniqueKey", func(t *testing.T) {
		var dup bool
		first, err := c.Enqueue(d.ctx, "report.build", map[string]int{"n": 1}, taskflow.UniqueKey("r-1", time.Hour), taskflow.Duplicate(&dup))
		require.NoError(t, err)
		require.False(t, dup)
		again, err := c.Enqueue(d.ctx, "report.build", map[string]int{"n": 2}, taskflow.UniqueKey("r-1", 0), taskflow.Duplicate(&dup))
		require.NoError(t, err)
		require.True(t, dup)
		require.Equal(t, first.ID, again.ID)
		require.Equal(t, task.StatePending, again.State)
		require.JSONEq(t, `{"n":1}`, string(again.Params), "the existing task, whole")
	})

	t.Run("IdempotencyKey", func(t *testing.T) {
		var dup bool
		first, err := c.Enqueue(d.ctx, "report.build", map[string]int{"n": 3}, taskflow.IdempotencyKey("i-1"))
		require.NoError(t, err)
		again, err := c.Enqueue(d.ctx, "report.build", map[string]int{"n": 3}, taskflow.IdempotencyKey("i-1"), taskflow.Duplicate(&dup))
		require.NoError(t, err)
		require.True(t, dup)
		require.Equal(t, first.ID, again.ID)
		_, err = c.Enqueue(d.ctx, "report.build", map[string]int{"n": 4}, taskflow.IdempotencyKey("i-1"))
		require.ErrorIs(t, err, taskflow.ErrInvalid)
		var e *taskflow.Error
		require.ErrorAs(t, err, &e)
		require.Equal(t, "idempotency_key_reused", e.Code)
	})

	t.Run("EnqueueBatch", func(t *testing.T) {
		reqs := []taskflow.Request{
			{Type: "report.build", Params: map[string]int{"n": 5}},
			{Type: "report.build", Options: []taskflow.Option{taskflow.Priority("urgent")}},
			{Type: "report.build", Options: []taskflow.Option{taskflow.UniqueKey("r-1", 0)}},
		}
		res, err := c.EnqueueBatch(d.ctx, reqs, "b-1")
		require.NoError(t, err)
		require.Len(t, res, 3)
		require.NoError(t, res[0].Err)
		require.Equal(t, task.StatePending, res[0].Task.State)
		require.ErrorIs(t, res[1].Err, taskflow.ErrInvalid)
		require.Nil(t, res[1].Task)
		require.True(t, res[2].Duplicate)
		again, err := c.EnqueueBatch(d.ctx, reqs, "b-1")
		require.NoError(t, err)
		require.Equal(t, res[0].Task.ID, again[0].Task.ID, "a repeat creates nothing")
	})
}
