package planapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/internal/plan"
	"github.com/taskflow/taskflow/internal/planapi"
	"github.com/taskflow/taskflow/internal/task"
	"github.com/taskflow/taskflow/internal/testredis"
)

// nullScore writes P.media_age_penalty_weight (unset: null) into
// final_score, a non-nullable key: the plan's own computation fails.
const nullScore = `{"schema_version":1,"plan_name":"null_score","nodes":[
 {"node_id":"v","op":"core::viewer","inputs":[],"params":{"endpoint":"ep_0001"}},
 {"node_id":"s","op":"core::vm","inputs":["v"],"params":{"expr_id":"e","out_key":2001}}],
 "expr_table":{"e":{"op":"param_ref","param_id":1}},"outputs":["s"]}`

// service serves nullScore and follows from its own directory on an
// engine reading redisURL.
func service(t *testing.T, redisURL, prefix string, cfg planapi.Config) (*planapi.Service, string) {
	t.Helper()
	eng, err := plan.New(plan.Config{RedisURL: redisURL, KeyPrefix: prefix})
	require.NoError(t, err)
	dir := t.TempDir()
	for name, src := range map[string]string{"null_score": nullScore, "follows": follows} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name+".plan.json"), []byte(src), 0o600))
	}
	cfg.PlanDir, cfg.DefaultDeadline = dir, 5*time.Second
	svc, err := planapi.New(eng, cfg)
	require.NoError(t, err)
	mux := http.NewServeMux()
	mux.Handle(planapi.Route, svc.Handler())
	srv := httptest.NewServer(mux)
	t.Cleanup(func() {
		srv.Close()
		require.NoError(t, eng.Close())
	})
	return svc, srv.URL
}

func postRaw(t *testing.T, url, name, body string) (int, string, string) {
	t.Helper()
	resp, err := http.Post(url+"/api/v1/plans/"+name+"/execute", "application/json", strings.NewReader(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var e struct {
		Error struct{ Code, Message, Field string } `json:"error"`
	}
	require.NoError(t, json.Unmarshal(raw, &e), string(raw))
	return resp.StatusCode, e.Error.Code, e.Error.Message
}

// TestStatusByCause: a failure of the plan's own computation on this
// request is a 422 and fails its task for good; an unreachable Redis is a
// 502 and its task is retried; a body over the limit is a 413.
func TestStatusByCause(t *testing.T) {
	t.Parallel()
	c, ns := testredis.Client(t)
	_, err := plan.Seed(context.Background(), c, ns+":", plan.Demo())
	require.NoError(t, err)
	svc, url := service(t, testredis.URL(), ns+":", planapi.Config{MaxBodyBytes: 256})

	code, ecode, msg := postRaw(t, url, "null_score", `{"user_id":1}`)
	require.Equal(t, http.StatusUnprocessableEntity, code, msg)
	require.Equal(t, "plan_failed", ecode)
	require.Contains(t, msg, "null written to non-nullable key 'final_score'")
	// The same request with the param set succeeds: the request was at fault.
	resp, err := http.Post(url+"/api/v1/plans/null_score/execute", "application/json",
		strings.NewReader(`{"user_id":1,"param_overrides":{"media_age_penalty_weight":0.5}}`))
	require.NoError(t, err)
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, string(raw))
	require.Contains(t, string(raw), `{"id":1,"fields":{"final_score":0.5,"country":"US"}}`)

	code, ecode, _ = postRaw(t, url, "follows", `{"user_id":1,"request_id":"`+strings.Repeat("x", 300)+`"}`)
	require.Equal(t, http.StatusRequestEntityTooLarge, code)
	require.Equal(t, "too_large", ecode)

	_, err = svc.TaskHandler().ProcessTask(context.Background(), &task.Task{ID: "t", Type: planapi.TaskType,
		Params: json.RawMessage(`{"plan_name":"null_score","user_id":1}`)})
	var perm *task.PermanentError
	require.True(t, errors.As(err, &perm), "an evaluation failure is not retried: %v", err)

	down, downURL := service(t, "redis://127.0.0.1:1/0", "", planapi.Config{})
	code, ecode, msg = postRaw(t, downURL, "follows", `{"user_id":1}`)
	require.Equal(t, http.StatusBadGateway, code, msg)
	require.Equal(t, "plan_failed", ecode)
	_, err = down.TaskHandler().ProcessTask(context.Background(), &task.Task{ID: "t", Type: planapi.TaskType,
		Params: json.RawMessage(`{"plan_name":"follows","user_id":1}`)})
	var tr *task.TransientError
	require.True(t, errors.As(err, &tr), "Redis down is retried: %v", err)
	require.Equal(t, task.ErrTypeServiceUnavailable, tr.Type)
}
