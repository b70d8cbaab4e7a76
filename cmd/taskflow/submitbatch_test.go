package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/internal/testrig/testredis"
)

// TestSubmitKeysAndBatch: `taskflow submit` with --idempotency-key,
// --unique-key and --batch against a running server on real Redis.
func TestSubmitKeysAndBatch(t *testing.T) {
	t.Parallel()
	_, ns := testredis.Client(t)
	base, _ := startDev(t, map[string]string{"REDIS_URL": testredis.URL(), "TASKFLOW_NAMESPACE": ns})

	first, _, err := client(t, base, "", "submit", "--type", "noop", "--idempotency-key", "cli-1")
	require.NoError(t, err)
	again, errOut, err := client(t, base, "", "submit", "--type", "noop", "--idempotency-key", "cli-1")
	require.NoError(t, err)
	require.Equal(t, first, again, "the same key answers the first task")
	require.Contains(t, errOut, "was used before")
	_, _, err = client(t, base, "", "submit", "--type", "noop", "--priority", "high", "--idempotency-key", "cli-1")
	var ae *APIError
	require.ErrorAs(t, err, &ae)
	require.Equal(t, "idempotency_key_reused", ae.Code)

	u1, _, err := client(t, base, "", "submit", "--type", "noop", "--unique-key", "nightly", "--unique-for", "1h")
	require.NoError(t, err)
	u2, errOut, err := client(t, base, "", "submit", "--type", "noop", "--unique-key", "nightly")
	require.NoError(t, err)
	require.Equal(t, u1, u2)
	require.Contains(t, errOut, "nothing new was created")
	_, _, err = client(t, base, "", "submit", "--type", "noop", "--unique-for", "1h")
	require.ErrorContains(t, err, "--unique-for needs --unique-key")

	lines := strings.Join([]string{
		`{"task_type": "noop"}`,
		``,
		`{"task_type": "noop", "priority": "urgent"}`,
		`{"task_type": "noop", "unique_key": "nightly"}`,
	}, "\n")
	out, errOut, err := client(t, base, lines, "submit", "--batch", "-")
	var ee *ExitError
	require.True(t, errors.As(err, &ee), "a refused line exits 1: %v", err)
	require.Equal(t, 1, ee.Code)
	got := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, got, 3, out)
	require.Regexp(t, `^1\tcreated\t\S+$`, got[0])
	require.Equal(t, "3\tinvalid\tpriority: ", got[1][:len("3\tinvalid\tpriority: ")])
	require.Equal(t, "4\tduplicate\t"+strings.TrimSpace(u1), got[2])
	require.Contains(t, errOut, "stdin:3: priority")

	file := filepath.Join(t.TempDir(), "tasks.jsonl")
	require.NoError(t, os.WriteFile(file, []byte("{\"task_type\": \"noop\"}\nnot json\n[1]\n"), 0o600))
	_, _, err = client(t, base, "", "submit", "--batch", file)
	require.ErrorContains(t, err, "line 2: not a JSON object")
	require.ErrorContains(t, err, "line 3: not a JSON object")

	out, _, err = client(t, base, "{\"task_type\": \"noop\"}\n", "submit", "--batch", "-", "--idempotency-key", "b-1")
	require.NoError(t, err)
	out2, _, err := client(t, base, "{\"task_type\": \"noop\"}\n", "submit", "--batch", "-", "--idempotency-key", "b-1")
	require.NoError(t, err)
	require.Equal(t, out, out2, "the batch resent with its key answers the first results")
}

func FuzzParseBatchLines(f *testing.F) {
	f.Add("{\"task_type\": \"noop\"}\n\n{\"a\": 1}\n")
	f.Add("not json\n[1]\nnull\n")
	f.Add("")
	f.Add("{\"x\":\"\\u0000\"}\r\n   \t\n{}")
	f.Fuzz(func(t *testing.T, in string) {
		lines, err := parseBatchLines(strings.NewReader(in))
		if err != nil {
			require.Empty(t, lines)
			return
		}
		require.NotEmpty(t, lines)
		prev := 0
		for _, l := range lines {
			require.Greater(t, l.line, prev, "line numbers increase")
			prev = l.line
			require.NotEmpty(t, l.task)
		}
	})
}
