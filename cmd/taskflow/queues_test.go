package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/internal/testrig/testredis"
)

// TestQueueCommands drives queues, pause/resume and limits against a
// running `taskflow dev` whose worker serves two named queues.
func TestQueueCommands(t *testing.T) {
	t.Parallel()
	base, _ := startDev(t, map[string]string{"TASKFLOW_QUEUES": "emails:2,default"})

	out, _, err := client(t, base, "", "pause", "queue", "emails")
	require.NoError(t, err)
	require.Equal(t, "queue emails paused\n", out)
	id, _, err := client(t, base, "", "submit", "--type", "noop", "--queue", "emails", "--limit-key", "tenant-1")
	require.NoError(t, err)
	id = strings.TrimSpace(id)
	out, _, err = client(t, base, "", "queues")
	require.NoError(t, err)
	require.Regexp(t, `QUEUE\s+STATE\s+HIGH\s+NORMAL`, out)
	require.Regexp(t, `emails\s+PAUSED\s+0\s+1\s`, out)
	out, _, err = client(t, base, "", "status")
	require.NoError(t, err)
	require.Regexp(t, `(?s)retry ratio.*QUEUE\s+STATE.*emails\s+PAUSED`, out, "status shows the named queues once there are some")
	time.Sleep(200 * time.Millisecond)
	out, _, err = client(t, base, "", "status", id)
	require.NoError(t, err)
	require.Contains(t, out, "PENDING", "a paused queue's task waits")

	out, _, err = client(t, base, "", "resume", "queue", "emails")
	require.NoError(t, err)
	require.Equal(t, "queue emails resumed\n", out)
	require.Eventually(t, func() bool {
		out, _, err := client(t, base, "", "status", id)
		return err == nil && strings.Contains(out, "COMPLETED")
	}, 10*time.Second, 20*time.Millisecond)

	out, _, err = client(t, base, "", "pause", "task-type", "noop")
	require.NoError(t, err)
	require.Equal(t, "task-type noop paused\n", out)
	out, _, err = client(t, base, "", "queues", "--json")
	require.NoError(t, err)
	require.Contains(t, out, `"paused_task_types":["noop"]`)
	_, _, err = client(t, base, "", "resume", "task-type", "noop")
	require.NoError(t, err)

	out, _, err = client(t, base, "", "limits", "set", "key", "*", "--concurrency", "2", "--rate", "10", "--per", "1")
	require.NoError(t, err)
	require.Equal(t, "key *: 10 per 1s, 2 at once\n", out)
	out, _, err = client(t, base, "", "limits", "list")
	require.NoError(t, err)
	require.Regexp(t, `key\s+\*\s+10 per 1s, 2 at once`, out)
	_, _, err = client(t, base, "", "limits", "set", "queue", "emails")
	require.ErrorContains(t, err, "give --rate")
	_, _, err = client(t, base, "", "limits", "set", "queue", "Not Valid", "--concurrency", "1")
	require.ErrorContains(t, err, "name")
	out, _, err = client(t, base, "", "limits", "delete", "key", "*")
	require.NoError(t, err)
	require.Equal(t, "key \"*\": limit removed\n", out)
	out, _, err = client(t, base, "", "limits", "delete", "key", "*")
	require.NoError(t, err)
	require.Equal(t, "key \"*\": no such limit\n", out)
	_, _, err = client(t, base, "", "pause", "shelf", "x")
	require.ErrorContains(t, err, "give queue NAME or task-type TYPE")
	_, _, err = client(t, base, "", "submit", "--type", "noop", "--queue", "Bad Q")
	require.ErrorContains(t, err, "queue")
}

// TestMCPQueueTools: the admin's MCP tools list, pause and resume queues
// and task types; a session does not get them.
func TestMCPQueueTools(t *testing.T) {
	t.Parallel()
	_, ns := testredis.Client(t)
	const admin = "mcp-queues-admin-key-0123456789"
	base, _ := startDev(t, map[string]string{"REDIS_URL": testredis.URL(), "TASKFLOW_NAMESPACE": ns, "TASKFLOW_ADMIN_KEY": admin})

	cs := mcpHTTP(t, base, admin, nil)
	res, text, out := call(t, cs, "pause_queue_tool", map[string]any{"queue": "emails"})
	require.False(t, res.IsError, text)
	require.Equal(t, true, out["paused"])
	res, text, out = call(t, cs, "list_queues_tool", map[string]any{})
	require.False(t, res.IsError, text)
	require.Contains(t, text, "emails (paused)")
	require.Len(t, out["queues"], 2)
	res, text, _ = call(t, cs, "resume_queue_tool", map[string]any{"queue": "emails"})
	require.False(t, res.IsError, text)
	res, text, _ = call(t, cs, "pause_task_type_tool", map[string]any{"task_type": "noop"})
	require.False(t, res.IsError, text)
	_, text, _ = call(t, cs, "list_queues_tool", map[string]any{})
	require.Contains(t, text, "paused task types: noop")
	res, text, _ = call(t, cs, "resume_task_type_tool", map[string]any{"task_type": "noop"})
	require.False(t, res.IsError, text)
	res, text, _ = call(t, cs, "pause_queue_tool", map[string]any{"queue": "Not Valid"})
	require.True(t, res.IsError, text)
	require.Contains(t, text, "queue")

	lt, err := mcpHTTP(t, base, newSession(t, base, ""), nil).ListTools(context.Background(), nil)
	require.NoError(t, err)
	for _, tl := range lt.Tools {
		require.NotContains(t, tl.Name, "queue", "a session gets no queue tools")
	}
}
