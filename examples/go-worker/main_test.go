package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/taskflow/taskflow"
	"github.com/taskflow/taskflow/task"
)

// testConfig is a namespace of its own on the test Redis
// (TASKFLOW_TEST_REDIS_URL, default redis://127.0.0.1:6379/0), deleted
// at the end. A Redis that does not answer fails the test.
func testConfig(t *testing.T) taskflow.Config {
	t.Helper()
	url := os.Getenv("TASKFLOW_TEST_REDIS_URL")
	if url == "" {
		url = "redis://127.0.0.1:6379/0"
	}
	opt, err := redis.ParseURL(url)
	if err != nil {
		t.Fatalf("TASKFLOW_TEST_REDIS_URL: %v", err)
	}
	rdb := redis.NewClient(opt)
	ctx := context.Background()
	if err := rdb.Ping(ctx).Err(); err != nil {
		t.Fatalf("no Redis at %s: %v", url, err)
	}
	ns := fmt.Sprintf("invoices-test-%d", time.Now().UnixNano())
	t.Cleanup(func() {
		var keys []string
		iter := rdb.Scan(ctx, 0, "{"+ns+"}*", 1000).Iterator()
		for iter.Next(ctx) {
			keys = append(keys, iter.Val())
		}
		if len(keys) > 0 {
			rdb.Del(ctx, keys...)
		}
		_ = rdb.Close()
	})
	cfg := config()
	cfg.Getenv, cfg.RedisURL, cfg.Namespace = nil, url, ns
	return cfg
}

// TestInvoiceThenEmail runs the program's worker and enqueues through its
// client: the email waits for the invoice, both complete.
func TestInvoiceThenEmail(t *testing.T) {
	cfg := testConfig(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	done := make(chan error, 1)
	wctx, stopWorker := context.WithCancel(ctx)
	go func() { done <- run(wctx, cfg, []string{"worker"}) }()
	t.Cleanup(func() {
		stopWorker()
		if err := <-done; err != nil {
			t.Errorf("worker: %v", err)
		}
	})

	got, err := send(ctx, cfg, "ada@example.com", 120.5)
	if err != nil {
		t.Fatal(err)
	}
	if got.State != task.StateCompleted || string(got.Result) != `{"sent_to":"ada@example.com","subject":"Your invoice"}` {
		t.Fatalf("email ended %s with %s", got.State, got.Result)
	}

	// a wrong amount is refused at enqueue, naming the field
	_, err = send(ctx, cfg, "ada@example.com", -1)
	var e *taskflow.Error
	if !errors.As(err, &e) || !errors.Is(err, taskflow.ErrInvalid) || e.Field != "params.amount" {
		t.Fatalf("a negative amount: %v", err)
	}
}
