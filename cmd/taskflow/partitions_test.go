package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/internal/engine/store"
	"github.com/taskflow/taskflow/internal/testrig/testredis"
)

// TestPartitionedDeploymentEndToEnd runs `taskflow dev` and two example
// services as OS processes on a deployment of three partitions
// (TASKFLOW_PARTITIONS=3). A session's tasks land in several partitions;
// every one completes, the session lists and is notified of all of them, a
// task waits on one in another partition, a running task in some partition
// is cancelled, a failed one is in the DLQ listing, the queue status adds
// the partitions up, and a process started with another count refuses to
// start, saying why.
func TestPartitionedDeploymentEndToEnd(t *testing.T) {
	t.Parallel()
	_, ns := testredis.Client(t)
	const admin = "e2e-admin-key-partitions-0123456789"
	env := map[string]string{"REDIS_URL": testredis.URL(), "TASKFLOW_NAMESPACE": ns, "TASKFLOW_PARTITIONS": "3"}
	procs := newProcesses(t)
	devEnv := map[string]string{"TASKFLOW_ADMIN_KEY": admin}
	for k, v := range env {
		devEnv[k] = v
	}
	dev := procs.start(devEnv, "dev", "--addr", "127.0.0.1:0")
	svc := procs.start(env, "service", "analysis", "--output-dir", t.TempDir(), "--concurrency", "2")
	svc.expect(t, "consuming")
	base := dev.expect(t, `taskflow dev: open (http://127\.0\.0\.1:\d+)/docs`)

	do := apiCaller(t, base)
	var sess struct {
		Token string `json:"token"`
	}
	require.Equal(t, http.StatusCreated, do("POST", "/api/v1/sessions", "", nil, &sess))
	submit := func(body map[string]any) string {
		t.Helper()
		var s struct {
			ID string `json:"task_id"`
		}
		require.Equal(t, http.StatusCreated, do("POST", "/api/v1/tasks", sess.Token, body, &s))
		return s.ID
	}
	state := func(id string) string {
		var v struct {
			State string `json:"state"`
		}
		require.Equal(t, http.StatusOK, do("GET", "/api/v1/tasks/"+id, sess.Token, nil, &v))
		return v.State
	}

	// in-process tasks and external ones, spread over the partitions
	var done []string
	parts := map[int]bool{}
	for i := 0; i < 9 || len(parts) < 3; i++ { // until the ids fell in all three
		id := submit(map[string]any{"task_type": "noop", "params": map[string]any{"i": i}})
		done = append(done, id)
		parts[store.PartitionOf(id, 3)] = true
	}
	external := len(done)
	for range 3 {
		done = append(done, submit(map[string]any{"task_type": "data.analyze", "params": map[string]any{"csv": "a,b\n1,2\n"}}))
	}
	// tasks given one partition key share its partition
	k1 := submit(map[string]any{"task_type": "noop", "partition_key": "customer-7"})
	k2 := submit(map[string]any{"task_type": "noop", "partition_key": "customer-7"})
	require.Equal(t, store.PartitionOf("customer-7", 3), store.PartitionOf(k1, 3))
	require.Equal(t, store.PartitionOf("customer-7", 3), store.PartitionOf(k2, 3))
	done = append(done, k1, k2)
	req, err := http.NewRequest("POST", base+"/api/v1/tasks", strings.NewReader(`{"task_type":"noop","partition_key":"`+strings.Repeat("k", 201)+`"}`))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+sess.Token)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	raw, _ := io.ReadAll(res.Body)
	res.Body.Close()
	require.Equal(t, http.StatusUnprocessableEntity, res.StatusCode)
	require.Contains(t, string(raw), `"field":"partition_key"`)
	// and an agent's tool call gives one too
	cs := mcpHTTP(t, base, sess.Token, nil)
	_, text, tool := call(t, cs, "noop_task_tool", map[string]any{"partition_key": "customer-7"})
	k3, _ := tool["task_id"].(string)
	require.NotEmpty(t, k3, text)
	require.Equal(t, store.PartitionOf("customer-7", 3), store.PartitionOf(k3, 3))
	done = append(done, k3)
	mres, text, tool := call(t, cs, "noop_task_tool", map[string]any{"partition_key": strings.Repeat("k", 201)})
	require.True(t, mres.IsError, text)
	require.Equal(t, "partition_key", tool["error"].(map[string]any)["field"], text)
	// a task waiting on one in another partition
	first := done[0]
	var after string
	for after == "" || store.PartitionOf(after, 3) == store.PartitionOf(first, 3) {
		after = submit(map[string]any{"task_type": "noop", "depends_on": []string{first}})
		done = append(done, after)
	}
	for _, id := range done {
		require.Eventually(t, func() bool { return state(id) == "COMPLETED" }, 60*time.Second, 50*time.Millisecond,
			"%s (partition %d) never completed\n%s", id, store.PartitionOf(id, 3), dev.out.String())
	}

	// a running task is cancelled through its partition's channel
	sleeper := submit(map[string]any{"task_type": "sleep", "params": map[string]any{"duration_ms": 60000}})
	require.Eventually(t, func() bool { return state(sleeper) == "ACTIVE" }, 20*time.Second, 20*time.Millisecond)
	require.Equal(t, http.StatusAccepted, do("POST", "/api/v1/tasks/"+sleeper+"/cancel", sess.Token, nil, nil))
	require.Eventually(t, func() bool { return state(sleeper) == "CANCELLED" }, 20*time.Second, 20*time.Millisecond)
	// a permanent failure is listed in the DLQ
	dead := submit(map[string]any{"task_type": "sleep", "params": map[string]any{"duration_ms": 1, "fail": "permanent"}})
	require.Eventually(t, func() bool { return state(dead) == "DLQ" }, 20*time.Second, 20*time.Millisecond)
	var dlq struct {
		Tasks []struct {
			ID string `json:"task_id"`
		} `json:"tasks"`
	}
	require.Equal(t, http.StatusOK, do("GET", "/api/v1/queues/dlq", admin, nil, &dlq))
	require.Len(t, dlq.Tasks, 1)
	require.Equal(t, dead, dlq.Tasks[0].ID)

	// the session lists and was notified of all of them
	var list struct {
		Tasks []struct {
			ID string `json:"task_id"`
		} `json:"tasks"`
	}
	require.Equal(t, http.StatusOK, do("GET", "/api/v1/results?status_filter=completed&limit=100", sess.Token, nil, &list))
	var listed []string
	for _, x := range list.Tasks {
		listed = append(listed, x.ID)
	}
	require.ElementsMatch(t, done, listed)
	var polled struct {
		Notifications []struct {
			TaskID string `json:"task_id"`
		} `json:"notifications"`
	}
	require.Eventually(t, func() bool {
		require.Equal(t, http.StatusOK, do("GET", "/api/v1/notifications?after=0", sess.Token, nil, &polled))
		seen := map[string]bool{}
		for _, n := range polled.Notifications {
			seen[n.TaskID] = true
		}
		for _, id := range done[external : external+3] { // the external tasks notify their session
			if !seen[id] {
				return false
			}
		}
		return true
	}, 20*time.Second, 50*time.Millisecond)

	var qs struct {
		States map[string]int `json:"states"`
	}
	require.Equal(t, http.StatusOK, do("GET", "/api/v1/queues/status", admin, nil, &qs))
	require.Equal(t, len(done), qs.States["COMPLETED"], "%+v", qs)
	require.Equal(t, 1, qs.States["CANCELLED"])
	require.Equal(t, 1, qs.States["DLQ"])

	// another partition count on this deployment: refused, saying why
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), envHelperArgs+`=["worker"]`, "REDIS_URL="+testredis.URL(), "TASKFLOW_NAMESPACE="+ns, "TASKFLOW_PARTITIONS=1")
	out, err := cmd.CombinedOutput()
	require.Error(t, err, "a worker with TASKFLOW_PARTITIONS=1 must not start:\n%s", out)
	require.Contains(t, string(out), fmt.Sprintf("namespace %q was created with 3 partitions", ns))
}
