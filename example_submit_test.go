package taskflow_test

import (
	"context"
	"fmt"
	"time"

	"github.com/taskflow/taskflow"
)

// A unique key makes a second enqueue answer the task already waiting; an
// idempotency key makes a retried call (after a lost answer or an
// ErrUnavailable) return the first call's task.
func ExampleUniqueKey() {
	cfg, cleanup := exampleConfig()
	defer cleanup()
	ctx := context.Background()
	cfg.Types = []taskflow.TypeInfo{{Name: "report.nightly"}}
	c, err := taskflow.NewClient(ctx, cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()

	var dup bool
	first, _ := c.Enqueue(ctx, "report.nightly", nil, taskflow.UniqueKey("2026-11-28", time.Hour))
	again, err := c.Enqueue(ctx, "report.nightly", nil, taskflow.UniqueKey("2026-11-28", time.Hour), taskflow.Duplicate(&dup))
	fmt.Println(err, dup, again.ID == first.ID)

	sent, _ := c.Enqueue(ctx, "report.nightly", map[string]string{"to": "ops"}, taskflow.IdempotencyKey("call-42"))
	resent, err := c.Enqueue(ctx, "report.nightly", map[string]string{"to": "ops"}, taskflow.IdempotencyKey("call-42"), taskflow.Duplicate(&dup))
	fmt.Println(err, dup, resent.ID == sent.ID)
	// Output:
	// <nil> true true
	// <nil> true true
}

// EnqueueBatch answers each request on its own: a refused one does not
// stop the others.
func ExampleClient_EnqueueBatch() {
	cfg, cleanup := exampleConfig()
	defer cleanup()
	ctx := context.Background()
	cfg.Types = []taskflow.TypeInfo{{Name: "mail.send"}}
	c, err := taskflow.NewClient(ctx, cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()

	res, err := c.EnqueueBatch(ctx, []taskflow.Request{
		{Type: "mail.send", Params: map[string]string{"to": "a@example.com"}},
		{Type: "mail.sned"},
		{Type: "mail.send", Params: map[string]string{"to": "b@example.com"}},
	}, "")
	if err != nil {
		fmt.Println(err)
		return
	}
	for i, r := range res {
		if r.Err != nil {
			fmt.Println(i, "refused:", r.Err.(*taskflow.Error).Field)
			continue
		}
		fmt.Println(i, r.Task.State)
	}
	// Output:
	// 0 PENDING
	// 1 refused: tasks[1].task_type
	// 2 PENDING
}
