package planapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/taskflow/taskflow/internal/plan"
	"github.com/taskflow/taskflow/internal/plan/planapi"
	"github.com/taskflow/taskflow/internal/testrig/testredis"
	"github.com/taskflow/taskflow/task"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// against a Redis Cluster, rueidis's cluster client refreshes its
		// slot map on a goroutine that sleeps out its retry delay after
		// Close and then ends by itself
		goleak.IgnoreAnyFunction("github.com/redis/rueidis.(*clusterClient)._refresh.func2"))
}

const follows = `{"schema_version":1,"plan_name":"follows","nodes":[
 {"node_id":"v","op":"core::viewer","inputs":[],"params":{"endpoint":"ep_0001"}},
 {"node_id":"f","op":"core::follow","inputs":["v"],"params":{"endpoint":"ep_0001","fanout":3}}],"outputs":["f"]}`

const slow = `{"schema_version":1,"plan_name":"slow","nodes":[
 {"node_id":"s","op":"test::fixed_source","inputs":[],"params":{}},
 {"node_id":"z","op":"test::sleep","inputs":["s"],"params":{"duration_ms":30000}}],"outputs":["z"]}`

const broken = `{"schema_version":1,"plan_name":"broken","nodes":[
 {"node_id":"a","op":"core::take","inputs":["b"],"params":{"count":1}},
 {"node_id":"b","op":"core::take","inputs":["a"],"params":{"count":1}}],"outputs":["a"]}`

type bundle struct {
	svc *planapi.Service
	dir string
}

func setup(t *testing.T) *bundle {
	t.Helper()
	c, ns := testredis.Client(t)
	_, err := plan.Seed(context.Background(), c, ns+":", plan.Demo())
	require.NoError(t, err)
	eng, err := plan.New(plan.Config{RedisURL: testredis.URL(), KeyPrefix: ns + ":"})
	require.NoError(t, err)
	dir := t.TempDir()
	for name, src := range map[string]string{"follows": follows, "slow": slow, "broken": broken} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name+".plan.json"), []byte(src), 0o600))
	}
	svc, err := planapi.New(eng, planapi.Config{PlanDir: dir, DefaultDeadline: 5 * time.Second})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, eng.Close()) })
	return &bundle{svc: svc, dir: dir}
}

func (b *bundle) post(t *testing.T, name, body string) (int, map[string]any) {
	t.Helper()
	return run(t, b.svc, name, body)
}

// statusOf is the HTTP status the API answers for each kind (through the
// service's kinds), to keep these cases readable.
var statusOf = map[planapi.ErrorKind]int{planapi.KindInvalid: 400, planapi.KindNotFound: 404, planapi.KindEvaluation: 422,
	planapi.KindPlanInvalid: 500, planapi.KindUpstream: 502, planapi.KindTimeout: 504}

// run runs plan name with body as the API does (ParseInput, Execute) and
// returns what the API answers: the status the error means, and the body
// (rankd's line, or the error's code, message and field).
func run(t *testing.T, svc *planapi.Service, name, body string) (int, map[string]any) {
	t.Helper()
	in, err := svc.ParseInput([]byte(body))
	var out json.RawMessage
	if err == nil {
		out, err = svc.Execute(context.Background(), name, in)
	}
	if err != nil {
		var pe *planapi.Error
		require.True(t, errors.As(err, &pe), "not a *planapi.Error: %v", err)
		e := map[string]any{"code": pe.Code, "message": pe.Message}
		if pe.Field != "" {
			e["field"] = pe.Field
		}
		return statusOf[pe.Kind], map[string]any{"error": e}
	}
	var m map[string]any
	require.NoError(t, json.Unmarshal(out, &m), string(out))
	return 200, m
}

func TestExecute(t *testing.T) {
	t.Parallel()
	b := setup(t)
	code, out := b.post(t, "follows", `{"user_id":1,"request_id":"r7"}`)
	require.Equal(t, 200, code, out)
	require.Equal(t, "r7", out["request_id"])
	require.NotEmpty(t, out["engine_request_id"])
	require.Equal(t, []any{
		map[string]any{"id": 1.0, "fields": map[string]any{"country": "US"}},
		map[string]any{"id": 2.0, "fields": map[string]any{"country": "CA"}},
		map[string]any{"id": 3.0, "fields": map[string]any{"country": "US"}},
	}, out["candidates"])
}

