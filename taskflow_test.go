package taskflow_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/taskflow/taskflow"
	"github.com/taskflow/taskflow/extsvc/param"
	"github.com/taskflow/taskflow/internal/engine/keyspace"
	"github.com/taskflow/taskflow/internal/engine/store"
	"github.com/taskflow/taskflow/internal/external/protocol"
	"github.com/taskflow/taskflow/internal/frontdoor/auth"
	"github.com/taskflow/taskflow/internal/tasktypes"
	"github.com/taskflow/taskflow/internal/testrig/testredis"
	"github.com/taskflow/taskflow/task"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// deployment is a namespace of its own on the test Redis.
type deployment struct {
	cfg taskflow.Config
	ctx context.Context
}

func newDeployment(t *testing.T) *deployment {
	t.Helper()
	_, ns := testredis.Client(t) // deletes the namespace's keys at cleanup
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return &deployment{ctx: ctx, cfg: taskflow.Config{RedisURL: testredis.URL(), Namespace: ns, Concurrency: 8,
		ShutdownGrace: 2 * time.Second}}
}

func (d *deployment) client(t *testing.T, cfg ...taskflow.Config) *taskflow.Client {
	t.Helper()
	c := d.cfg
	if len(cfg) > 0 {
		c = cfg[0]
	}
	cl, err := taskflow.NewClient(d.ctx, c)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, cl.Close()) })
	return cl
}

// run starts w until the test ends; it returns a stop func that waits for
// Run to return.
func (d *deployment) run(t *testing.T, w *taskflow.Worker) func() {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			require.NoError(t, <-done)
		})
	}
	t.Cleanup(stop)
	return stop
}

type emailParams struct {
	To      string `json:"to"`
	Subject string `json:"subject,omitempty"`
}

var emailSchema = param.Schema{Fields: []param.Field{
	{Name: "to", Kind: param.String, Required: true, MaxLen: 200},
	{Name: "subject", Kind: param.String},
}}

