// Package nodeservice tests the Node example service: a real `node`
// process speaking the protocol of docs/protocol.md, checked with the Go
// decoder of internal/external/protocol.
package nodeservice

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/internal/engine/keyspace"
	"github.com/taskflow/taskflow/internal/external/protocol"
	"github.com/taskflow/taskflow/internal/testrig/testredis"
	"github.com/taskflow/taskflow/internal/testrig/testwait"
)

func TestNodeServiceSpeaksTheProtocol(t *testing.T) {
	t.Parallel()
	node, err := exec.LookPath("node")
	require.NoError(t, err, "node is not on PATH")
	_, err = os.Stat("node_modules/@taskflow/sdk/dist/index.js")
	require.NoError(t, err, "examples/node-service/node_modules or the SDK's build is missing: run `make node-service-deps` (.ci/run does)")

	rdb, ns := testredis.Client(t)
	k := protocol.NewKeys(keyspace.MustParse(ns))
	ctx := context.Background()

	cmd := exec.Command(node, "service.js")
	cmd.Env = append(os.Environ(), "REDIS_URL="+testredis.URL(), "TASKFLOW_NAMESPACE="+ns, "BLOCK_MS=100")
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	stderr := &syncBuf{}
	cmd.Stderr = stderr
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "ready ") {
				ready <- sc.Text()
			}
		}
		exited <- cmd.Wait()
	}()
	select {
	case <-ready:
	case <-time.After(20 * time.Second):
		t.Fatalf("node service never became ready; stderr: %s", stderr.String())
	}

	// Registered with its type, as the orchestrator expects.
	types, err := rdb.HGet(ctx, k.Service("wordcount-service"), "types").Result()
	require.NoError(t, err)
	require.Equal(t, "text.wordcount", types)

	pub := protocol.NewPublisher(rdb, 0, nil)
	create := func(id, typ, params string) {
		e, err := protocol.New(protocol.TypeCreate, time.Now(), protocol.CreateData{TaskID: id, TaskType: typ,
			Params: json.RawMessage(params), SessionID: "s", Timeout: 30, Priority: "normal", CreatedBy: "agent", Attempt: 1, Token: "tok-" + id})
		require.NoError(t, err)
		_, err = pub.Publish(ctx, k.Create(), e)
		require.NoError(t, err)
	}
	create("n1", "text.wordcount", `{"text":"the cat and the hat"}`)
	create("n2", "report.generate", `{}`)
	create("n3", "text.wordcount", `{"text":""}`)

	outcomes := map[string]protocol.Event{}
	testwait.Until(t, 20*time.Second, 20*time.Millisecond, func() bool {
		for _, s := range []string{k.Completed(), k.Failed()} {
			xs, err := rdb.XRange(ctx, s, "-", "+").Result()
			require.NoError(t, err)
			for _, x := range xs {
				e, err := protocol.Decode(x.ID, x.Values) // the Go decoder accepts what Node wrote
				require.NoError(t, err)
				v, err := e.Unmarshal()
				require.NoError(t, err)
				switch d := v.(type) {
				case *protocol.CompletedData:
					outcomes[d.TaskID] = e
				case *protocol.FailedData:
					outcomes[d.TaskID] = e
				}
			}
		}
		return len(outcomes) >= 2
	}, func() string { return fmt.Sprintf("%d outcomes, want 2; stderr: %s", len(outcomes), stderr.String()) })
	require.Len(t, outcomes, 2, "stderr: %s", stderr.String())
	c, err := protocol.As[protocol.CompletedData](outcomes["n1"])
	require.NoError(t, err)
	require.Equal(t, "tok-n1", c.Token)
	require.Equal(t, "wordcount-service", c.CompletedBy)
	var res struct {
		Summary  string `json:"summary"`
		Metadata struct {
			Words    int `json:"words"`
			TopWords []struct {
				Word  string `json:"word"`
				Count int    `json:"count"`
			} `json:"top_words"`
		} `json:"metadata"`
	}
	require.NoError(t, json.Unmarshal(c.Result, &res))
	require.Equal(t, 5, res.Metadata.Words)
	require.Equal(t, "the", res.Metadata.TopWords[0].Word)
	require.Equal(t, 2, res.Metadata.TopWords[0].Count)

	f, err := protocol.As[protocol.FailedData](outcomes["n3"])
	require.NoError(t, err)
	require.Equal(t, "INVALID_PARAMS", f.Error.Code)
	require.False(t, f.Error.IsTransient())

	// Progress events decode too; every create entry is acknowledged,
	// including the one of another type.
	xs, err := rdb.XRange(ctx, k.Progress(), "-", "+").Result()
	require.NoError(t, err)
	require.NotEmpty(t, xs)
	for _, x := range xs {
		e, err := protocol.Decode(x.ID, x.Values)
		require.NoError(t, err)
		_, err = protocol.As[protocol.ProgressData](e)
		require.NoError(t, err)
	}
	_, pending, err := protocol.Lag(ctx, rdb, k.Create(), "wordcount-service-group")
	require.NoError(t, err)
	require.Zero(t, pending)

	// Graceful stop on SIGTERM.
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	select {
	case err := <-exited:
		exited <- err
		require.NoError(t, err, "stderr: %s", stderr.String())
	case <-time.After(10 * time.Second):
		t.Fatal("node service did not stop on SIGTERM")
	}
}

// syncBuf is a strings.Builder safe for the exec copier and the test.
type syncBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
