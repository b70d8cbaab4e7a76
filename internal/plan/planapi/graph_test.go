package planapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/internal/plan"
	"github.com/taskflow/taskflow/internal/plan/planapi"
	shipped "github.com/taskflow/taskflow/plans"
)

// TestNames: a plan directory's *.plan.json by name, sorted, without the
// files no request could name; with no directory, the built-in plans.
func TestNames(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, f := range []string{"a-b.plan.json", "notes.txt", "follows.json"} {
		require.NoError(t, os.WriteFile(filepath.Join(b.dir, f), []byte(follows), 0o600))
	}
	require.NoError(t, os.Mkdir(filepath.Join(b.dir, "dir.plan.json"), 0o700))
	names, err := b.svc.Names()
	require.NoError(t, err)
	require.Equal(t, []string{"broken", "follows", "slow"}, names)

	eng, err := plan.New(plan.Config{})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, eng.Close()) })
	svc, err := planapi.New(eng, planapi.Config{})
	require.NoError(t, err)
	names, err = svc.Names()
	require.NoError(t, err)
	want, err := shipped.Names(shipped.FS())
	require.NoError(t, err)
	require.Equal(t, want, names)
	require.Contains(t, names, "complex_dag")

	gone, err := planapi.New(eng, planapi.Config{PlanDir: filepath.Join(b.dir, "nothere")})
	require.NoError(t, err)
	_, err = gone.Names()
	require.Error(t, err, "a plan directory that cannot be read is the server's failure")
}

// TestGraph: a plan's nodes, each after the nodes it reads (ties in the
// file's order), with node references among its dependencies; a name is
// refused as a run refuses it.
func TestGraph(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const backwards = `{"schema_version":1,"plan_name":"backwards","nodes":[
	 {"node_id":"c","op":"core::concat","inputs":["f"],"params":{"rhs":"r"}},
	 {"node_id":"r","op":"core::recommendation","inputs":["v"],"params":{"endpoint":"ep_0001","fanout":2}},
	 {"node_id":"f","op":"core::follow","inputs":["v"],"params":{"endpoint":"ep_0001","fanout":3}},
	 {"node_id":"v","op":"core::viewer","inputs":[],"params":{"endpoint":"ep_0001"}}],"outputs":["c","f"]}`
	require.NoError(t, os.WriteFile(filepath.Join(b.dir, "backwards.plan.json"), []byte(backwards), 0o600))
	g, err := b.svc.Graph("backwards")
	require.NoError(t, err)
	raw, err := json.Marshal(g)
	require.NoError(t, err)
	require.JSONEq(t, `{"name":"backwards","nodes":[
		{"id":"v","op":"core::viewer","kind":"IO","deps":[],"output":false},
		{"id":"r","op":"core::recommendation","kind":"IO","deps":["v"],"output":false},
		{"id":"f","op":"core::follow","kind":"IO","deps":["v"],"output":true},
		{"id":"c","op":"core::concat","kind":"CPU","deps":["f","r"],"output":true}],
		"outputs":["c","f"],"endpoints":["ep_0001"]}`, string(raw))

	for name, code := range map[string]string{"nothere": "plan_not_found", "a.b": "invalid_plan_name", "broken": "plan_invalid"} {
		_, err := b.svc.Graph(name)
		var pe *planapi.Error
		require.True(t, errors.As(err, &pe), "%s: %v", name, err)
		require.Equal(t, code, pe.Code, name)
	}
}

// TestExecuteTraced: the traced answer is Execute's line plus one trace
// line per node, in whole microseconds, and the run's wall time.
func TestExecuteTraced(t *testing.T) {
	t.Parallel()
	b := setup(t)
	in, err := b.svc.ParseInput([]byte(`{"user_id":1,"request_id":"t1"}`))
	require.NoError(t, err)
	plain, err := b.svc.Execute(context.Background(), "follows", in)
	require.NoError(t, err)
	out, err := b.svc.ExecuteTraced(context.Background(), "follows", in)
	require.NoError(t, err)
	var p, tr map[string]any
	require.NoError(t, json.Unmarshal(plain, &p))
	require.NoError(t, json.Unmarshal(out, &tr))
	require.Equal(t, p["request_id"], tr["request_id"])
	require.Equal(t, p["candidates"], tr["candidates"])
	require.NotContains(t, p, "trace")

	var got struct {
		Trace     []planapi.TraceLine `json:"trace"`
		ElapsedUS int64               `json:"elapsed_us"`
	}
	require.NoError(t, json.Unmarshal(out, &got))
	require.Len(t, got.Trace, 2)
	require.Equal(t, "v", got.Trace[0].NodeID)
	require.Equal(t, "f", got.Trace[1].NodeID)
	require.Equal(t, "core::follow", got.Trace[1].Op)
	require.Equal(t, "IO", got.Trace[1].Kind)
	require.Equal(t, 3, got.Trace[1].RowsOut)
	for _, l := range got.Trace {
		require.GreaterOrEqual(t, l.EndUS, l.StartUS, l.NodeID)
		require.LessOrEqual(t, l.EndUS, got.ElapsedUS, l.NodeID)
	}
	require.Less(t, got.ElapsedUS, (5 * time.Second).Microseconds(), "microseconds: the run's deadline is 5 s")

	// Answer (the API's schema of a run) is the line, field for field.
	for _, line := range [][]byte{plain, out} {
		var a planapi.Answer
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.DisallowUnknownFields()
		require.NoError(t, dec.Decode(&a), "%s", line)
		require.Equal(t, "t1", a.RequestID)
		require.NotEmpty(t, a.Candidates)
	}

	_, err = b.svc.ExecuteTraced(context.Background(), "slow", mustInput(t, b, `{"user_id":1,"deadline_ms":20}`))
	var pe *planapi.Error
	require.ErrorAs(t, err, &pe)
	require.Equal(t, "deadline_exceeded", pe.Code, "a traced run fails as a plain one does")
}

func mustInput(t *testing.T, b *bundle, body string) *planapi.Input {
	t.Helper()
	in, err := b.svc.ParseInput([]byte(body))
	require.NoError(t, err)
	return in
}

// TestRunRequestIsTheParsedBody: RunRequest (the API's schema of a run's
// body) names exactly the fields ParseInput accepts.
func TestRunRequestIsTheParsedBody(t *testing.T) {
	t.Parallel()
	var names []string
	rt := reflect.TypeFor[planapi.RunRequest]()
	for i := range rt.NumField() {
		name, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
		names = append(names, name)
	}
	require.ElementsMatch(t, planapi.InputFields, names)
}