// TestUserTypesEndToEnd: two types of a user's own, registered through the
// public API with middleware, enqueued by a client that knows them only
// from what the worker published, run with the task in their context and
// their progress recorded.
func TestUserTypesEndToEnd(t *testing.T) {
	d := newDeployment(t)
	w, err := taskflow.NewWorker(d.cfg)
	require.NoError(t, err)
	var seen sync.Map // task id → what the handler saw in its context
	var order []string
	var mu sync.Mutex
	w.Use(func(next taskflow.Handler) taskflow.Handler {
		return taskflow.HandlerFunc(func(ctx context.Context, t *task.Task) (json.RawMessage, error) {
			mu.Lock()
			order = append(order, "outer:"+t.Type)
			mu.Unlock()
			return next.ProcessTask(ctx, t)
		})
	}, func(next taskflow.Handler) taskflow.Handler {
		return taskflow.HandlerFunc(func(ctx context.Context, t *task.Task) (json.RawMessage, error) {
			mu.Lock()
			order = append(order, "inner:"+t.Type)
			mu.Unlock()
			return next.ProcessTask(ctx, t)
		})
	})
	w.Handle("email.send", taskflow.JSONHandler(func(ctx context.Context, p emailParams) (map[string]string, error) {
		tk, ok := taskflow.TaskFrom(ctx)
		if !ok {
			return nil, errors.New("no task in the context")
		}
		_, hasDeadline := ctx.Deadline()
		seen.Store(tk.ID, fmt.Sprintf("%s attempt=%d deadline=%v", tk.Type, tk.Attempt(), hasDeadline))
		if err := taskflow.ReportProgress(ctx, 50, "half way"); err != nil {
			return nil, err
		}
		return map[string]string{"sent_to": p.To}, nil
	}), taskflow.Describe("Sends one email."), taskflow.Params(emailSchema), taskflow.Notify("Your email to {to} is sent"))
	w.HandleFunc("report.build", func(ctx context.Context, t *task.Task) (json.RawMessage, error) {
		return json.RawMessage(`{"pages":3}`), nil
	}, taskflow.Describe("Builds a report."))
	require.Equal(t, []string{"email.send", "report.build"}, w.Types())
	d.run(t, w)

	// the client declares nothing: it learns the types from the worker
	c := d.client(t)
	require.Eventually(t, func() bool {
		_, err := c.Enqueue(d.ctx, "report.build", nil)
		return err == nil
	}, 10*time.Second, 10*time.Millisecond, "the worker's types are never published")

	e, err := c.Enqueue(d.ctx, "email.send", emailParams{To: "ada@example.com"}, taskflow.MaxRetries(2),
		taskflow.Priority(task.PriorityHigh), taskflow.Timeout(30*time.Second))
	require.NoError(t, err)
	require.Equal(t, task.StatePending, e.State)
	require.Equal(t, 2, e.MaxRetries)
	require.Equal(t, task.PriorityHigh, e.Priority)
	done, err := c.Wait(d.ctx, e.ID)
	require.NoError(t, err)
	require.Equal(t, task.StateCompleted, done.State)
	require.JSONEq(t, `{"sent_to":"ada@example.com"}`, string(done.Result))
	v, ok := seen.Load(e.ID)
	require.True(t, ok)
	require.Equal(t, "email.send attempt=1 deadline=true", v)
	mu.Lock()
	require.Contains(t, order, "outer:email.send")
	require.Less(t, indexOf(order, "outer:email.send"), indexOf(order, "inner:email.send"), "middleware order: %v", order)
	mu.Unlock()

	// the progress is where the result view reads it
	rdb, _ := testredis.Client(t)
	pr, err := rdb.HGetAll(d.ctx, keyspace.MustParse(d.cfg.Namespace).Prefix()+"agent:progress:"+e.ID).Result()
	require.NoError(t, err)
	require.Equal(t, "50", pr["percent"])
	require.Equal(t, "half way", pr["message"])

	// the params are checked against the published schema, naming the field
	_, err = c.Enqueue(d.ctx, "email.send", map[string]any{"to": 5})
	require.ErrorIs(t, err, taskflow.ErrInvalid)
	var te *taskflow.Error
	require.ErrorAs(t, err, &te)
	require.Equal(t, "params.to", te.Field)
	_, err = c.Enqueue(d.ctx, "email.sned", nil)
	require.ErrorIs(t, err, taskflow.ErrInvalid)
	require.ErrorAs(t, err, &te)
	require.Equal(t, "task_type", te.Field)
}

func indexOf(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}

// TestPublishedTypeReachesTheRegistry: the registry every API and MCP
// process builds (tasktype with the workers' hash) lists the user's type
// with its description, schema and notification text.
func TestPublishedTypeReachesTheRegistry(t *testing.T) {
	d := newDeployment(t)
	w, err := taskflow.NewWorker(d.cfg)
	require.NoError(t, err)
	w.Handle("email.send", taskflow.HandlerFunc(func(context.Context, *task.Task) (json.RawMessage, error) { return nil, nil }),
		taskflow.Describe("Sends one email."), taskflow.Params(emailSchema), taskflow.Notify("Sent to {to}"))
	d.run(t, w)
	rdb, _ := testredis.Client(t)
	ns := keyspace.MustParse(d.cfg.Namespace)
	reg, err := tasktypes.New(tasktypes.Config{Redis: rdb, Keys: protocol.NewKeys(ns), WorkerTypes: store.WorkerTypesKeyOf(ns),
		Refresh: time.Millisecond})
	require.NoError(t, err)
	var got tasktypes.Type
	require.Eventually(t, func() bool {
		var ok bool
		got, ok = reg.Lookup(d.ctx, "email.send")
		return ok
	}, 10*time.Second, 10*time.Millisecond)
	require.False(t, got.External)
	require.Equal(t, "Sends one email.", got.Description)
	require.EqualValues(t, []any{"to"}, got.Schema()["required"])
	require.Equal(t, "Sent to ada", tasktypes.Render(got.Notify, json.RawMessage(`{"to":"ada"}`)))
	var pe *param.Error
	require.ErrorAs(t, got.CheckParams(json.RawMessage(`{"subject":"x"}`)), &pe)
	require.Equal(t, "to", pe.Field)
	names := []string{}
	for _, ty := range reg.List(d.ctx) {
		names = append(names, ty.Name)
	}
	require.Contains(t, names, "email.send")
}

