package service_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/internal/engine/clock"
	"github.com/taskflow/taskflow/internal/engine/keyspace"
	"github.com/taskflow/taskflow/internal/engine/store"
	"github.com/taskflow/taskflow/internal/frontdoor/auth"
	"github.com/taskflow/taskflow/internal/frontdoor/service"
	"github.com/taskflow/taskflow/internal/testrig/testredis"
)

// TestSessionListingOverPartitions: with several partitions a session's
// task index is one ZSET per partition; its listing merges them — every
// task once, newest first (or oldest first), paged over the merge — and a
// deleted task leaves its partition's index.
func TestSessionListingOverPartitions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb, ns := testredis.Client(t)
	clk := clock.NewFake(time.Now().Add(-time.Hour))
	st, err := store.New(rdb, store.Config{Namespace: ns, Partitions: 3, Clock: clk})
	require.NoError(t, err)
	au, err := auth.New(rdb, auth.Config{Namespace: keyspace.MustParse(ns)})
	require.NoError(t, err)
	svc, err := service.New(service.Config{Store: st, Auth: au, Now: clk.Now})
	require.NoError(t, err)
	t.Cleanup(svc.Close)
	sess, err := au.CreateSession(ctx)
	require.NoError(t, err)
	p := auth.Principal{SessionID: sess.ID}

	var ids []string // oldest first
	for range 25 {
		clk.Advance(time.Second)
		out, err := svc.Submit(ctx, p, service.SubmitInput{TaskType: "summarize", Content: ptr("A text. To summarize.")})
		require.NoError(t, err)
		ids = append(ids, out.TaskID)
	}
	used := 0
	for _, k := range st.SessionTasksKeys(sess.ID) {
		if n, err := rdb.ZCard(ctx, k).Result(); err == nil && n > 0 {
			used++
		}
	}
	require.Greater(t, used, 1, "the test's premise: the session's tasks are in several partitions")

	list := func(order string, total int) []string {
		var got []string
		for page := 1; ; page++ {
			l, err := svc.List(ctx, p, service.ListInput{Page: page, PageSize: 7, SortOrder: order})
			require.NoError(t, err)
			require.EqualValues(t, total, l.Total)
			for _, x := range l.Tasks {
				got = append(got, x.(service.TaskView).ID)
			}
			if len(l.Tasks) < 7 {
				return got
			}
		}
	}
	newest := make([]string, len(ids))
	for i, id := range ids {
		newest[len(ids)-1-i] = id
	}
	require.Equal(t, newest, list("desc", len(ids)))
	require.Equal(t, ids, list("asc", len(ids)))

	require.NoError(t, svc.Delete(ctx, p, ids[3]))
	n, err := rdb.ZScore(ctx, st.SessionTasksKeyOf(sess.ID, ids[3]), ids[3]).Result()
	require.Error(t, err, "deleted from its partition's index (score %v)", n)
	require.Equal(t, append(append([]string{}, ids[:3]...), ids[4:]...), list("asc", len(ids)-1))
}
