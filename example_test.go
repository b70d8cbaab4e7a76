package taskflow_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/taskflow/taskflow"
	"github.com/taskflow/taskflow/extsvc/param"
	"github.com/taskflow/taskflow/internal/testrig/testredis"
	"github.com/taskflow/taskflow/task"
)

// exampleConfig is a deployment of its own on the test Redis
// (TASKFLOW_TEST_REDIS_URL, default redis://127.0.0.1:6379/0); the
// returned func deletes its keys.
func exampleConfig() (taskflow.Config, func()) {
	ns := fmt.Sprintf("example-%d", time.Now().UnixNano())
	cfg := taskflow.Config{RedisURL: testredis.URL(), Namespace: ns,
		Logger: slog.New(slog.DiscardHandler)}
	return cfg, func() {
		c, err := testredis.Open()
		if err != nil {
			return
		}
		defer c.Close()
		testredis.DeletePrefix(context.Background(), c, ns)
	}
}

type greeting struct {
	Name string `json:"name"`
}

// A worker serves a task type of its own; a client enqueues a task of it
// and waits for the result.
func Example() {
	cfg, cleanup := exampleConfig()
	defer cleanup()
	ctx := context.Background()

	w, err := taskflow.NewWorker(cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	w.Handle("greet", taskflow.JSONHandler(func(ctx context.Context, p greeting) (string, error) {
		return "hello " + p.Name, nil
	}), taskflow.Describe("Greets someone."), taskflow.Params(param.Schema{Fields: []param.Field{
		{Name: "name", Kind: param.String, Required: true},
	}}))
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(runCtx) }()
	defer func() { stop(); <-done }()

	// The client may run in another process; here it declares the type
	// itself so it need not wait for the worker to publish it.
	cfg.Types = w.TypeInfos()
	c, err := taskflow.NewClient(ctx, cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()

	t, err := c.Enqueue(ctx, "greet", greeting{Name: "Ada"}, taskflow.MaxRetries(5))
	if err != nil {
		fmt.Println(err)
		return
	}
	finished, err := c.Wait(ctx, t.ID)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(finished.State, string(finished.Result))

	// params that break the declared schema are refused, naming the field
	_, err = c.Enqueue(ctx, "greet", map[string]any{"name": 42})
	var e *taskflow.Error
	if errors.As(err, &e) {
		fmt.Println(errors.Is(err, taskflow.ErrInvalid), e.Field)
	}
	// Output:
	// COMPLETED "hello Ada"
	// true params.name
}

// EnqueueMany writes many tasks in one batched call; one refused item
// refuses them all, naming it.
func ExampleClient_EnqueueMany() {
	cfg, cleanup := exampleConfig()
	defer cleanup()
	ctx := context.Background()
	cfg.Types = []taskflow.TypeInfo{{Name: "thumbnail.make"}}
	c, err := taskflow.NewClient(ctx, cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()

	reqs := make([]taskflow.Request, 3)
	for i := range reqs {
		reqs[i] = taskflow.Request{Type: "thumbnail.make", Params: map[string]int{"image": i},
			Options: []taskflow.Option{taskflow.Priority(task.PriorityLow)}}
	}
	ts, err := c.EnqueueMany(ctx, reqs)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(len(ts), ts[0].State, ts[0].Priority)

	reqs[2].Type = "thumbnail.mkae"
	_, err = c.EnqueueMany(ctx, reqs)
	var e *taskflow.Error
	if errors.As(err, &e) {
		fmt.Println(e.Field)
	}
	// Output:
	// 3 PENDING low
	// items[2].task_type
}

// Middleware wraps every handler of a mux: here a log line per task, and
// a recovery that turns one error into a permanent failure.
func ExampleMux_Use() {
	mux := taskflow.NewMux()
	mux.Use(func(next taskflow.Handler) taskflow.Handler {
		return taskflow.HandlerFunc(func(ctx context.Context, t *task.Task) (json.RawMessage, error) {
			res, err := next.ProcessTask(ctx, t)
			fmt.Printf("%s attempt %d: err=%v\n", t.Type, t.Attempt(), err)
			return res, err
		})
	})
	mux.HandleFunc("report.build", func(ctx context.Context, t *task.Task) (json.RawMessage, error) {
		if t.RetryCount > 0 {
			return nil, task.Permanent(errors.New("the data is gone"))
		}
		return json.RawMessage(`{"pages":3}`), nil
	})
	_, _ = mux.ProcessTask(context.Background(), &task.Task{ID: "t1", Type: "report.build"})
	_, err := mux.ProcessTask(context.Background(), &task.Task{ID: "t1", Type: "report.build", RetryCount: 1})
	var pe *task.PermanentError
	fmt.Println(errors.As(err, &pe))
	// Output:
	// report.build attempt 1: err=<nil>
	// report.build attempt 2: err=the data is gone
	// true
}

// JSONHandler decodes the params into a struct (a misspelt field is a
// permanent failure) and encodes the result.
func ExampleJSONHandler() {
	h := taskflow.JSONHandler(func(ctx context.Context, p struct {
		Width  int `json:"width"`
		Height int `json:"height"`
	}) (map[string]int, error) {
		return map[string]int{"area": p.Width * p.Height}, nil
	})
	res, _ := h.ProcessTask(context.Background(), &task.Task{Params: json.RawMessage(`{"width":3,"height":4}`)})
	fmt.Println(string(res))
	_, err := h.ProcessTask(context.Background(), &task.Task{Params: json.RawMessage(`{"widht":3}`)})
	fmt.Println(err)
	// Output:
	// {"area":12}
	// params: json: unknown field "widht"
}
