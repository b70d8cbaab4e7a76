package orchestrator

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/extsvc"
	"github.com/taskflow/taskflow/internal/auth"
	"github.com/taskflow/taskflow/internal/keyspace"
	"github.com/taskflow/taskflow/internal/notify"
	"github.com/taskflow/taskflow/internal/store"
	"github.com/taskflow/taskflow/internal/stream"
	"github.com/taskflow/taskflow/internal/task"
	"github.com/taskflow/taskflow/internal/testredis"
	"github.com/taskflow/taskflow/internal/worker"
)

// TestACLUsers runs the whole external path on a redis-server of the
// test's own as the ACL users of ACLRules and ServiceACLRules, and checks
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
	setUser("taskflow", "pw1", ACLRules(keyspace.MustParse(ns)))
	setUser("report-svc", "pw2", ServiceACLRules(keyspace.MustParse(ns)))
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

	b := &bundle{rdb: app, ns: ns, st: st, note: note, sk: stream.NewKeys(keyspace.MustParse(ns)), k: newKeys(keyspace.MustParse(ns))}
	defer b.stop()
	disp := NewDispatcher(st, DispatcherConfig{})
	mux := worker.NewMux()
	disp.Register(mux, "acl.run")
	w, err := worker.New(st, mux, worker.Config{Concurrency: 4, HeartbeatInterval: 50 * time.Millisecond, ShutdownGrace: 100 * time.Millisecond})
	require.NoError(t, err)
	b.run(t, "worker", w.Run, nil)
	o, err := New(st, note, nil, Config{Block: 50 * time.Millisecond})
	require.NoError(t, err)
	b.run(t, "orchestrator", o.Run, nil)
	svc, err := extsvc.New(svcClient, extsvc.Config{Name: "report-svc", Namespace: ns, Block: 50 * time.Millisecond})
	require.NoError(t, err)
	svc.HandleFunc("acl.run", func(ctx context.Context, tk *extsvc.Task) (json.RawMessage, error) {
		if err := tk.Progress(ctx, 10, "", 0); err != nil {
			return nil, err
		}
		return json.RawMessage(`{"ok":true}`), nil
	})
	b.run(t, "service", svc.Run, nil)

	tk, err := st.Enqueue(ctx, store.EnqueueRequest{Type: "acl.run", SessionID: sess.ID, Timeout: time.Minute})
	require.NoError(t, err)
	b.waitState(t, tk.ID, task.StateCompleted)
	b.waitNotes(t, sess.ID, 1)

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
		{"DEL task.create", svcClient.Del(ctx, b.sk.Create())},
		{"DEL task.completed", svcClient.Del(ctx, b.sk.Completed())},
		{"XTRIM task.create", svcClient.XTrimMaxLen(ctx, b.sk.Create(), 0)},
		{"XDEL task.failed", svcClient.XDel(ctx, b.sk.Failed(), "0-1")},
		{"DEL the notifications", svcClient.Del(ctx, "{"+ns+"}:user:stream:notifications:"+sess.ID)},
	} {
		require.Error(t, c.cmd.Err(), c.what)
		require.Contains(t, c.cmd.Err().Error(), "NOPERM", c.what)
	}
	err = svcClient.XAdd(ctx, &redis.XAddArgs{Stream: b.sk.Create(), Values: []any{"event_id", "x"}}).Err()
	require.Error(t, err, "XADD task.create")
	require.Contains(t, err.Error(), "NOPERM")
	n, err := admin.XLen(ctx, b.sk.Create()).Result()
	require.NoError(t, err)
	require.EqualValues(t, 1, n, "task.create untouched")
	// what a service needs is allowed
	_, err = svcClient.XAdd(ctx, &redis.XAddArgs{Stream: b.sk.Progress(), Values: []any{"event_id", "x"}}).Result()
	require.NoError(t, err, "XADD task.progress")
	require.NoError(t, svcClient.HSet(ctx, b.sk.Service("report-svc"), "types", "report.generate").Err(), "HSET its registry entry")
	require.ErrorContains(t, svcClient.Del(ctx, b.sk.Service("report-svc")).Err(), "NOPERM",
		"no DEL: registrations expire, so a stopping instance cannot unregister its live siblings")

	// The service user cannot read tasks or sessions.
	err = svcClient.HGetAll(ctx, "{"+ns+"}:task:"+tk.ID).Err()
	require.Error(t, err)
	require.Contains(t, err.Error(), "NOPERM")
	v, err := admin.Get(ctx, "other:secret").Result()
	require.NoError(t, err)
	require.Equal(t, "x", v)
}