// TestControlErrors: a permanent failure ends in the DLQ at once, a
// retry-after is retried with the next attempt number, a cancel of a
// running task cancels its context with task.ErrCancelRequested.
func TestControlErrors(t *testing.T) {
	d := newDeployment(t)
	w, err := taskflow.NewWorker(d.cfg)
	require.NoError(t, err)
	var attempts sync.Map
	cancelled := make(chan error, 1)
	running := make(chan string, 1)
	w.HandleFunc("job.permanent", func(ctx context.Context, t *task.Task) (json.RawMessage, error) {
		return nil, task.Permanent(errors.New("bad input"))
	})
	w.HandleFunc("job.flaky", func(ctx context.Context, t *task.Task) (json.RawMessage, error) {
		attempts.Store(t.Attempt(), true)
		if t.Attempt() == 1 {
			return nil, task.RetryAfter(errors.New("not yet"), 20*time.Millisecond)
		}
		return json.RawMessage(`"ok"`), nil
	})
	w.HandleFunc("job.long", func(ctx context.Context, t *task.Task) (json.RawMessage, error) {
		running <- t.ID
		<-ctx.Done()
		cancelled <- context.Cause(ctx)
		return nil, ctx.Err()
	})
	d.run(t, w)
	c := d.client(t, withTypes(d.cfg, "job.permanent", "job.flaky", "job.long"))

	p, err := c.Enqueue(d.ctx, "job.permanent", nil, taskflow.MaxRetries(5))
	require.NoError(t, err)
	got, err := c.Wait(d.ctx, p.ID)
	require.ErrorIs(t, err, taskflow.ErrTaskFailed)
	require.Equal(t, task.StateDLQ, got.State)
	require.Equal(t, 0, got.RetryCount)
	require.Contains(t, got.LastError, "bad input")

	f, err := c.Enqueue(d.ctx, "job.flaky", nil)
	require.NoError(t, err)
	got, err = c.Wait(d.ctx, f.ID)
	require.NoError(t, err)
	require.JSONEq(t, `"ok"`, string(got.Result))
	_, second := attempts.Load(2)
	require.True(t, second)

	l, err := c.Enqueue(d.ctx, "job.long", nil)
	require.NoError(t, err)
	require.Equal(t, l.ID, <-running)
	finished, err := c.Cancel(d.ctx, l.ID)
	require.NoError(t, err)
	require.False(t, finished, "a running task's cancel is a request")
	require.ErrorIs(t, <-cancelled, task.ErrCancelRequested)
	got, err = c.Wait(d.ctx, l.ID)
	require.ErrorIs(t, err, taskflow.ErrTaskCancelled)
	require.Equal(t, task.StateCancelled, got.State)
}

func withTypes(cfg taskflow.Config, names ...string) taskflow.Config {
	for _, n := range names {
		cfg.Types = append(cfg.Types, taskflow.TypeInfo{Name: n})
	}
	return cfg
}

