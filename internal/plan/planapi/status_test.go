package planapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/internal/plan"
	"github.com/taskflow/taskflow/internal/plan/planapi"
	"github.com/taskflow/taskflow/internal/testrig/testredis"
	"github.com/taskflow/taskflow/task"
)

// nullScore writes P.media_age_penalty_weight (unset: null) into
// final_score, a non-nullable key: the plan's own computation fails.
const nullScore = `{"schema_version":1,"plan_name":"null_score","nodes":[
 {"node_id":"v","op":"core::viewer","inputs":[],"params":{"endpoint":"ep_0001"}},
 {"node_id":"s","op":"core::vm","inputs":["v"],"params":{"expr_id":"e","out_key":2001}}],
 "expr_table":{"e":{"op":"param_ref","param_id":1}},"outputs":["s"]}`

// service runs nullScore and follows from its own directory on an engine
// reading redisURL.
func service(t *testing.T, redisURL, prefix string, cfg planapi.Config) *planapi.Service {
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
	t.Cleanup(func() { require.NoError(t, eng.Close()) })
	return svc
}

func postRaw(t *testing.T, svc *planapi.Service, name, body string) (int, string, string) {
	t.Helper()
	code, out := run(t, svc, name, body)
	e, _ := out["error"].(map[string]any)
	c, _ := e["code"].(string)
	m, _ := e["message"].(string)
	return code, c, m
}

// TestStatusByCause: a failure of the plan's own computation on this
// request is a 422 and fails its task for good; an unreachable Redis is a
// 502 and its task is retried.
func TestStatusByCause(t *testing.T) {
	t.Parallel()
	c, ns := testredis.Client(t)
	_, err := plan.Seed(context.Background(), c, ns+":", plan.Demo())
	require.NoError(t, err)
	svc := service(t, testredis.URL(), ns+":", planapi.Config{})

	code, ecode, msg := postRaw(t, svc, "null_score", `{"user_id":1}`)
	require.Equal(t, http.StatusUnprocessableEntity, code, msg)
	require.Equal(t, "plan_failed", ecode)
	require.Contains(t, msg, "null written to non-nullable key 'final_score'")
	// The same request with the param set succeeds: the request was at fault.
	code, out := run(t, svc, "null_score", `{"user_id":1,"param_overrides":{"media_age_penalty_weight":0.5}}`)
	require.Equal(t, 200, code, out)
	raw, err := json.Marshal(out["candidates"])
	require.NoError(t, err)
	require.Contains(t, string(raw), `{"fields":{"country":"US","final_score":0.5},"id":1}`)

	_, err = svc.TaskHandler().ProcessTask(context.Background(), &task.Task{ID: "t", Type: planapi.TaskType,
		Params: json.RawMessage(`{"plan_name":"null_score","user_id":1}`)})
	var perm *task.PermanentError
	require.True(t, errors.As(err, &perm), "an evaluation failure is not retried: %v", err)

	down := service(t, "redis://127.0.0.1:1/0", "", planapi.Config{})
	code, ecode, msg = postRaw(t, down, "follows", `{"user_id":1}`)
	require.Equal(t, http.StatusBadGateway, code, msg)
	require.Equal(t, "plan_failed", ecode)
	_, err = down.TaskHandler().ProcessTask(context.Background(), &task.Task{ID: "t", Type: planapi.TaskType,
		Params: json.RawMessage(`{"plan_name":"follows","user_id":1}`)})
	var tr *task.TransientError
	require.True(t, errors.As(err, &tr), "Redis down is retried: %v", err)
	require.Equal(t, task.ErrTypeServiceUnavailable, tr.Type)
}
