package handoff

import (
	"context"
	"time"

	"github.com/taskflow/taskflow/internal/engine/keyspace"
	"github.com/taskflow/taskflow/task"
)

// PublishTimeout publishes the attempt's task.timeout as a check of a
// TIMEOUT attempt does (once per attempt).
func PublishTimeout(ctx context.Context, w *Watcher, t *task.Task, token string, limit time.Duration) error {
	return w.publishTimeout(ctx, t, token, limit)
}

// TimeoutPublishedKey is the marker of the attempt's published task.timeout.
func TimeoutPublishedKey(ns keyspace.Namespace, taskID, token string) string {
	return newKeys(ns).timeoutPublished(taskID, token)
}
