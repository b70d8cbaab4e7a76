// Package taskflow runs your own task types on taskflow's engine, from your
// own Go program: a Client enqueues tasks (from a web handler, a CLI, a
// cron job) and a Worker runs their handlers, with the engine's guarantees —
// a task survives the crash of any process, completes once, retries on the
// schedule of its error class, waits while its dependency's circuit breaker
// is open, and ends in the dead-letter queue when it cannot succeed.
//
// A worker registers a handler per task type, as net/http registers
// handlers per path:
//
//	w, err := taskflow.NewWorker(taskflow.Config{RedisURL: "redis://127.0.0.1:6379/0"})
//	if err != nil { ... }
//	w.HandleFunc("email.send", sendEmail,
//		taskflow.Describe("Sends one email."),
//		taskflow.Params(param.Schema{Fields: []param.Field{{Name: "to", Kind: param.String, Required: true}}}))
//	err = w.Run(ctx) // until ctx ends; then a graceful stop
//
// and a client enqueues tasks of that type:
//
//	c, err := taskflow.NewClient(ctx, taskflow.Config{RedisURL: "redis://127.0.0.1:6379/0"})
//	t, err := c.Enqueue(ctx, "email.send", map[string]any{"to": "ada@example.com"}, taskflow.MaxRetries(5))
//	done, err := c.Wait(ctx, t.ID)
//
// The worker publishes what each handler declares (description, params
// schema, notification text) in Redis, so every part of the deployment
// knows the type: the HTTP API checks a submit's params against it (a 422
// naming the field), lists it at GET /api/v1/task-types and in
// /openapi.json, the dashboard's Submit form draws a form from it, and the
// MCP server offers a tool for it. taskflow's own task types (noop, sleep,
// summarize, plan) are registered the same way; `taskflow worker` is one
// program written on this package.
//
// The task record, its states and the errors a handler returns to say how
// a failure is treated (task.Permanent, task.RetryAfter, task.Transient,
// task.Cancel) are in package task; declared params in package
// extsvc/param. docs/go.md is the guide, with what is stable before v1.
package taskflow
