package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/internal/engine/clock"
	"github.com/taskflow/taskflow/internal/engine/keyspace"
	"github.com/taskflow/taskflow/internal/engine/store"
	"github.com/taskflow/taskflow/internal/external/protocol"
	"github.com/taskflow/taskflow/internal/external/resultview"
	"github.com/taskflow/taskflow/internal/frontdoor/auth"
	"github.com/taskflow/taskflow/internal/frontdoor/service"
	"github.com/taskflow/taskflow/task"
)

// submitAs submits a noop task of session s through the service.
func (b *testBundle) submitAs(s auth.Session, in service.SubmitInput) string {
	b.t.Helper()
	if in.TaskType == "" {
		in.TaskType = "noop"
	}
	out, err := b.svc.Submit(context.Background(), auth.Principal{SessionID: s.ID}, in)
	require.NoError(b.t, err)
	return out.TaskID
}

// view decodes a get_task_result answer.
func view(t *testing.T, r resp) resultview.View {
	t.Helper()
	require.Equal(t, http.StatusOK, r.code, string(r.raw))
	var v resultview.View
	require.NoError(t, json.Unmarshal(r.raw, &v))
	return v
}

func items(t *testing.T, r resp) []resultview.Item {
	t.Helper()
	require.Equal(t, http.StatusOK, r.code, string(r.raw))
	var l service.ResultList
	require.NoError(t, json.Unmarshal(r.raw, &l))
	return l.Tasks
}

func TestResultPerStatusAndIsolation(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	sa, sb := b.session(), b.session()

	pending1 := b.submitAs(sa, service.SubmitInput{})
	pending2 := b.submitAs(sa, service.SubmitInput{})
	v := view(t, b.do("GET", "/api/v1/results/"+pending2, sa.Token, nil))
	require.Equal(t, "pending", v.Status)
	require.NotNil(t, v.QueuePos)
	require.EqualValues(t, 2, *v.QueuePos)

	// Session B is told what a missing task gets; a forged token and no
	// token are refused; the admin sees it.
	r := b.do("GET", "/api/v1/results/"+pending1, sb.Token, nil)
	missing := b.do("GET", "/api/v1/results/"+pending1[:len(pending1)-4]+"0000", sa.Token, nil)
	require.Equal(t, http.StatusNotFound, r.code, string(r.raw))
	require.Equal(t, http.StatusNotFound, missing.code, string(missing.raw))
	require.Equal(t, "task_not_found", r.errCode())
	require.Equal(t, missing.errCode(), r.errCode())
	require.Equal(t, http.StatusUnauthorized, b.do("GET", "/api/v1/results/"+pending1, "tfs_forged", nil).code)
	require.Equal(t, http.StatusUnauthorized, b.do("GET", "/api/v1/results/"+pending1, "", nil).code)
	require.Equal(t, http.StatusOK, b.do("GET", "/api/v1/results/"+pending1, adminKey, nil).code)
	r = b.do("GET", "/api/v1/results/"+pending1+"?verbose=1", sa.Token, nil)
	require.Equal(t, http.StatusBadRequest, r.code)
	require.Equal(t, "verbose", r.errField())

	// Take both; complete one, fail the other for good.
	got := b.activate(2)
	require.Len(t, got, 2)
	require.Equal(t, "processing", view(t, b.do("GET", "/api/v1/results/"+got[0].ID, sa.Token, nil)).Status)
	require.NoError(t, b.st.Complete(ctx, got[0].ID, got[0].Lease, json.RawMessage(`{"summary":"done"}`)))
	_, err := b.st.Fail(ctx, got[1].ID, got[1].Lease, store.Failure{ErrorType: "INVALID_PARAMS", Message: "bad quarter", Permanent: true, Attempt: 1})
	require.NoError(t, err)

	v = view(t, b.do("GET", "/api/v1/results/"+got[0].ID, sa.Token, nil))
	require.Equal(t, "completed", v.Status)
	require.JSONEq(t, `{"summary":"done"}`, string(v.Result))
	v = view(t, b.do("GET", "/api/v1/results/"+got[1].ID, sa.Token, nil))
	require.Equal(t, "failed", v.Status)
	require.Equal(t, task.StateDLQ, v.State)
	require.Equal(t, "INVALID_PARAMS", v.Error.Code)
	require.False(t, v.Error.WillRetry)

	// list_user_tasks with a filter; B sees none of A's.
	l := items(t, b.do("GET", "/api/v1/results?status_filter=failed", sa.Token, nil))
	require.Len(t, l, 1)
	require.Equal(t, got[1].ID, l[0].TaskID)
	require.Len(t, items(t, b.do("GET", "/api/v1/results", sa.Token, nil)), 2)
	require.Len(t, items(t, b.do("GET", "/api/v1/results?limit=1", sa.Token, nil)), 1)
	require.Empty(t, items(t, b.do("GET", "/api/v1/results", sb.Token, nil)))

	for _, tc := range []struct{ query, field, code string }{
		{"status_filter=weird", "status_filter", "invalid_parameter"},
		{"limit=0", "limit", "invalid_parameter"},
		{"limit=1001", "limit", "invalid_parameter"},
		{"limit=x", "limit", "invalid_parameter"},
		{"limit=1&limit=2", "limit", "invalid_parameter"},
		{"session_id=" + sa.ID, "session_id", "unknown_parameter"},
	} {
		r := b.do("GET", "/api/v1/results?"+tc.query, sa.Token, nil)
		require.Equal(t, http.StatusBadRequest, r.code, "%s: %s", tc.query, r.raw)
		require.Equal(t, tc.field, r.errField(), tc.query)
		require.Equal(t, tc.code, r.errCode(), tc.query)
	}
	r = b.do("GET", "/api/v1/results", adminKey, nil)
	require.Equal(t, http.StatusBadRequest, r.code, "the admin has no session to list: %s", r.raw)
}