// TestClientCalls: Get, Retry, Delete, EnqueueMany (all or nothing, the
// item named), options, and the errors a caller tests with errors.Is.
func TestClientCalls(t *testing.T) {
	d := newDeployment(t)
	cfg := d.cfg
	cfg.Types = []taskflow.TypeInfo{{Name: "email.send", Params: emailSchema}, {Name: "any.thing"}}
	c := d.client(t, cfg)

	_, err := c.Get(d.ctx, "no-such-task")
	require.ErrorIs(t, err, taskflow.ErrNotFound)

	ts, err := c.EnqueueMany(d.ctx, []taskflow.Request{
		{Type: "email.send", Params: emailParams{To: "a@example.com"}},
		{Type: "any.thing", Params: json.RawMessage(`{"n":1}`), Options: []taskflow.Option{taskflow.Delay(time.Hour)}},
		{Type: "any.thing", Options: []taskflow.Option{taskflow.Content("text"), taskflow.PartitionKey("tenant-1")}},
	})
	require.NoError(t, err)
	require.Len(t, ts, 3)
	for _, tk := range ts {
		got, err := c.Get(d.ctx, tk.ID)
		require.NoError(t, err)
		require.Equal(t, tk.Type, got.Type)
	}
	later, err := c.Get(d.ctx, ts[1].ID)
	require.NoError(t, err)
	require.JSONEq(t, `{"n":1}`, string(later.Params))
	withContent, err := c.Get(d.ctx, ts[2].ID)
	require.NoError(t, err)
	require.Equal(t, "text", withContent.Content)

	// one bad item: nothing is created, the item is named
	before := countTasks(t, c, d, ts)
	_, err = c.EnqueueMany(d.ctx, []taskflow.Request{
		{Type: "email.send", Params: emailParams{To: "b@example.com"}},
		{Type: "email.send", Params: map[string]any{"subject": "no to"}},
	})
	require.ErrorIs(t, err, taskflow.ErrInvalid)
	var te *taskflow.Error
	require.ErrorAs(t, err, &te)
	require.Equal(t, "items[1].params.to", te.Field)
	require.Equal(t, before, countTasks(t, c, d, ts))

	// a dependency of the same call's task
	dep, err := c.Enqueue(d.ctx, "any.thing", nil, taskflow.DependsOn(ts[0].ID))
	require.NoError(t, err)
	require.Equal(t, task.StatePending, dep.State)

	// retry of a PENDING task, delete, bad options
	require.ErrorIs(t, c.Retry(d.ctx, ts[0].ID), taskflow.ErrConflict)
	require.NoError(t, c.Delete(d.ctx, ts[2].ID))
	_, err = c.Get(d.ctx, ts[2].ID)
	require.ErrorIs(t, err, taskflow.ErrNotFound)
	_, err = c.Enqueue(d.ctx, "any.thing", nil, taskflow.MaxRetries(101))
	require.ErrorIs(t, err, taskflow.ErrInvalid)
	require.ErrorAs(t, err, &te)
	require.Equal(t, "max_retries", te.Field)
	// a live session's tasks, one session check for a whole batch
	rdb, _ := testredis.Client(t)
	au, err := auth.New(rdb, auth.Config{Namespace: keyspace.MustParse(d.cfg.Namespace)})
	require.NoError(t, err)
	sess, err := au.CreateSession(d.ctx)
	require.NoError(t, err)
	owned, err := c.EnqueueMany(d.ctx, []taskflow.Request{
		{Type: "any.thing", Options: []taskflow.Option{taskflow.Session(sess.ID)}},
		{Type: "any.thing", Options: []taskflow.Option{taskflow.Session(sess.ID)}},
	})
	require.NoError(t, err)
	for _, tk := range owned {
		require.Equal(t, sess.ID, tk.SessionID)
	}
	_, err = c.EnqueueMany(d.ctx, []taskflow.Request{
		{Type: "any.thing", Options: []taskflow.Option{taskflow.Session(sess.ID)}},
		{Type: "any.thing"},
	})
	require.ErrorAs(t, err, &te)
	require.Equal(t, "items[1]", te.Field)
	_, err = c.Enqueue(d.ctx, "any.thing", nil, taskflow.Session("no-such-session"))
	require.ErrorAs(t, err, &te)
	require.Equal(t, "session", te.Field)
	_, err = c.Enqueue(d.ctx, "any.thing", func() {})
	require.ErrorAs(t, err, &te)
	require.Equal(t, "params", te.Field)
	done, err := c.Cancel(d.ctx, ts[1].ID)
	require.NoError(t, err)
	require.True(t, done)
}