func TestExecuteErrors(t *testing.T) {
	t.Parallel()
	b := setup(t)
	cases := []struct {
		name, plan, body string
		status           int
		code, field      string
	}{
		{"BadJSON", "follows", `{`, 400, "invalid_json", "body"},
		{"MissingUser", "follows", `{}`, 400, "invalid_request", "user_id"},
		{"BadUser", "follows", `{"user_id":"x"}`, 400, "invalid_request", "user_id"},
		{"UnknownParam", "follows", `{"user_id":1,"param_overrides":{"nope":1}}`, 400, "invalid_param_overrides", "param_overrides.nope"},
		{"BadDeadline", "follows", `{"user_id":1,"deadline_ms":-1}`, 400, "invalid_request", "deadline_ms"},
		{"DeadlineTooLong", "follows", `{"user_id":1,"deadline_ms":99999999}`, 400, "invalid_request", "deadline_ms"},
		{"DeadlineNotNumber", "follows", `{"user_id":1,"deadline_ms":"5"}`, 400, "invalid_request", "deadline_ms"},
		{"BadNodeTimeout", "follows", `{"user_id":1,"node_timeout_ms":0}`, 400, "invalid_request", "node_timeout_ms"},
		{"NodeTimeoutNotNumber", "follows", `{"user_id":1,"node_timeout_ms":"5"}`, 400, "invalid_request", "node_timeout_ms"},
		{"UnknownField", "follows", `{"user_id":1,"deadline_msx":50}`, 400, "invalid_request", "deadline_msx"},
		{"PlanNameInBody", "follows", `{"user_id":1,"plan_name":"slow"}`, 400, "invalid_request", "plan_name"},
		{"UnknownPlan", "nothere", `{"user_id":1}`, 404, "plan_not_found", "name"},
		{"BadPlanName", "a.b", `{"user_id":1}`, 400, "invalid_plan_name", "name"},
		{"EmptyPlanName", "", `{"user_id":1}`, 400, "invalid_plan_name", "name"},
		{"LongPlanName", strings.Repeat("p", planapi.MaxNameLen+1), `{"user_id":1}`, 400, "invalid_plan_name", "name"},
		{"FileSystemLongPlanName", strings.Repeat("p", 300), `{"user_id":1}`, 400, "invalid_plan_name", "name"},
		{"LongestPlanName", strings.Repeat("p", planapi.MaxNameLen), `{"user_id":1}`, 404, "plan_not_found", "name"},
		{"InvalidPlan", "broken", `{"user_id":1}`, 500, "plan_invalid", ""},
		{"Deadline", "slow", `{"user_id":1,"deadline_ms":30}`, 504, "deadline_exceeded", ""},
		{"NodeTimeout", "slow", `{"user_id":1,"node_timeout_ms":30}`, 504, "node_timeout", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			code, out := b.post(t, tc.plan, tc.body)
			require.Equal(t, tc.status, code, out)
			e := out["error"].(map[string]any)
			require.Equal(t, tc.code, e["code"])
			require.NotEmpty(t, e["message"])
			if tc.field != "" {
				require.Equal(t, tc.field, e["field"])
			} else {
				require.NotContains(t, e, "field")
			}
		})
	}
}

func TestPlanReloadsWhenChanged(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, out := b.post(t, "follows", `{"user_id":1}`)
	require.Len(t, out["candidates"], 3)
	p := filepath.Join(b.dir, "follows.plan.json")
	require.NoError(t, os.WriteFile(p, []byte(strings.Replace(follows, `"fanout":3`, `"fanout":5`, 1)), 0o600))
	// A new size is enough to see the change even within the file system's mtime granularity.
	_, out = b.post(t, "follows", `{"user_id":1}`)
	require.Len(t, out["candidates"], 5)
}

// TestColdPlanCompiledOnce: requests that arrive together for a plan not
// yet compiled share one compilation (and one *plan.Compiled); a changed
// file is compiled once more.
func TestColdPlanCompiledOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const n = 32
	got := make([]*plan.Compiled, n)
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			got[i], errs[i] = b.svc.Plan("follows")
		}()
	}
	close(start)
	wg.Wait()
	for i := range n {
		require.NoError(t, errs[i])
		require.Same(t, got[0], got[i])
	}
	require.EqualValues(t, 1, planapi.Compiles(b.svc))
	c, err := b.svc.Plan("follows")
	require.NoError(t, err)
	require.Same(t, got[0], c, "a warm cache compiles nothing")
	require.EqualValues(t, 1, planapi.Compiles(b.svc))
	p := filepath.Join(b.dir, "follows.plan.json")
	require.NoError(t, os.WriteFile(p, []byte(strings.Replace(follows, `"fanout":3`, `"fanout":5`, 1)), 0o600))
	c, err = b.svc.Plan("follows")
	require.NoError(t, err)
	require.NotSame(t, got[0], c)
	require.EqualValues(t, 2, planapi.Compiles(b.svc))
}