// TestResultArchiveReadBack: a finished task that has left Redis is
// answered from the archive, still only to its session.
func TestResultArchiveReadBack(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{archive: true})
	ctx := context.Background()
	sa, sb := b.session(), b.session()
	id := b.submitAs(sa, service.SubmitInput{})
	got := b.activate(1)
	require.NoError(t, b.st.Complete(ctx, id, got[0].Lease, json.RawMessage(`{"file_url":"file:///x.csv"}`)))
	done, err := b.st.Get(ctx, id)
	require.NoError(t, err)
	require.NoError(t, b.arc.Put(ctx, done))
	require.NoError(t, b.st.Delete(ctx, id)) // expired from Redis

	v := view(t, b.do("GET", "/api/v1/results/"+id, sa.Token, nil))
	require.Equal(t, "archive", v.Source)
	require.JSONEq(t, `{"file_url":"file:///x.csv"}`, string(v.Result))
	require.Equal(t, http.StatusNotFound, b.do("GET", "/api/v1/results/"+id, sb.Token, nil).code)
	l := items(t, b.do("GET", "/api/v1/results?status_filter=completed", sa.Token, nil))
	require.Len(t, l, 1)
	require.True(t, l[0].Archived)
	require.Empty(t, items(t, b.do("GET", "/api/v1/results", sb.Token, nil)))
}

// TestResultWaitingTask: a task submitted with depends_on is not in the
// store until its dependency completes; get_task_result answers for it
// (pending, waiting_on, no queue position) instead of 404,
// list_user_tasks shows what it waits on, and another session is still
// told nothing.
func TestResultWaitingTask(t *testing.T) {
	t.Parallel()
	b := setup(t)
	sa, sb := b.session(), b.session()
	first := b.submitAs(sa, service.SubmitInput{})
	then := b.submitAs(sa, service.SubmitInput{DependsOn: []string{first}})

	v := view(t, b.do("GET", "/api/v1/results/"+then, sa.Token, nil))
	require.Equal(t, "pending", v.Status)
	require.Equal(t, []string{first}, v.WaitingOn)
	require.Nil(t, v.QueuePos, "it is in no queue yet")
	require.Contains(t, v.Message, first)
	r := b.do("GET", "/api/v1/results/"+then, sb.Token, nil)
	require.Equal(t, http.StatusNotFound, r.code)
	require.Equal(t, "task_not_found", r.errCode())
	require.Equal(t, http.StatusOK, b.do("GET", "/api/v1/results/"+then, adminKey, nil).code)

	l := items(t, b.do("GET", "/api/v1/results?status_filter=pending", sa.Token, nil))
	require.Len(t, l, 2)
	byID := map[string]resultview.Item{}
	for _, it := range l {
		byID[it.TaskID] = it
	}
	require.Equal(t, []string{first}, byID[then].WaitingOn)
	require.Contains(t, byID[then].Summary, "waiting for task "+first)
	require.Empty(t, byID[first].WaitingOn)
	require.Equal(t, "waiting in the queue", byID[first].Summary)
	require.Empty(t, items(t, b.do("GET", "/api/v1/results", sb.Token, nil)))
}

