package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/internal/engine/store"
	"github.com/taskflow/taskflow/internal/testrig/testredis"
	"github.com/taskflow/taskflow/task"
)

// TestIdempotentSubmitsAPIKilledMidBurst is issue 26's figure: 3,000
// submits, each with its own Idempotency-Key, fired concurrently at a real
// `taskflow api` process that is SIGKILLed mid-burst; a second API process
// is started and every request left unanswered is resent with its key
// until answered. Every key must map to exactly one task, and each task
// completes once (workers run all along, in another process).
func TestIdempotentSubmitsAPIKilledMidBurst(t *testing.T) {
	if testing.Short() {
		t.Skip("a 3,000-submit process-kill test; -short skips it")
	}
	const total, conc = 3000, 48
	rdb, ns := testredis.Client(t)
	procs := newProcesses(t)
	env := map[string]string{"REDIS_URL": testredis.URL(), "TASKFLOW_NAMESPACE": ns, "TASKFLOW_INSECURE": "true"}
	procs.start(env, "worker", "--concurrency", "16")
	startAPI := func() (*process, string) {
		p := procs.start(env, "api", "--addr", "127.0.0.1:0")
		return p, "http://" + p.expect(t, `taskflow api listening.*addr=(127\.0\.0\.1:\d+)`)
	}
	api, base := startAPI()

	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: conc}}
	type answer struct {
		code     int
		id       string
		replayed bool
	}
	send := func(base string, i int) (answer, error) {
		body := fmt.Sprintf(`{"task_type":"noop","params":{"i":%d}}`, i)
		req, err := http.NewRequest("POST", base+"/api/v1/tasks", bytes.NewReader([]byte(body)))
		if err != nil {
			return answer{}, err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", "burst-"+strconv.Itoa(i))
		res, err := hc.Do(req)
		if err != nil {
			return answer{}, err
		}
		defer res.Body.Close()
		raw, err := io.ReadAll(res.Body)
		if err != nil {
			return answer{}, err
		}
		var out struct {
			TaskID string `json:"task_id"`
		}
		_ = json.Unmarshal(raw, &out)
		return answer{code: res.StatusCode, id: out.TaskID, replayed: res.Header.Get("Idempotent-Replayed") == "true"}, nil
	}

	// the burst: the API is killed once a third of the submits are answered
	ids := make([]string, total)
	var answered atomic.Int64
	killAt := int64(total / 3)
	killed := make(chan struct{})
	var killOnce sync.Once
	kill := func() {
		killOnce.Do(func() {
			require.NoError(t, api.cmd.Process.Signal(syscall.SIGKILL))
			close(killed)
		})
	}
	next := make(chan int)
	go func() {
		defer close(next)
		for i := range total {
			next <- i
		}
	}()
	var wg sync.WaitGroup
	var lost atomic.Int64
	start := time.Now()
	for range conc {
		wg.Go(func() {
			for i := range next {
				a, err := send(base, i)
				switch {
				case err != nil || a.code >= 500:
					lost.Add(1) // unanswered: resent below
				case a.code == http.StatusCreated:
					ids[i] = a.id
					if answered.Add(1) == killAt {
						kill()
					}
				default:
					t.Errorf("submit %d: HTTP %d", i, a.code)
				}
			}
		})
	}
	wg.Wait()
	kill()
	<-api.eof
	_ = api.cmd.Wait() // killed: its exit status says so
	procs.forget(api)
	burst := time.Since(start)
	unanswered := total - int(answered.Load())
	t.Logf("burst: %d submits in %s, %d answered before and after the SIGKILL, %d unanswered (connection reset or refused)",
		total, burst.Round(time.Millisecond), answered.Load(), unanswered)
	require.Positive(t, unanswered, "the kill must have left requests unanswered")

	// a new API process; every unanswered request resent with its key
	_, base2 := startAPI()
	var replayed, created atomic.Int64
	var wg2 sync.WaitGroup
	todo := make(chan int, total)
	for i := range total {
		if ids[i] == "" {
			todo <- i
		}
	}
	close(todo)
	for range conc {
		wg2.Go(func() {
			for i := range todo {
				for try := 0; ; try++ {
					a, err := send(base2, i)
					if err == nil && a.code == http.StatusCreated {
						ids[i] = a.id
						if a.replayed {
							replayed.Add(1)
						} else {
							created.Add(1)
						}
						break
					}
					if try > 50 {
						t.Errorf("resend %d never answered: %v %+v", i, err, a)
						return
					}
					time.Sleep(20 * time.Millisecond)
				}
			}
		})
	}
	wg2.Wait()
	t.Logf("resent %d: %d answered from their key's record (the killed process had written the task), %d created now",
		unanswered, replayed.Load(), created.Load())
	// a sample of the answered ones again: the same task
	for i := 0; i < total; i += 97 {
		a, err := send(base2, i)
		require.NoError(t, err)
		require.Equal(t, http.StatusCreated, a.code)
		require.True(t, a.replayed)
		require.Equal(t, ids[i], a.id, "key %d", i)
	}

	// every key maps to one task, and the store holds exactly those
	seen := map[string]int{}
	for i, id := range ids {
		require.NotEmpty(t, id, "key %d", i)
		if j, dup := seen[id]; dup {
			t.Fatalf("keys %d and %d answered the same task %s", j, i, id)
		}
		seen[id] = i
	}
	st, err := store.New(rdb, store.Config{Namespace: ns})
	require.NoError(t, err)
	ctx := context.Background()
	var qs *store.QueueStatus
	require.Eventually(t, func() bool {
		qs, err = st.QueueStatus(ctx)
		require.NoError(t, err)
		return qs.States[task.StateCompleted] == total
	}, 120*time.Second, 100*time.Millisecond, "completed: %v", func() any { return qs })
	var sum int64
	for _, n := range qs.States {
		sum += n
	}
	require.Equal(t, int64(total), sum, "exactly one task per key in the store: %v", qs.States)
	for id, i := range seen {
		tk, err := st.Get(ctx, id)
		require.NoError(t, err, "key %d", i)
		require.Equal(t, task.StateCompleted, tk.State)
		completions := 0
		for _, h := range tk.StateHistory {
			if h.To == task.StateCompleted {
				completions++
			}
		}
		require.Equal(t, 1, completions, "task %s (key %d) completed once", id, i)
		require.JSONEq(t, fmt.Sprintf(`{"i":%d}`, i), string(tk.Params), "key %d's task is its own request's", i)
	}
	t.Logf("figure: %d keys → %d tasks, each COMPLETED once (%d unanswered at the kill; %d of them had been written by the killed process)",
		total, len(seen), unanswered, replayed.Load())
}
