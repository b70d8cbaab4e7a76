package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/internal/testrig/testredis"
)

// TestMCPWithTypeScriptSDK: a second, independent client — the official
// TypeScript SDK (examples/mcp-node-client) — over streamable HTTP against
// the real server: it lists the tools with their schemas, delegates a
// report, waits for it, is told it is ready and gets the file link; a
// call missing its argument is a tool error naming it.
func TestMCPWithTypeScriptSDK(t *testing.T) {
	t.Parallel()
	node, err := exec.LookPath("node")
	require.NoError(t, err, "node is not on PATH")
	dir, err := filepath.Abs("../../examples/mcp-node-client")
	require.NoError(t, err)
	_, err = os.Stat(filepath.Join(dir, "node_modules", "@modelcontextprotocol", "sdk"))
	require.NoError(t, err, "examples/mcp-node-client/node_modules is missing: run `npm ci` there (make test and .ci/run do)")

	_, ns := testredis.Client(t)
	base, printed := startDev(t, map[string]string{"REDIS_URL": testredis.URL(), "TASKFLOW_NAMESPACE": ns, "TASKFLOW_ADMIN_KEY": "mcp-node-admin-key-0123456789abcdef"},
		"--services", "report", "--output-dir", t.TempDir())
	tok := newSession(t, base, "")

	args := `{"quarter":"Q3","year":2025,"format":"md","data":{"revenue":[5,6,7]}}`
	cmd := exec.Command(node, "client.mjs", base+"/mcp", tok, "generate_report_tool", args)
	cmd.Dir = dir
	var stderr syncBuffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "node client: %s\n%s\ndev:\n%s", out, stderr.String(), printed.String())
	var got struct {
		Tools          []string                  `json:"tools"`
		Schemas        map[string]map[string]any `json:"schemas"`
		TaskID         string                    `json:"task_id"`
		Acknowledgment string                    `json:"acknowledgment"`
		Status         string                    `json:"status"`
		Links          []string                  `json:"links"`
		Notified       []map[string]any          `json:"notified"`
		BadArgsError   map[string]any            `json:"bad_args_error"`
	}
	require.NoError(t, json.Unmarshal(out, &got), string(out))
	require.Contains(t, got.Tools, "generate_report_tool")
	require.Contains(t, got.Tools, "list_user_tasks_tool")
	require.Equal(t, "object", got.Schemas["generate_report_tool"]["type"])
	require.NotEmpty(t, got.TaskID)
	require.Contains(t, got.Acknowledgment, got.TaskID)
	require.Equal(t, "completed", got.Status)
	require.Len(t, got.Links, 1, "the report file as a resource link")
	require.NotEmpty(t, got.Notified, "told without polling")
	require.Equal(t, "Your Q3 2025 report is ready", got.Notified[0]["message"])
	require.Equal(t, "task_id", got.BadArgsError["field"])
}
