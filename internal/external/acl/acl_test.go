package acl

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow"
	"github.com/taskflow/taskflow/extsvc"
	"github.com/taskflow/taskflow/internal/engine/keyspace"
	"github.com/taskflow/taskflow/internal/engine/store"
	"github.com/taskflow/taskflow/internal/engine/worker"
	"github.com/taskflow/taskflow/internal/external/dispatch"
	"github.com/taskflow/taskflow/internal/external/handoff"
	"github.com/taskflow/taskflow/internal/external/notify"
	"github.com/taskflow/taskflow/internal/external/outcome"
	"github.com/taskflow/taskflow/internal/external/protocol"
	"github.com/taskflow/taskflow/internal/frontdoor/auth"
	"github.com/taskflow/taskflow/internal/testrig/externaltest"
	"github.com/taskflow/taskflow/internal/testrig/testredis"
	"github.com/taskflow/taskflow/task"
)

// TestACLUsers runs the whole external path on a redis-server of the
// test's own as the ACL users of ProcessRules and ServiceRules, and checks
// that those users cannot touch anything else.
func TestACLUsers(t *testing.T) {
	t.Parallel()
	srv := testredis.StartServer(t)
	admin := srv.Client()
	ctx := context.Background()
	const ns = "acltest"
	setUser := func(name, pass string, rules []string) {
		args := []any{"ACL", "SETUSER", name, "reset", "on", ">" + pass}
		for _, r := range rules {
			args = append(args, r)
		}
		require.NoError(t, admin.Do(ctx, args...).Err())
	}
	setUser("taskflow", "pw1", ProcessRules(keyspace.MustParse(ns), 1))
	setUser("report-svc", "pw2", ServiceRules(keyspace.MustParse(ns)))
	require.NoError(t, admin.Set(ctx, "other:secret", "x", 0).Err())

	app := redis.NewClient(&redis.Options{Addr: srv.Addr, Username: "taskflow", Password: "pw1"})
	defer app.Close()
	svcClient := redis.NewClient(&redis.Options{Addr: srv.Addr, Username: "report-svc", Password: "pw2"})
	defer svcClient.Close()

	st, err := store.New(app, store.Config{Namespace: ns})
	require.NoError(t, err)
	note, err := notify.New(app, notify.Config{Namespace: keyspace.MustParse(ns)})
	require.NoError(t, err)
	au, err := auth.New(app, auth.Config{Namespace: keyspace.MustParse(ns)})
	require.NoError(t, err)
	sess, err := au.CreateSession(ctx)
	require.NoError(t, err)

	b := &externaltest.Bundle{Redis: app, NS: ns, Namespace: keyspace.MustParse(ns), Store: st, Notifier: note,
		Streams: protocol.NewKeys(keyspace.MustParse(ns))}
	defer b.Stop()
	disp := dispatch.New(st, dispatch.Config{})
	mux := taskflow.NewMux()
	mux.Handle("acl.run", disp)
	w, err := worker.New(st, mux, worker.Config{Concurrency: 4, HeartbeatInterval: 50 * time.Millisecond, ShutdownGrace: 100 * time.Millisecond})
	require.NoError(t, err)
	b.Run(t, "worker", w.Run)
	o, err := outcome.New(st, note, nil, outcome.Config{Block: 50 * time.Millisecond})
	require.NoError(t, err)
	b.Run(t, "outcome consumer", o.Run)
	wt, err := handoff.New(st, note, nil, handoff.Config{})
	require.NoError(t, err)
	b.Run(t, "watcher", wt.Run)
	svc, err := extsvc.New(svcClient, extsvc.Config{Name: "report-svc", Namespace: ns, Block: 50 * time.Millisecond})
	require.NoError(t, err)
	svc.HandleFunc("acl.run", func(ctx context.Context, tk *extsvc.Task) (json.RawMessage, error) {
		if err := tk.Progress(ctx, 10, "", 0); err != nil {
			return nil, err
		}
		return json.RawMessage(`{"ok":true}`), nil
	})
	b.Run(t, "service", svc.Run)

	tk, err := st.Enqueue(ctx, store.EnqueueRequest{Type: "acl.run", SessionID: sess.ID, Timeout: time.Minute})
	require.NoError(t, err)
	b.WaitState(t, tk.ID, task.StateCompleted)
	b.WaitNotes(t, sess.ID, 1)

	// Outside the namespace, and dangerous commands: refused.
	for _, c := range []*redis.Client{app, svcClient} {
		err := c.Get(ctx, "other:secret").Err()
		require.Error(t, err)
		require.True(t, strings.Contains(err.Error(), "NOPERM"), "%v", err)
		err = c.FlushAll(ctx).Err()
		require.Error(t, err)
		require.Contains(t, err.Error(), "NOPERM")
		err = c.Keys(ctx, "*").Err()
		require.Error(t, err)
	}
	// The service user cannot remove or forge work, nor trim outcomes.
	for _, c := range []struct {
		what string
		cmd  *redis.IntCmd
	}{
		{"DEL task.create", svcClient.Del(ctx, b.Streams.Create())},
		{"DEL task.completed", svcClient.Del(ctx, b.Streams.Completed())},
		{"XTRIM task.create", svcClient.XTrimMaxLen(ctx, b.Streams.Create(), 0)},
		{"XDEL task.failed", svcClient.XDel(ctx, b.Streams.Failed(), "0-1")},
		{"DEL the notifications", svcClient.Del(ctx, "{"+ns+"}:user:stream:notifications:"+sess.ID)},
	} {
		require.Error(t, c.cmd.Err(), c.what)
		require.Contains(t, c.cmd.Err().Error(), "NOPERM", c.what)
	}
	err = svcClient.XAdd(ctx, &redis.XAddArgs{Stream: b.Streams.Create(), Values: []any{"event_id", "x"}}).Err()
	require.Error(t, err, "XADD task.create")
	require.Contains(t, err.Error(), "NOPERM")
	n, err := admin.XLen(ctx, b.Streams.Create()).Result()
	require.NoError(t, err)
	require.EqualValues(t, 1, n, "task.create untouched")
	// what a service needs is allowed
	_, err = svcClient.XAdd(ctx, &redis.XAddArgs{Stream: b.Streams.Progress(), Values: []any{"event_id", "x"}}).Result()
	require.NoError(t, err, "XADD task.progress")
	require.NoError(t, svcClient.HSet(ctx, b.Streams.Service("report-svc"), "types", "report.generate").Err(), "HSET its registry entry")
	require.ErrorContains(t, svcClient.Del(ctx, b.Streams.Service("report-svc")).Err(), "NOPERM",
		"no DEL: registrations expire, so a stopping instance cannot unregister its live siblings")

	// The service user cannot read tasks or sessions.
	err = svcClient.HGetAll(ctx, "{"+ns+"}:task:"+tk.ID).Err()
	require.Error(t, err)
	require.Contains(t, err.Error(), "NOPERM")
	v, err := admin.Get(ctx, "other:secret").Result()
	require.NoError(t, err)
	require.Equal(t, "x", v)
}