// TestCheckTask: a plan task's params are checked as its run would be,
// naming the params field at fault.
func TestCheckTask(t *testing.T) {
	t.Parallel()
	b := setup(t)
	require.NoError(t, b.svc.CheckTask(json.RawMessage(`{"plan_name":"follows","user_id":1}`)))
	for params, field := range map[string]string{
		``: "", `[]`: "", `{"user_id":1}`: "plan_name", `{"plan_name":"follows"}`: "user_id",
		`{"plan_name":"nothere","user_id":1}`: "plan_name", `{"plan_name":"a.b","user_id":1}`: "plan_name",
		`{"plan_name":"` + strings.Repeat("p", 300) + `","user_id":1}`: "plan_name",
		`{"plan_name":"follows","user_id":1,"deadline":5}`:             "deadline",
	} {
		err := b.svc.CheckTask(json.RawMessage(params))
		var pe *planapi.Error
		require.True(t, errors.As(err, &pe), "%.40s: %v", params, err)
		require.Equal(t, field, pe.Field, "%.40s: %v", params, err)
		require.True(t, pe.CallersFault(), "%.40s", params)
	}
	// broken compiles to an error: not the caller's to fix, but refused too
	var pe *planapi.Error
	require.True(t, errors.As(b.svc.CheckTask(json.RawMessage(`{"plan_name":"broken","user_id":1}`)), &pe))
	require.Equal(t, "plan_invalid", pe.Code)
}

func TestTaskHandler(t *testing.T) {
	t.Parallel()
	b := setup(t)
	h := b.svc.TaskHandler()
	run := func(params string) (json.RawMessage, error) {
		return h.ProcessTask(context.Background(), &task.Task{ID: "t1", Type: planapi.TaskType, Params: json.RawMessage(params)})
	}
	out, err := run(`{"plan_name":"follows","user_id":1,"request_id":"task-1"}`)
	require.NoError(t, err)
	var res struct {
		RequestID  string `json:"request_id"`
		Candidates []struct {
			ID int64 `json:"id"`
		} `json:"candidates"`
	}
	require.NoError(t, json.Unmarshal(out, &res))
	require.Equal(t, "task-1", res.RequestID)
	require.Len(t, res.Candidates, 3)

	var perm *task.PermanentError
	for _, params := range []string{``, `[]`, `{"user_id":1}`, `{"plan_name":"follows"}`, `{"plan_name":"nothere","user_id":1}`, `{"plan_name":"broken","user_id":1}`,
		`{"plan_name":"follows","user_id":1,"deadline":5}`, `{"plan_name":"` + strings.Repeat("p", 300) + `","user_id":1}`, `{"plan_name":"../follows","user_id":1}`} {
		_, err := run(params)
		require.True(t, errors.As(err, &perm), "%s: %v", params, err)
	}
	_, err = run(`{"plan_name":"slow","user_id":1,"deadline_ms":20}`)
	var tr *task.TransientError
	require.True(t, errors.As(err, &tr), "%v", err)
	require.Equal(t, task.ErrTypeNetworkTimeout, tr.Type)
}

// With no plan directory the plans built into the binary are served, from
// any working directory (this test's has no plans/ folder); an unknown
// name is a 404 that lists them.
func TestBuiltInPlans(t *testing.T) {
	t.Parallel()
	c, ns := testredis.Client(t)
	_, err := plan.Seed(context.Background(), c, ns+":", plan.Demo())
	require.NoError(t, err)
	eng, err := plan.New(plan.Config{RedisURL: testredis.URL(), KeyPrefix: ns + ":"})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, eng.Close()) })
	svc, err := planapi.New(eng, planapi.Config{DefaultDeadline: 5 * time.Second})
	require.NoError(t, err)
	_, err = os.Stat("plans")
	require.True(t, os.IsNotExist(err))
	in, err := svc.ParseInput([]byte(`{"user_id":1,"request_id":"b"}`))
	require.NoError(t, err)
	out, err := svc.Execute(context.Background(), "complex_dag", in)
	require.NoError(t, err)
	require.Contains(t, string(out), `"candidates":[{"id":`)
	_, err = svc.Execute(context.Background(), "no_such_plan", in)
	var pe *planapi.Error
	require.ErrorAs(t, err, &pe)
	require.Equal(t, "plan_not_found", pe.Code)
	require.Contains(t, pe.Message, "the plans are: complex_dag, diamond,")
}
