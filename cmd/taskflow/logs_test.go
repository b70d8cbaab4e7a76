package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/internal/testrig/testredis"
)

// LOG_LEVEL and LOG_FORMAT reach every process: `taskflow scheduler` with
// LOG_FORMAT=json writes JSON lines; LOG_LEVEL=error silences its info
// line; a wrong value is an error naming the variable.
func TestLogSettings(t *testing.T) {
	t.Parallel()
	_, ns := testredis.Client(t)
	run := func(extra map[string]string) (string, error) {
		env := map[string]string{"REDIS_URL": testredis.URL(), "TASKFLOW_NAMESPACE": ns}
		for k, v := range extra {
			env[k] = v
		}
		var errb syncBuffer
		m := testMain(env, &bytes.Buffer{})
		m.Stderr = &errb
		ctx, cancel := context.WithTimeout(context.Background(), 700*time.Millisecond)
		defer cancel()
		err := m.Run(ctx, []string{"scheduler"})
		return errb.String(), err
	}
	out, err := run(map[string]string{"LOG_FORMAT": "json"})
	require.NoError(t, err)
	first := strings.SplitN(strings.TrimSpace(out), "\n", 2)[0]
	var line map[string]any
	require.NoError(t, json.Unmarshal([]byte(first), &line), out)
	require.Equal(t, "INFO", line["level"])
	require.Equal(t, "taskflow scheduler running", line["msg"])

	out, err = run(map[string]string{"LOG_LEVEL": "error"})
	require.NoError(t, err)
	require.NotContains(t, out, "taskflow scheduler running")

	_, err = run(map[string]string{"LOG_LEVEL": "loud"})
	require.ErrorContains(t, err, `LOG_LEVEL: "loud" is not debug, info, warn or error`)
	_, err = run(map[string]string{"LOG_FORMAT": "xml"})
	require.ErrorContains(t, err, `LOG_FORMAT: "xml" is not text or json`)
}