// countTasks counts the PENDING tasks of the deployment through a store of
// its own (what the client created).
func countTasks(t *testing.T, _ *taskflow.Client, d *deployment, _ []*task.Task) int64 {
	t.Helper()
	rdb, _ := testredis.Client(t)
	st, err := store.New(rdb, store.Config{Namespace: d.cfg.Namespace})
	require.NoError(t, err)
	qs, err := st.QueueStatus(d.ctx)
	require.NoError(t, err)
	return qs.States[task.StatePending]
}

// TestRedisUnavailable: a call while Redis does not answer is an
// ErrUnavailable (retryable), not a panic or a hang.
func TestRedisUnavailable(t *testing.T) {
	srv := testredis.StartServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := taskflow.NewClient(ctx, taskflow.Config{RedisURL: srv.URL(), Types: []taskflow.TypeInfo{{Name: "any.thing"}}})
	require.NoError(t, err)
	defer c.Close()
	_, err = c.Enqueue(ctx, "any.thing", nil)
	require.NoError(t, err)
	srv.Stop()
	_, err = c.Enqueue(ctx, "any.thing", nil)
	require.ErrorIs(t, err, taskflow.ErrUnavailable)
	_, err = c.Get(ctx, "some-task")
	require.ErrorIs(t, err, taskflow.ErrUnavailable)
}

// TestNoHandlerWaits: a worker that has no handler for a task's type lets
// it wait without spending a retry, and a worker that has one runs it.
func TestNoHandlerWaits(t *testing.T) {
	d := newDeployment(t)
	c := d.client(t, withTypes(d.cfg, "only.b"))
	tk, err := c.Enqueue(d.ctx, "only.b", nil, taskflow.MaxRetries(0))
	require.NoError(t, err)

	wa, err := taskflow.NewWorker(d.cfg)
	require.NoError(t, err)
	var ranA atomic.Int64
	wa.HandleFunc("only.a", func(context.Context, *task.Task) (json.RawMessage, error) { ranA.Add(1); return nil, nil })
	stopA := d.run(t, wa)
	require.Eventually(t, func() bool {
		got, err := c.Get(d.ctx, tk.ID)
		require.NoError(t, err)
		for _, h := range got.StateHistory {
			if h.To == task.StatePending && h.From == task.StateActive {
				return true
			}
		}
		return false
	}, 10*time.Second, 10*time.Millisecond, "the task is never handed back")
	stopA()
	got, err := c.Get(d.ctx, tk.ID)
	require.NoError(t, err)
	require.Equal(t, 0, got.RetryCount, "waiting for a handler spends no retry")
	require.NotEqual(t, task.StateDLQ, got.State)

	cfg := d.cfg
	cfg.WorkerID = "has-b"
	wb, err := taskflow.NewWorker(cfg)
	require.NoError(t, err)
	wb.HandleFunc("only.b", func(context.Context, *task.Task) (json.RawMessage, error) { return json.RawMessage(`1`), nil })
	d.run(t, wb)
	done, err := c.Wait(d.ctx, tk.ID)
	require.NoError(t, err)
	require.Equal(t, "has-b", done.Worker)
	require.Zero(t, ranA.Load())
}

