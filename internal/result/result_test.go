package result

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/taskflow/taskflow/internal/archive"
	"github.com/taskflow/taskflow/internal/auth"
	"github.com/taskflow/taskflow/internal/clock"
	"github.com/taskflow/taskflow/internal/depend"
	"github.com/taskflow/taskflow/internal/service"
	"github.com/taskflow/taskflow/internal/store"
	"github.com/taskflow/taskflow/internal/task"
	"github.com/taskflow/taskflow/internal/testredis"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type bundle struct {
	st   *store.Store
	svc  *service.Service
	auth *auth.Authenticator
	arc  *archive.Archive
	res  *Results
	srv  *httptest.Server
}

func setup(t *testing.T) *bundle {
	t.Helper()
	rdb, ns := testredis.Client(t)
	st, err := store.New(rdb, store.Config{Namespace: ns})
	require.NoError(t, err)
	a, err := auth.New(rdb, auth.Config{Namespace: ns, AdminKey: "admin-key"})
	require.NoError(t, err)
	svc, err := service.New(service.Config{Store: st, Auth: a, BatchMax: 1, Dependencies: depend.New(st, depend.Config{Namespace: ns})})
	require.NoError(t, err)
	t.Cleanup(svc.Close)
	dbURL := os.Getenv("TASKFLOW_TEST_DATABASE_URL")
	if dbURL == "" {
		dbURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
	}
	schema := "tftest_" + strings.ReplaceAll(uuid.NewString()[:13], "-", "")
	arc, err := archive.Open(context.Background(), archive.Config{DatabaseURL: dbURL, Schema: schema, MaxConns: 2})
	require.NoError(t, err)
	t.Cleanup(func() {
		arc.Close()
		if p, err := pgxpool.New(context.Background(), dbURL); err == nil {
			_, _ = p.Exec(context.Background(), `DROP SCHEMA "`+schema+`" CASCADE`)
			p.Close()
		}
	})
	res := New(st, Config{Namespace: ns, Archive: arc, Lister: svc})
	srv := httptest.NewServer(res.Handler(a))
	t.Cleanup(srv.Close)
	return &bundle{st: st, svc: svc, auth: a, arc: arc, res: res, srv: srv}
}

func (b *bundle) submit(t *testing.T, s auth.Session, typ string) string {
	t.Helper()
	out, err := b.svc.Submit(context.Background(), auth.Principal{SessionID: s.ID}, service.SubmitInput{TaskType: typ, Params: json.RawMessage(`{}`)})
	require.NoError(t, err)
	return out.TaskID
}

func (b *bundle) get(t *testing.T, path, token string, into any) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, b.srv.URL+path, nil)
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	if into != nil {
		require.NoError(t, json.NewDecoder(resp.Body).Decode(into))
	}
	return resp.StatusCode
}

