package service_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/taskflow/taskflow/internal/engine/keyspace"
	"github.com/taskflow/taskflow/internal/engine/store"
	"github.com/taskflow/taskflow/internal/frontdoor/auth"
	"github.com/taskflow/taskflow/internal/frontdoor/service"
	"github.com/taskflow/taskflow/internal/tasktypes"
	"github.com/taskflow/taskflow/internal/testrig/testredis"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type bundle struct {
	svc *service.Service
	st  *store.Store
	au  *auth.Authenticator
}

func setup(t *testing.T, cfg service.Config) *bundle {
	t.Helper()
	rdb, ns := testredis.Client(t)
	st, err := store.New(rdb, store.Config{Namespace: ns})
	require.NoError(t, err)
	au, err := auth.New(rdb, auth.Config{Namespace: keyspace.MustParse(ns)})
	require.NoError(t, err)
	cfg.Store, cfg.Auth = st, au
	svc, err := service.New(cfg)
	require.NoError(t, err)
	t.Cleanup(svc.Close)
	return &bundle{svc: svc, st: st, au: au}
}

func ptr[T any](v T) *T { return &v }

// TestConcurrentSubmitsAreBatched: many concurrent submits all land, each
// once, owned by their session, whatever batches they were written in.
func TestConcurrentSubmitsAreBatched(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, service.Config{BatchMax: 32, BatchWorkers: 2})
	sess, err := b.au.CreateSession(ctx)
	require.NoError(t, err)
	p := auth.Principal{SessionID: sess.ID}

	const n = 500
	ids := make(chan string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			who := p
			if i%5 == 0 {
				who = auth.Principal{Admin: true}
			}
			out, err := b.svc.Submit(ctx, who, service.SubmitInput{TaskType: "summarize", Content: ptr("A text. To summarize.")})
			require.NoError(t, err)
			ids <- out.TaskID
		})
	}
	wg.Wait()
	close(ids)
	seen := map[string]bool{}
	for id := range ids {
		require.False(t, seen[id], "duplicate id %s", id)
		seen[id] = true
	}
	require.Len(t, seen, n)
	qs, err := b.svc.QueueStatus(ctx, auth.Principal{Admin: true})
	require.NoError(t, err)
	require.EqualValues(t, n, qs.Queues.Primary)
	list, err := b.svc.List(ctx, p, service.ListInput{PageSize: 1000})
	require.NoError(t, err)
	require.EqualValues(t, n-n/5, list.Total, "the session lists exactly its own tasks")
}

func TestRulesWithoutHTTP(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, service.Config{Types: mustTypes(t, tasktypes.Type{Name: "summarize"}, tasktypes.Type{Name: "noop"})})
	s1, err := b.au.CreateSession(ctx)
	require.NoError(t, err)
	s2, err := b.au.CreateSession(ctx)
	require.NoError(t, err)
	p1, p2 := auth.Principal{SessionID: s1.ID}, auth.Principal{SessionID: s2.ID}
	admin, nobody := auth.Principal{Admin: true}, auth.Principal{}

	out, err := b.svc.Submit(ctx, p1, service.SubmitInput{TaskType: "noop"})
	require.NoError(t, err)

	// another session's task is answered as a missing one: same kind,
	// code, field and wording
	_, err = b.svc.Get(ctx, p2, out.TaskID)
	var se, missing *service.Error
	require.ErrorAs(t, err, &se)
	_, err = b.svc.Get(ctx, p1, "no-such-"+out.TaskID[8:])
	require.ErrorAs(t, err, &missing)
	require.Equal(t, service.KindNotFound, se.Kind)
	require.Equal(t, missing.Code, se.Code)
	require.Equal(t, missing.Field, se.Field)
	require.Equal(t, strings.Replace(missing.Message, "no-such-"+out.TaskID[8:], out.TaskID, 1), se.Message)
	_, err = b.svc.Get(ctx, nobody, out.TaskID)
	require.ErrorAs(t, err, &se)
	require.Equal(t, service.KindUnauthenticated, se.Kind)
	_, err = b.svc.Get(ctx, admin, out.TaskID)
	require.NoError(t, err)
	_, err = b.svc.Get(ctx, p1, "no-such-task")
	require.ErrorIs(t, err, service.ErrNotFound)

	_, err = b.svc.QueueStatus(ctx, p1)
	require.ErrorIs(t, err, service.ErrForbidden)
	_, err = b.svc.RequeueOrphaned(ctx, p1)
	require.ErrorIs(t, err, service.ErrForbidden)

	_, err = b.svc.Submit(ctx, p1, service.SubmitInput{TaskType: "mystery"})
	require.ErrorAs(t, err, &se)
	require.Equal(t, "unknown_task_type", se.Code)
	require.Equal(t, "task_type", se.Field)
	require.Contains(t, se.Message, "noop, summarize")

	_, err = b.svc.BreakerAction(ctx, admin, false, "", 0)
	require.ErrorAs(t, err, &se)
	require.Equal(t, "breaker_control_unavailable", se.Code)
	require.False(t, errors.Is(err, service.ErrNotFound))
}

func mustTypes(t *testing.T, types ...tasktypes.Type) *tasktypes.Registry {
	t.Helper()
	r, err := tasktypes.New(tasktypes.Config{Local: types})
	require.NoError(t, err)
	return r
}