// TestGracefulShutdown: a handler still running when the grace ends is
// cancelled with task.ErrShutdown and its task goes back to the queue
// without spending a retry; Run returns nil; a second Run is refused.
func TestGracefulShutdown(t *testing.T) {
	d := newDeployment(t)
	cfg := d.cfg
	cfg.ShutdownGrace = 100 * time.Millisecond
	w, err := taskflow.NewWorker(cfg)
	require.NoError(t, err)
	started := make(chan struct{}, 1)
	cause := make(chan error, 1)
	w.HandleFunc("job.long", func(ctx context.Context, t *task.Task) (json.RawMessage, error) {
		started <- struct{}{}
		<-ctx.Done()
		cause <- context.Cause(ctx)
		return nil, ctx.Err()
	})
	stop := d.run(t, w)
	c := d.client(t, withTypes(d.cfg, "job.long"))
	tk, err := c.Enqueue(d.ctx, "job.long", nil)
	require.NoError(t, err)
	<-started
	stop()
	require.ErrorIs(t, <-cause, task.ErrShutdown)
	got, err := c.Get(d.ctx, tk.ID)
	require.NoError(t, err)
	require.Equal(t, task.StatePending, got.State)
	require.Equal(t, 0, got.RetryCount)
	require.ErrorIs(t, w.Run(d.ctx), taskflow.ErrRunTwice)
}

// TestBreakerDependency: a type's declared dependency gets a circuit
// breaker in the worker, listed in the workers view.
func TestBreakerDependency(t *testing.T) {
	d := newDeployment(t)
	w, err := taskflow.NewWorker(d.cfg)
	require.NoError(t, err)
	w.HandleFunc("email.send", func(context.Context, *task.Task) (json.RawMessage, error) { return nil, nil },
		taskflow.Dependency("smtp"))
	d.run(t, w)
	rdb, _ := testredis.Client(t)
	st, err := store.New(rdb, store.Config{Namespace: d.cfg.Namespace})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		ws, err := st.Workers(d.ctx, 60_000)
		return err == nil && len(ws) == 1 && hasBreaker(ws[0].Fields["breakers"], "smtp")
	}, 10*time.Second, 10*time.Millisecond)
}

// hasBreaker reports whether a worker's published breakers (a JSON list
// of snapshots) include dep's.
func hasBreaker(js, dep string) bool {
	var bs []struct {
		Dependency string `json:"dependency"`
	}
	if json.Unmarshal([]byte(js), &bs) != nil {
		return false
	}
	for _, b := range bs {
		if b.Dependency == dep {
			return true
		}
	}
	return false
}

func TestRegistrationMistakesPanic(t *testing.T) {
	m := taskflow.NewMux()
	h := taskflow.HandlerFunc(func(context.Context, *task.Task) (json.RawMessage, error) { return nil, nil })
	m.Handle("a.b", h)
	require.Panics(t, func() { m.Handle("a.b", h) })
	require.Panics(t, func() { m.Handle("Bad Name", h) })
	require.Panics(t, func() { m.Handle("x", nil) })
	require.Panics(t, func() { m.Handle("y", h, taskflow.JSONSchema(json.RawMessage(`[1]`))) })
	_, err := taskflow.NewWorker(taskflow.Config{})
	require.Error(t, err, "RedisURL is required")
}

// TestJSONHandler: params decoded strictly (a typo is a permanent
// failure), the result encoded.
func TestJSONHandler(t *testing.T) {
	h := taskflow.JSONHandler(func(ctx context.Context, p emailParams) (string, error) { return "to " + p.To, nil })
	res, err := h.ProcessTask(context.Background(), &task.Task{Params: json.RawMessage(`{"to":"x"}`)})
	require.NoError(t, err)
	require.JSONEq(t, `"to x"`, string(res))
	_, err = h.ProcessTask(context.Background(), &task.Task{Params: json.RawMessage(`{"too":"x"}`)})
	var pe *task.PermanentError
	require.ErrorAs(t, err, &pe)
	require.ErrorIs(t, taskflow.ReportProgress(context.Background(), 1, ""), taskflow.ErrNoProgress)
}