// TestResultETACountsDown: a processing task's ETA is the service's last
// estimate minus the time since that report (the injected clock's), never
// negative; without a report, the timeout left since it started.
func TestResultETACountsDown(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	clk := clock.NewFake(at.Add(4 * time.Second))
	b := setup(t, setupOpts{resultClock: clk})
	ctx := context.Background()
	sa := b.session()
	timeout := 300.0
	reported := b.submitAs(sa, service.SubmitInput{Timeout: &timeout})
	got := b.activate(1)
	require.Len(t, got, 1)
	require.NoError(t, b.st.Client().HSet(ctx, resultview.NewKeys(keyspace.MustParse(b.ns)).Progress(reported),
		"percent", "40", "eta_seconds", "10", "at_ms", at.UnixMilli()).Err())
	v := view(t, b.do("GET", "/api/v1/results/"+reported, sa.Token, nil))
	require.Equal(t, "processing", v.Status)
	require.InDelta(t, 40, v.Progress.Percent, 0)
	require.InDelta(t, 6, *v.ETASeconds, 0.001)
	clk.Advance(time.Minute)
	v = view(t, b.do("GET", "/api/v1/results/"+reported, sa.Token, nil))
	require.Zero(t, *v.ETASeconds, "an estimate past due is 0, not negative")

	// No progress report: the timeout left since the attempt started.
	started := got[0].StartedAt
	require.NotNil(t, started)
	clk.Set(started.Add(time.Minute))
	require.NoError(t, b.st.Client().Del(ctx, resultview.NewKeys(keyspace.MustParse(b.ns)).Progress(reported)).Err())
	v = view(t, b.do("GET", "/api/v1/results/"+reported, sa.Token, nil))
	require.NotNil(t, v.ETASeconds)
	require.InDelta(t, 240, *v.ETASeconds, 0.001)
}

// TestResultFile: a file a service stored for a task (extsvc's PutFile
// writes this hash) is served to the task's session with its content type
// as an attachment; another session, a missing name and a bad name are
// refused without saying whose task it is.
func TestResultFile(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	sa, sb := b.session(), b.session()
	id := b.submitAs(sa, service.SubmitInput{})
	k := protocol.NewKeys(keyspace.MustParse(b.ns))
	csv := "quarter,revenue\nQ4,60\n"
	require.NoError(t, b.st.Client().HSet(ctx, k.Artifact(id, id+".csv"), "content_type", "text/csv; charset=utf-8",
		"size", len(csv), "sha256", "abc123", "data", csv).Err())
	path := protocol.FileURL(id, id+".csv")

	r := b.do("GET", path, sa.Token, nil)
	require.Equal(t, http.StatusOK, r.code, string(r.raw))
	require.Equal(t, csv, string(r.raw))
	require.Equal(t, "text/csv; charset=utf-8", r.hdr.Get("Content-Type"))
	require.Equal(t, `attachment; filename=`+id+`.csv`, r.hdr.Get("Content-Disposition"))
	require.Equal(t, "nosniff", r.hdr.Get("X-Content-Type-Options"))
	require.Equal(t, `"abc123"`, r.hdr.Get("ETag"))
	require.Equal(t, http.StatusOK, b.do("GET", path, adminKey, nil).code, "the admin may read any")

	r = b.do("GET", path, sb.Token, nil)
	require.Equal(t, http.StatusNotFound, r.code)
	require.Equal(t, "task_not_found", r.errCode(), "another session's task is a missing one")
	r = b.do("GET", protocol.FileURL(id, "other.csv"), sa.Token, nil)
	require.Equal(t, http.StatusNotFound, r.code)
	require.Equal(t, "file_not_found", r.errCode())
	r = b.do("GET", protocol.FileURL(id, ".hidden"), sa.Token, nil)
	require.Equal(t, http.StatusBadRequest, r.code)
	require.Equal(t, "name", r.errField())
	r = b.do("GET", path, "", nil)
	require.Equal(t, http.StatusUnauthorized, r.code)
}
