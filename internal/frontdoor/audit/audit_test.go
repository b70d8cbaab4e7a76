package audit

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/taskflow/taskflow/internal/engine/keyspace"
	"github.com/taskflow/taskflow/internal/testrig/testredis"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Entries come back newest first, a page at a time, filtered by actor;
// entries older than the retention are trimmed as new ones are written.
func TestRecordListAndRetention(t *testing.T) {
	t.Parallel()
	rdb, ns := testredis.Client(t)
	ctx := context.Background()
	l, err := New(rdb, Config{Namespace: keyspace.MustParse(ns), Retention: time.Hour})
	require.NoError(t, err)
	for i := range 5 {
		actor := "oncall"
		if i%2 == 1 {
			actor = "lead"
		}
		require.NoError(t, l.Record(ctx, Entry{Actor: actor, Role: "operator", Action: "POST /api/v1/tasks/{task_id}/retry",
			Target: fmt.Sprintf("task_id=t%d", i), Status: 200, Client: "127.0.0.1"}))
	}
	es, next, err := l.List(ctx, Filter{Limit: 2})
	require.NoError(t, err)
	require.Len(t, es, 2)
	require.Equal(t, "task_id=t4", es[0].Target)
	require.Equal(t, "task_id=t3", es[1].Target)
	require.Equal(t, 200, es[0].Status)
	require.WithinDuration(t, time.Now(), es[0].At, time.Minute)
	es, next, err = l.List(ctx, Filter{Limit: 2, Before: next})
	require.NoError(t, err)
	require.Equal(t, []string{"task_id=t2", "task_id=t1"}, []string{es[0].Target, es[1].Target})
	es, next, err = l.List(ctx, Filter{Limit: 2, Before: next})
	require.NoError(t, err)
	require.Len(t, es, 1)
	require.Empty(t, next, "the end")

	es, _, err = l.List(ctx, Filter{Actor: "oncall"})
	require.NoError(t, err)
	require.Len(t, es, 3)
	for _, e := range es {
		require.Equal(t, "oncall", e.Actor)
	}
	_, _, err = l.List(ctx, Filter{Before: "nope"})
	require.Error(t, err)
	_, _, err = l.List(ctx, Filter{Limit: 1001})
	require.Error(t, err)

}

// An entry older than the retention (here: one written long ago) is
// trimmed when the next is recorded; a recent one stays.
func TestRetentionTrims(t *testing.T) {
	t.Parallel()
	rdb, ns := testredis.Client(t)
	ctx := context.Background()
	key := streamKey(keyspace.MustParse(ns))
	old := time.Now().Add(-2 * time.Hour).UnixMilli()
	require.NoError(t, rdb.XAdd(ctx, &redis.XAddArgs{Stream: key, ID: fmt.Sprintf("%d-0", old), Values: []any{"actor", "ancient"}}).Err())
	recent := time.Now().Add(-30 * time.Minute).UnixMilli()
	require.NoError(t, rdb.XAdd(ctx, &redis.XAddArgs{Stream: key, ID: fmt.Sprintf("%d-0", recent), Values: []any{"actor", "recent"}}).Err())
	l, err := New(rdb, Config{Namespace: keyspace.MustParse(ns), Retention: time.Hour})
	require.NoError(t, err)
	require.NoError(t, l.Record(ctx, Entry{Actor: "lead", Action: "DELETE /api/v1/keys/{name}", Status: 200}))
	es, _, err := l.List(ctx, Filter{})
	require.NoError(t, err)
	var actors []string
	for _, e := range es {
		actors = append(actors, e.Actor)
	}
	require.Equal(t, []string{"lead", "recent"}, actors)
}
