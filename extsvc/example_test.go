package extsvc_test

import (
	"context"
	"encoding/json"
	"log"
	"os"
	"os/signal"

	"github.com/redis/go-redis/v9"

	"github.com/taskflow/taskflow/extsvc"
)

// A service that takes greet.hello tasks: it reads its params, reports
// progress, and returns result object. Run it next to `taskflow
// dev` (or any deployment sharing the Redis) with greet.hello listed in
// TASKFLOW_EXTERNAL_TYPES.
func Example() {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
	defer rdb.Close()
	svc, err := extsvc.New(rdb, extsvc.Config{Name: "greeter"})
	if err != nil {
		log.Fatal(err)
	}
	svc.HandleFunc("greet.hello", func(ctx context.Context, t *extsvc.Task) (json.RawMessage, error) {
		var p struct {
			Name string `json:"name"`
		}
		if err := t.UnmarshalParams(&p); err != nil {
			return nil, err // INVALID_PARAMS, not retried
		}
		if p.Name == "" {
			return nil, extsvc.Fail("INVALID_PARAMS", "params.name is required", false)
		}
		_ = t.Progress(ctx, 50, "composing", 0)
		return extsvc.Result("", "Hello, "+p.Name+"!", nil), nil
	})
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := svc.Run(ctx); err != nil { // until Ctrl-C, then a graceful stop
		log.Fatal(err)
	}
}
