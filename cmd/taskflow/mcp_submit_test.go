package main

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/internal/testrig/testredis"
)

// TestMCPRetriedToolCallMakesOneTask: a task tool called twice with one
// idempotency_key (an agent retrying a call whose answer it lost) creates
// one task; with other arguments it is refused naming the key; a
// unique_key answers the task holding it.
func TestMCPRetriedToolCallMakesOneTask(t *testing.T) {
	t.Parallel()
	_, ns := testredis.Client(t)
	base, _ := startDev(t, map[string]string{"REDIS_URL": testredis.URL(), "TASKFLOW_NAMESPACE": ns})
	cs := mcpHTTP(t, base, newSession(t, base, ""), nil)

	args := map[string]any{"text": "one two three", "idempotency_key": "agent-call-1"}
	res, _, first := call(t, cs, "wordcount_text_tool", args)
	require.False(t, res.IsError)
	require.NotEmpty(t, first["task_id"])
	res, text, again := call(t, cs, "wordcount_text_tool", args)
	require.False(t, res.IsError, text)
	require.Equal(t, first["task_id"], again["task_id"])
	require.Equal(t, true, again["duplicate"])
	require.Contains(t, text, "used before")

	res, text, _ = call(t, cs, "wordcount_text_tool", map[string]any{"text": "four", "idempotency_key": "agent-call-1"})
	require.True(t, res.IsError)
	require.Contains(t, text, "idempotency_key: this idempotency_key was used with another request")

	res, _, u1 := call(t, cs, "wordcount_text_tool", map[string]any{"text": "a", "unique_key": "u", "delay_seconds": 60})
	require.False(t, res.IsError)
	res, text, u2 := call(t, cs, "wordcount_text_tool", map[string]any{"text": "b", "unique_key": "u"})
	require.False(t, res.IsError, text)
	require.Equal(t, u1["task_id"], u2["task_id"])
	require.Equal(t, true, u2["duplicate"])
}