func TestGetPerStatusAndIsolation(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	sa, err := b.auth.CreateSession(ctx)
	require.NoError(t, err)
	sb, err := b.auth.CreateSession(ctx)
	require.NoError(t, err)

	pending1 := b.submit(t, sa, "report.generate")
	pending2 := b.submit(t, sa, "report.generate")
	var v View
	require.Equal(t, http.StatusOK, b.get(t, "/api/v1/results/"+pending2, sa.Token, &v))
	require.Equal(t, "pending", v.Status)
	require.NotNil(t, v.QueuePos)
	require.EqualValues(t, 2, *v.QueuePos)

	// Session B, a forged token and no token are refused.
	require.Equal(t, http.StatusNotFound, b.get(t, "/api/v1/results/"+pending1, sb.Token, nil))
	require.Equal(t, http.StatusUnauthorized, b.get(t, "/api/v1/results/"+pending1, "tfs_forged", nil))
	require.Equal(t, http.StatusUnauthorized, b.get(t, "/api/v1/results/"+pending1, "", nil))
	require.Equal(t, http.StatusOK, b.get(t, "/api/v1/results/"+pending1, "admin-key", nil))

	// Take both; complete one, fail the other for good.
	got, err := b.st.Fetch(ctx, store.FetchRequest{N: 2, WorkerID: "w", TokenPrefix: "w:1", Lease: time.Minute})
	require.NoError(t, err)
	require.Len(t, got, 2)
	require.Equal(t, http.StatusOK, b.get(t, "/api/v1/results/"+pending1, sa.Token, &v))
	require.Equal(t, "processing", v.Status)
	require.NoError(t, b.st.Complete(ctx, got[0].ID, got[0].Lease, json.RawMessage(`{"summary":"done"}`)))
	_, err = b.st.Fail(ctx, got[1].ID, got[1].Lease, store.Failure{ErrorType: "INVALID_PARAMS", Message: "bad quarter", Permanent: true, Attempt: 1})
	require.NoError(t, err)

	v = View{}
	require.Equal(t, http.StatusOK, b.get(t, "/api/v1/results/"+got[0].ID, sa.Token, &v))
	require.Equal(t, "completed", v.Status)
	require.JSONEq(t, `{"summary":"done"}`, string(v.Result))
	v = View{}
	require.Equal(t, http.StatusOK, b.get(t, "/api/v1/results/"+got[1].ID, sa.Token, &v))
	require.Equal(t, "failed", v.Status)
	require.Equal(t, task.StateDLQ, v.State)
	require.Equal(t, "INVALID_PARAMS", v.Error.Code)
	require.False(t, v.Error.WillRetry)

	// list_user_tasks with a filter; B sees none of A's.
	var list struct {
		Tasks []Item `json:"tasks"`
	}
	require.Equal(t, http.StatusOK, b.get(t, "/api/v1/results?status_filter=failed", sa.Token, &list))
	require.Len(t, list.Tasks, 1)
	require.Equal(t, got[1].ID, list.Tasks[0].TaskID)
	require.Equal(t, http.StatusOK, b.get(t, "/api/v1/results", sa.Token, &list))
	require.Len(t, list.Tasks, 2)
	require.Equal(t, http.StatusOK, b.get(t, "/api/v1/results", sb.Token, &list))
	require.Empty(t, list.Tasks)
	require.Equal(t, http.StatusBadRequest, b.get(t, "/api/v1/results?status_filter=weird", sa.Token, nil))
}

// TestArchiveReadBack: a finished task that has left Redis is answered
// from the archive, still only to its session.
func TestArchiveReadBack(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	sa, err := b.auth.CreateSession(ctx)
	require.NoError(t, err)
	sb, err := b.auth.CreateSession(ctx)
	require.NoError(t, err)
	id := b.submit(t, sa, "data.export")
	got, err := b.st.Fetch(ctx, store.FetchRequest{N: 1, WorkerID: "w", TokenPrefix: "w:1", Lease: time.Minute})
	require.NoError(t, err)
	require.NoError(t, b.st.Complete(ctx, id, got[0].Lease, json.RawMessage(`{"file_url":"file:///x.csv"}`)))
	done, err := b.st.Get(ctx, id)
	require.NoError(t, err)
	require.NoError(t, b.arc.Put(ctx, done))
	require.NoError(t, b.st.Delete(ctx, id)) // expired from Redis

	var v View
	require.Equal(t, http.StatusOK, b.get(t, "/api/v1/results/"+id, sa.Token, &v))
	require.Equal(t, "archive", v.Source)
	require.JSONEq(t, `{"file_url":"file:///x.csv"}`, string(v.Result))
	require.Equal(t, http.StatusNotFound, b.get(t, "/api/v1/results/"+id, sb.Token, nil))
	var list struct {
		Tasks []Item `json:"tasks"`
	}
	require.Equal(t, http.StatusOK, b.get(t, "/api/v1/results?status_filter=completed", sa.Token, &list))
	require.Len(t, list.Tasks, 1)
	require.True(t, list.Tasks[0].Archived)
}

