package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/internal/testrig/testwait"
)

// TestManageCommands drives the client commands that cover the rest of the
// API against a running `taskflow dev`, as a person types them: cancel and
// delete a task, create/list/show/delete a schedule, the workers view,
// breaker open/reset, a session's notifications, and the flag checks that
// used to fall back to the server's defaults in silence.
func TestManageCommands(t *testing.T) {
	t.Parallel()
	base, _ := startDev(t, nil)

	// cancel a running sleep task, then delete it
	id, _, err := client(t, base, "", "submit", "--type", "sleep", "--params", `{"duration_ms":60000}`)
	require.NoError(t, err)
	id = strings.TrimSpace(id)
	require.Eventually(t, func() bool {
		out, _, err := client(t, base, "", "status", id)
		return err == nil && strings.Contains(out, "ACTIVE")
	}, 10*time.Second, 20*time.Millisecond)
	// shell completion offers the task's id (from the API) and the states
	out, _, err := client(t, base, "", "__complete", "cancel", id[:8])
	require.NoError(t, err)
	require.Contains(t, out, id+"\tsleep ACTIVE")
	out, _, err = client(t, base, "", "__complete", "tasks", "--status", "")
	require.NoError(t, err)
	require.Contains(t, out, "DLQ\n")
	out, _, err = client(t, base, "", "cancel", id, "--wait")
	require.NoError(t, err)
	require.Equal(t, id+" cancelled\n", out)
	_, _, err = client(t, base, "", "cancel", id)
	require.ErrorContains(t, err, "task_not_cancellable", "a second cancel says why it cannot")
	out, _, err = client(t, base, "", "delete", id)
	require.NoError(t, err)
	require.Equal(t, id+" deleted\n", out)
	_, _, err = client(t, base, "", "status", id)
	require.ErrorContains(t, err, "HTTP 404")

	// schedules
	out, _, err = client(t, base, "", "schedules", "create", "--id", "nightly", "--cron", "0 3 * * *", "--type", "noop")
	require.NoError(t, err)
	require.Regexp(t, `^schedule nightly created; next run \d{4}-\d\d-\d\d 03:00:00 UTC\n$`, out)
	out, _, err = client(t, base, "", "schedules", "list")
	require.NoError(t, err)
	require.Regexp(t, `nightly\s+0 3 \* \* \*\s+noop`, out)
	require.Contains(t, out, "(1)")
	out, _, err = client(t, base, "", "schedules", "show", "nightly")
	require.NoError(t, err)
	require.Contains(t, out, `"schedule_id":"nightly"`)
	_, _, err = client(t, base, "", "schedules", "create", "--cron", "0 3 * * *")
	require.ErrorContains(t, err, "--type is required")
	out, _, err = client(t, base, "", "schedules", "delete", "nightly")
	require.NoError(t, err)
	require.Equal(t, "schedule nightly deleted\n", out)
	out, _, err = client(t, base, "", "schedules", "list")
	require.NoError(t, err)
	require.Contains(t, out, "(0)")

	// workers and breakers; `status` shows the workers too
	out, _, err = client(t, base, "", "status")
	require.NoError(t, err)
	require.Regexp(t, `(?s)QUEUE\s+DEPTH.*retry ratio.*WORKER\s+HOST\s+BUSY`, out)
	out, _, err = client(t, base, "", "workers")
	require.NoError(t, err)
	require.Regexp(t, `WORKER\s+HOST\s+BUSY`, out)
	require.Regexp(t, `\d+/10\s`, out, "dev's worker runs 10 handler goroutines")
	out, _, err = client(t, base, "", "breaker", "open", "openrouter", "--for", "30")
	require.NoError(t, err)
	require.Contains(t, out, "openrouter")
	out, _, err = client(t, base, "", "breaker", "reset", "openrouter")
	require.NoError(t, err)
	require.Contains(t, out, "openrouter")
	_, _, err = client(t, base, "", "breaker", "reset", "--for", "3")
	require.ErrorContains(t, err, "only `breaker open` takes a duration")

	// a typed flag is sent or refused, never replaced by a default
	for args, want := range map[string]string{
		"--max-retries -5": "--max-retries -5: must be 0 or more",
		"--timeout -3":     "--timeout -3: must be more than 0 seconds",
		"--timeout 0":      "--timeout 0: must be more than 0 seconds",
	} {
		_, _, err := client(t, base, "", append([]string{"submit", "--type", "noop"}, strings.Fields(args)...)...)
		require.ErrorContains(t, err, want, args)
	}
	_, _, err = client(t, base, "", "tasks", "--limit", "-1")
	require.ErrorContains(t, err, "--limit -1: must be at least 1", "the flag is named, not the API's page_size")

	// notifications belong to a session: open one, submit as it, read them
	res, err := http.Post(base+"/api/v1/sessions", "application/json", nil)
	require.NoError(t, err)
	var sess struct {
		Token string `json:"token"`
	}
	require.NoError(t, json.NewDecoder(res.Body).Decode(&sess))
	res.Body.Close()
	// --after 0 lists from the start: the notification may already have
	// been read, riding on one of the session's responses (its next
	// interaction) before the first poll
	nid, _, err := client(t, base, "", "submit", "--type", "noop", "--token", sess.Token)
	require.NoError(t, err, nid)
	var errOut string
	testwait.Until(t, 10*time.Second, 50*time.Millisecond, func() bool {
		out, errOut, err = client(t, base, "", "notifications", "--token", sess.Token, "--keep-unread", "--after", "0")
		return err == nil && strings.Contains(out, "noop")
	}, func() string { return fmt.Sprintf("the session hears of its noop task: %q %q %v", out, errOut, err) })
	out, _, err = client(t, base, "", "notifications", "--token", sess.Token, "--json", "--after", "0")
	require.NoError(t, err)
	require.Contains(t, out, `"task_id":"`+strings.TrimSpace(nid)+`"`)
	out, errOut, err = client(t, base, "", "notifications", "--token", sess.Token)
	require.NoError(t, err)
	require.Empty(t, out)
	require.Contains(t, errOut, "no unread notifications", "the --json read marked them read")
}
