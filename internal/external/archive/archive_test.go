package archive

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/taskflow/taskflow/internal/engine/keyspace"
	"github.com/taskflow/taskflow/internal/frontdoor/audit"
	"github.com/taskflow/taskflow/internal/testrig/testredis"
	"github.com/taskflow/taskflow/task"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// DatabaseURL is the test server: TASKFLOW_TEST_DATABASE_URL or the local
// default.
func DatabaseURL() string {
	if u := os.Getenv("TASKFLOW_TEST_DATABASE_URL"); u != "" {
		return u
	}
	return "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
}

// open returns an archive in a schema of the test's own, dropped at
// cleanup. A missing server fails the test.
func open(t *testing.T) *Archive {
	t.Helper()
	schema := "tftest_" + strings.ReplaceAll(uuid.NewString()[:13], "-", "")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	a, err := Open(ctx, Config{DatabaseURL: DatabaseURL(), Schema: schema})
	require.NoError(t, err, "PostgreSQL at %s (set TASKFLOW_TEST_DATABASE_URL)", DatabaseURL())
	t.Cleanup(func() {
		_, _ = a.pool.Exec(context.Background(), `DROP SCHEMA `+pgx.Identifier{schema}.Sanitize()+` CASCADE`)
		a.Close()
	})
	return a
}

func finished(id, session string, state task.State, at time.Time) *task.Task {
	done := at
	return &task.Task{ID: id, Type: "report.generate", State: state, SessionID: session, Priority: task.PriorityHigh,
		Params: json.RawMessage(`{"quarter":"Q4"}`), Result: json.RawMessage(`{"file_url":"file:///x","summary":"ok"}`),
		Timeout: 300 * time.Second, RetryCount: 1, MaxRetries: 3, CreatedAt: at.Add(-time.Minute), UpdatedAt: at,
		CompletedAt: &done, ErrorHistory: []task.ErrorRecord{{At: at, Attempt: 1, ErrorType: "X", Message: "m"}},
		StateHistory: []task.StateChange{{At: at, From: task.StateActive, To: state}}}
}

func TestPutGetRoundTrip(t *testing.T) {
	t.Parallel()
	a := open(t)
	ctx := context.Background()
	at := time.Date(2024, 1, 1, 12, 5, 0, 0, time.UTC)
	in := finished("t1", "s1", task.StateCompleted, at)
	require.NoError(t, a.Put(ctx, in))
	require.NoError(t, a.Put(ctx, in), "a second put is idempotent")
	got, err := a.Get(ctx, "t1")
	require.NoError(t, err)
	require.Equal(t, in.ID, got.ID)
	require.Equal(t, in.State, got.State)
	require.Equal(t, 300*time.Second, got.Timeout)
	require.JSONEq(t, string(in.Result), string(got.Result))
	require.JSONEq(t, string(in.Params), string(got.Params))
	require.True(t, in.CompletedAt.Equal(*got.CompletedAt))
	require.Len(t, got.ErrorHistory, 1)
	n, err := a.Count(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 1, n)

	_, err = a.Get(ctx, "nope")
	require.ErrorIs(t, err, ErrNotFound)
}

func TestOlderVersionDoesNotOverwrite(t *testing.T) {
	t.Parallel()
	a := open(t)
	ctx := context.Background()
	at := time.Now().UTC().Truncate(time.Millisecond)
	require.NoError(t, a.Put(ctx, finished("t1", "s1", task.StateCompleted, at)))
	require.NoError(t, a.Put(ctx, finished("t1", "s1", task.StateTimeout, at.Add(-time.Second))))
	got, err := a.Get(ctx, "t1")
	require.NoError(t, err)
	require.Equal(t, task.StateCompleted, got.State)
	require.NoError(t, a.Put(ctx, finished("t1", "s1", task.StateCancelled, at.Add(time.Second))))
	got, err = a.Get(ctx, "t1")
	require.NoError(t, err)
	require.Equal(t, task.StateCancelled, got.State)
}

func TestListSession(t *testing.T) {
	t.Parallel()
	a := open(t)
	ctx := context.Background()
	at := time.Now().UTC().Truncate(time.Millisecond)
	var batch []*task.Task
	for i := 0; i < 6; i++ {
		st := task.StateCompleted
		if i%3 == 0 {
			st = task.StateDLQ
		}
		batch = append(batch, finished(fmt.Sprintf("t%d", i), "s1", st, at.Add(time.Duration(i)*time.Second)))
	}
	batch = append(batch, finished("other", "s2", task.StateCompleted, at))
	require.NoError(t, a.PutBatch(ctx, batch))
	all, err := a.ListSession(ctx, "s1", nil, 100)
	require.NoError(t, err)
	require.Len(t, all, 6)
	require.Equal(t, "t5", all[0].ID, "newest first")
	dlq, err := a.ListSession(ctx, "s1", []task.State{task.StateDLQ}, 100)
	require.NoError(t, err)
	require.Len(t, dlq, 2)
	none, err := a.ListSession(ctx, "s3", nil, 10)
	require.NoError(t, err)
	require.Empty(t, none)
}

func TestConcurrentOpenAndPut(t *testing.T) {
	t.Parallel()
	a := open(t)
	// Another process opening the same schema while this one writes.
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := 0; i < 4; i++ {
		wg.Add(2)
		go func() {
			defer wg.Done()
			b, err := Open(context.Background(), Config{DatabaseURL: DatabaseURL(), Schema: a.Schema(), MaxConns: 1})
			if err == nil {
				b.Close()
			}
			errs <- err
		}()
		go func(i int) {
			defer wg.Done()
			errs <- a.Put(context.Background(), finished(fmt.Sprintf("c%d", i), "s", task.StateCompleted, time.Now()))
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	n, err := a.Count(context.Background())
	require.NoError(t, err)
	require.EqualValues(t, 4, n)
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	require.ErrorContains(t, Config{}.WithDefaults().Validate(), "DATABASE_URL")
	require.ErrorContains(t, Config{DatabaseURL: "x", Schema: "Bad-Name"}.WithDefaults().Validate(), "Schema")
}

// The audit trail keeps each entry here too, once (its stream id), so it
// outlives the trail's Redis retention.
func TestAuditEntriesArchived(t *testing.T) {
	t.Parallel()
	a := open(t)
	rdb, ns := testredis.Client(t)
	trail, err := audit.New(rdb, audit.Config{Namespace: keyspace.MustParse(ns), Archive: a})
	require.NoError(t, err)
	ctx := context.Background()
	for _, actor := range []string{"oncall", "oncall", "lead"} {
		require.NoError(t, trail.Record(ctx, audit.Entry{Actor: actor, Role: "operator",
			Action: "POST /api/v1/tasks/{task_id}/retry", Target: "task_id=t1", Status: 200, Client: "127.0.0.1"}))
	}
	n, err := a.AuditEntries(ctx, "oncall")
	require.NoError(t, err)
	require.EqualValues(t, 2, n)
	n, err = a.AuditEntries(ctx, "")
	require.NoError(t, err)
	require.EqualValues(t, 3, n)
	// a repeated write of an entry (a retry) is harmless
	es, _, err := trail.List(ctx, audit.Filter{Limit: 1})
	require.NoError(t, err)
	require.NoError(t, a.PutAuditEntry(ctx, es[0].ID, es[0].At, es[0].Actor, es[0].Role, es[0].Action, es[0].Target, es[0].Status, es[0].Client))
	n, err = a.AuditEntries(ctx, "")
	require.NoError(t, err)
	require.EqualValues(t, 3, n)
}