// TestWaitingTask: a task submitted with depends_on is not in the store
// until its dependency completes; get_task_result answers for it (pending,
// waiting_on, no queue position) instead of 404, list_user_tasks shows
// what it waits on, and another session is still told nothing.
func TestWaitingTask(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	sa, err := b.auth.CreateSession(ctx)
	require.NoError(t, err)
	sb, err := b.auth.CreateSession(ctx)
	require.NoError(t, err)
	first := b.submit(t, sa, "report.generate")
	out, err := b.svc.Submit(ctx, auth.Principal{SessionID: sa.ID}, service.SubmitInput{TaskType: "report.generate", DependsOn: []string{first}})
	require.NoError(t, err)
	then := out.TaskID

	var v View
	require.Equal(t, http.StatusOK, b.get(t, "/api/v1/results/"+then, sa.Token, &v))
	require.Equal(t, "pending", v.Status)
	require.Equal(t, []string{first}, v.WaitingOn)
	require.Nil(t, v.QueuePos, "it is in no queue yet")
	require.Contains(t, v.Message, first)
	require.Equal(t, http.StatusNotFound, b.get(t, "/api/v1/results/"+then, sb.Token, nil))
	require.Equal(t, http.StatusOK, b.get(t, "/api/v1/results/"+then, "admin-key", nil))

	var list struct {
		Tasks []Item `json:"tasks"`
	}
	require.Equal(t, http.StatusOK, b.get(t, "/api/v1/results?status_filter=pending", sa.Token, &list))
	require.Len(t, list.Tasks, 2)
	byID := map[string]Item{}
	for _, it := range list.Tasks {
		byID[it.TaskID] = it
	}
	require.Equal(t, []string{first}, byID[then].WaitingOn)
	require.Contains(t, byID[then].Summary, "waiting for task "+first)
	require.Empty(t, byID[first].WaitingOn)
	require.Equal(t, "waiting in the queue", byID[first].Summary)
	require.Equal(t, http.StatusOK, b.get(t, "/api/v1/results", sb.Token, &list))
	require.Empty(t, list.Tasks)
}

// TestETACountsDown: a processing task's ETA is the service's last
// estimate minus the time since that report (the injected clock's), never
// negative; without a report, the timeout left since it started.
func TestETACountsDown(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	sa, err := b.auth.CreateSession(ctx)
	require.NoError(t, err)
	timeout := 300.0
	out, err := b.svc.Submit(ctx, auth.Principal{SessionID: sa.ID}, service.SubmitInput{TaskType: "report.generate", Timeout: &timeout})
	require.NoError(t, err)
	reported := out.TaskID
	got, err := b.st.Fetch(ctx, store.FetchRequest{N: 1, WorkerID: "w", TokenPrefix: "w:1", Lease: time.Minute})
	require.NoError(t, err)
	require.Len(t, got, 1)
	at := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	require.NoError(t, b.st.Client().HSet(ctx, NewKeys(b.res.cfg.Namespace).Progress(reported),
		"percent", "40", "eta_seconds", "10", "at_ms", at.UnixMilli()).Err())
	clk := clock.NewFake(at.Add(4 * time.Second))
	res := New(b.st, Config{Namespace: b.res.cfg.Namespace, Lister: b.svc, Clock: clk})
	p := auth.Principal{SessionID: sa.ID}
	v, err := res.Get(ctx, p, reported)
	require.NoError(t, err)
	require.Equal(t, "processing", v.Status)
	require.InDelta(t, 40, v.Progress.Percent, 0)
	require.InDelta(t, 6, *v.ETASeconds, 0.001)
	clk.Advance(time.Minute)
	v, err = res.Get(ctx, p, reported)
	require.NoError(t, err)
	require.Zero(t, *v.ETASeconds, "an estimate past due is 0, not negative")

	// No progress report: the timeout left since the attempt started.
	started := got[0].StartedAt
	require.NotNil(t, started)
	clk.Set(started.Add(time.Minute))
	require.NoError(t, b.st.Client().Del(ctx, NewKeys(b.res.cfg.Namespace).Progress(reported)).Err())
	v, err = res.Get(ctx, p, reported)
	require.NoError(t, err)
	require.NotNil(t, v.ETASeconds)
	require.InDelta(t, 240, *v.ETASeconds, 0.001)
}
