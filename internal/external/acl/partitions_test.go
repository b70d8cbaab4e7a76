package acl

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/internal/engine/keyspace"
	"github.com/taskflow/taskflow/internal/engine/redisconn"
	"github.com/taskflow/taskflow/internal/engine/store"
	"github.com/taskflow/taskflow/internal/testrig/testredis"
	"github.com/taskflow/taskflow/task"
)

// TestProcessRulesCoverThePartitions: the processes' user of a deployment
// of three partitions can do the store's whole round (layout check,
// enqueue into every partition, fetch, cancel over a partition's channel,
// complete, read every partition's events), and the rules of one
// partition would not let it.
func TestProcessRulesCoverThePartitions(t *testing.T) {
	t.Parallel()
	srv := testredis.StartServer(t)
	admin := srv.Client()
	ctx := context.Background()
	const ns = "aclparts"
	setUser := func(name string, rules []string) {
		args := []any{"ACL", "SETUSER", name, "reset", "on", ">pw"}
		for _, r := range rules {
			args = append(args, r)
		}
		require.NoError(t, admin.Do(ctx, args...).Err())
	}
	setUser("three", ProcessRules(keyspace.MustParse(ns), 3))
	setUser("one", ProcessRules(keyspace.MustParse(ns), 1))

	narrow := redis.NewClient(&redis.Options{Addr: srv.Addr, Username: "one", Password: "pw"})
	defer narrow.Close()
	st1, err := store.New(narrow, store.Config{Namespace: ns, Partitions: 3})
	require.NoError(t, err)
	_, err = st1.EnqueueBatch(ctx, []store.EnqueueRequest{{Type: "noop"}, {Type: "noop"}, {Type: "noop"}, {Type: "noop"}})
	require.ErrorContains(t, err, "NOPERM", "one partition's rules do not reach the others")
	require.NoError(t, admin.Do(ctx, "ACL", "LOG", "RESET").Err())

	app := redis.NewClient(&redis.Options{Addr: srv.Addr, Username: "three", Password: "pw"})
	defer app.Close()
	st, err := store.New(app, store.Config{Namespace: ns, Partitions: 3})
	require.NoError(t, err)
	require.NoError(t, st.CheckLayout(ctx))
	var reqs []store.EnqueueRequest
	for range 30 {
		reqs = append(reqs, store.EnqueueRequest{Type: "noop"})
	}
	created, err := st.EnqueueBatch(ctx, reqs)
	require.NoError(t, err)
	parts := map[int]bool{}
	for _, tk := range created {
		parts[st.PartitionOf(tk.ID)] = true
	}
	require.Len(t, parts, 3)

	sub := redisconn.Subscribe(ctx, app, st.CancelChannels()...)
	defer sub.Close()
	_, err = sub.Receive(ctx)
	require.NoError(t, err)
	got, err := st.Fetch(ctx, store.FetchRequest{N: 30, WorkerID: "w", TokenPrefix: "t", Lease: time.Minute})
	require.NoError(t, err)
	require.Len(t, got, 30)
	out, err := st.Cancel(ctx, got[0].ID)
	require.NoError(t, err)
	require.Equal(t, store.CancelRequested, out)
	select {
	case m := <-sub.Channel():
		require.Equal(t, got[0].ID, m.Payload)
	case <-time.After(5 * time.Second):
		t.Fatal("no cancel request on the task's partition channel")
	}
	var cs []store.Completion
	for _, tk := range got {
		cs = append(cs, store.Completion{ID: tk.ID, Token: tk.Lease})
	}
	errs, err := st.CompleteBatch(ctx, cs)
	require.NoError(t, err)
	for _, e := range errs {
		require.NoError(t, e)
	}
	evs, _, err := st.Events().Read(ctx, "0", 1000, 0)
	require.NoError(t, err)
	completed := 0
	for _, e := range evs {
		if e.To == task.StateCompleted {
			completed++
		}
	}
	require.Equal(t, 30, completed)
	log, err := admin.Do(ctx, "ACL", "LOG").Slice()
	require.NoError(t, err)
	require.Empty(t, log, "nothing the processes' user did was refused")
}
