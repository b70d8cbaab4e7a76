package outcome_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/extsvc"
	"github.com/taskflow/taskflow/internal/external/resultview"
	"github.com/taskflow/taskflow/internal/testrig/externaltest"
	"github.com/taskflow/taskflow/task"
)

// TestErrorDetailsReachTheTask: a service's error.details travel to the
// task's error history and to get_task_result's error; a failure without
// details is published with "details": {} (form).
func TestErrorDetailsReachTheTask(t *testing.T) {
	t.Parallel()
	bad := func(ctx context.Context, tk *extsvc.Task) (json.RawMessage, error) {
		e := extsvc.Fail("INSUFFICIENT_DATA", "not enough rows", false)
		e.Details = map[string]any{"rows": 3, "needed": 10}
		return nil, e
	}
	plain := func(ctx context.Context, tk *extsvc.Task) (json.RawMessage, error) {
		return nil, extsvc.Fail("INVALID_INPUT", "no", false)
	}
	b := externaltest.Setup(t, externaltest.Options{Handlers: map[string]extsvc.HandlerFunc{"bad.run": bad, "plain.run": plain}, SkipArchive: true})
	ctx := context.Background()
	tk := b.Enqueue(t, "bad.run", "s1", `{}`, time.Minute)
	other := b.Enqueue(t, "plain.run", "s1", `{}`, time.Minute)
	got := b.WaitState(t, tk.ID, task.StateDLQ)
	require.NotEmpty(t, got.ErrorHistory)
	require.JSONEq(t, `{"rows":3,"needed":10}`, string(got.ErrorHistory[len(got.ErrorHistory)-1].Details))

	v, err := resultview.New(b.Store, resultview.Config{}).Read(ctx, tk.ID)
	require.NoError(t, err)
	require.NotNil(t, v.Error)
	require.Equal(t, "INSUFFICIENT_DATA", v.Error.Code)
	require.JSONEq(t, `{"rows":3,"needed":10}`, string(v.Error.Details))
	body, err := json.Marshal(v)
	require.NoError(t, err)
	var wire struct {
		Error struct {
			Details json.RawMessage `json:"details"`
		} `json:"error"`
	}
	require.NoError(t, json.Unmarshal(body, &wire))
	require.JSONEq(t, `{"rows":3,"needed":10}`, string(wire.Error.Details), "in the HTTP answer's error")

	b.WaitState(t, other.ID, task.StateDLQ)
	for _, m := range b.Entries(t, b.Streams.Failed()) {
		var raw struct {
			TaskID string                     `json:"task_id"`
			Error  map[string]json.RawMessage `json:"error"`
		}
		require.NoError(t, json.Unmarshal(m.Event.Data, &raw))
		if raw.TaskID == other.ID {
			require.JSONEq(t, `{}`, string(raw.Error["details"]), "empty details sent as {}")
		}
	}
	v, err = resultview.New(b.Store, resultview.Config{}).Read(ctx, other.ID)
	require.NoError(t, err)
	require.Nil(t, v.Error.Details, "no details recorded for an empty object")
}
