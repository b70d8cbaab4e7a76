package resultview

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/internal/engine/clock"
	"github.com/taskflow/taskflow/internal/engine/store"
	"github.com/taskflow/taskflow/internal/external/archive"
	"github.com/taskflow/taskflow/internal/testrig/testredis"
	"github.com/taskflow/taskflow/task"
)

// t0 is where every test's fake clock starts.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// bundle is one test's store (on the real test Redis, in a namespace of
// its own), the fake clock the store and the Results share, and Results.
type bundle struct {
	rdb redis.UniversalClient
	st  *store.Store
	clk *clock.Fake
	arc *archive.Archive // nil unless asked for
	r   *Results
	ctx context.Context
}

// options shape a bundle.
type options struct {
	archive bool   // open a PostgreSQL archive of the test's own
	cfg     Config // Results' configuration; Clock and Archive are filled in
}

func setup(t *testing.T, o options) *bundle {
	t.Helper()
	rdb, ns := testredis.Client(t)
	clk := clock.NewFake(t0)
	st, err := store.New(rdb, store.Config{Namespace: ns, Clock: clk})
	require.NoError(t, err)
	b := &bundle{rdb: rdb, st: st, clk: clk, ctx: context.Background()}
	cfg := o.cfg
	if cfg.Clock == nil {
		cfg.Clock = clk
	}
	if o.archive {
		b.arc = openArchive(t)
		cfg.Archive = b.arc
	}
	b.r = New(st, cfg)
	return b
}

// databaseURL is the test PostgreSQL: TASKFLOW_TEST_DATABASE_URL, else
// the local default (as internal/external/archive's tests).
func databaseURL() string {
	if u := os.Getenv("TASKFLOW_TEST_DATABASE_URL"); u != "" {
		return u
	}
	return "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
}

// openArchive opens an archive in a schema of the test's own, dropped at
// cleanup. A missing server fails the test.
func openArchive(t *testing.T) *archive.Archive {
	t.Helper()
	schema := "tftest_" + strings.ReplaceAll(uuid.NewString()[:13], "-", "")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	a, err := archive.Open(ctx, archive.Config{DatabaseURL: databaseURL(), Schema: schema, MaxConns: 2})
	require.NoError(t, err, "PostgreSQL at %s (set TASKFLOW_TEST_DATABASE_URL)", databaseURL())
	t.Cleanup(func() {
		a.Close()
		p, err := pgxpool.New(context.Background(), databaseURL())
		if err == nil {
			_, _ = p.Exec(context.Background(), `DROP SCHEMA `+pgx.Identifier{schema}.Sanitize()+` CASCADE`)
			p.Close()
		}
	})
	return a
}

func (b *bundle) enqueue(t *testing.T, r store.EnqueueRequest) *task.Task {
	t.Helper()
	if r.Type == "" {
		r.Type = "report.generate"
	}
	tk, err := b.st.Enqueue(b.ctx, r)
	require.NoError(t, err)
	return tk
}

// fetchOne takes the next task as worker w1.
func (b *bundle) fetchOne(t *testing.T) *task.Task {
	t.Helper()
	got, err := b.st.Fetch(b.ctx, store.FetchRequest{N: 1, WorkerID: "w1", TokenPrefix: "w1-" + uuid.NewString()[:8], Lease: 30 * time.Second})
	require.NoError(t, err)
	require.Len(t, got, 1)
	return got[0]
}

// active enqueues a task with r and takes it: it is ACTIVE, held by w1.
func (b *bundle) active(t *testing.T, r store.EnqueueRequest) *task.Task {
	t.Helper()
	tk := b.enqueue(t, r)
	got := b.fetchOne(t)
	require.Equal(t, tk.ID, got.ID)
	return got
}

// completed is a task completed with result (as the store writes it).
func (b *bundle) completed(t *testing.T, r store.EnqueueRequest, result json.RawMessage) *task.Task {
	t.Helper()
	tk := b.active(t, r)
	require.NoError(t, b.st.Complete(b.ctx, tk.ID, tk.Lease, result))
	return b.get(t, tk.ID)
}

func (b *bundle) get(t *testing.T, id string) *task.Task {
	t.Helper()
	tk, err := b.st.Get(b.ctx, id)
	require.NoError(t, err)
	return tk
}

func (b *bundle) read(t *testing.T, id string) View {
	t.Helper()
	v, err := b.r.Read(b.ctx, id)
	require.NoError(t, err)
	require.Equal(t, id, v.TaskID)
	return v
}

// archiveAndForget archives task id as the store holds it, then deletes
// it from Redis (its retention there is over).
func (b *bundle) archiveAndForget(t *testing.T, id string) *task.Task {
	t.Helper()
	tk := b.get(t, id)
	require.NoError(t, b.arc.Put(b.ctx, tk))
	require.NoError(t, b.st.Delete(b.ctx, id))
	_, err := b.st.Get(b.ctx, id)
	require.ErrorIs(t, err, task.ErrNotFound, "the task has left Redis")
	return tk
}

// cache writes task id's result cache as the orchestrator does
// ({"result":…,"cached_at":…}).
func (b *bundle) cache(t *testing.T, id string, result json.RawMessage) {
	t.Helper()
	body := `{"result":` + string(result) + `,"cached_at":"` + b.clk.Now().Format(time.RFC3339Nano) + `"}`
	require.NoError(t, b.rdb.Set(b.ctx, NewKeys(b.st.Namespace()).Cache(id), body, 24*time.Hour).Err())
}
