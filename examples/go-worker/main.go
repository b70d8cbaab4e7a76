// Command invoices is an example of taskflow used as a library: a program
// of its own that defines two task types, runs a worker for them, and
// enqueues tasks of them from the same binary.
//
//	REDIS_URL=redis://127.0.0.1:6379/0 go run . worker            # serve the two types until Ctrl-C
//	REDIS_URL=redis://127.0.0.1:6379/0 go run . send ada@example.com 120.50
//
// "send" enqueues an invoice.render task and an email.send task that
// depends on it, then waits for the email and prints its result. The types
// are also known to the rest of the deployment once the worker has run:
// taskflow's API lists them, checks their params and offers them in the
// dashboard's Submit form and as MCP tools.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"syscall"

	"github.com/taskflow/taskflow"
	"github.com/taskflow/taskflow/extsvc/param"
	"github.com/taskflow/taskflow/task"
)

// Invoice is invoice.render's params.
type Invoice struct {
	Customer string  `json:"customer"`
	Amount   float64 `json:"amount"`
}

// Email is email.send's params.
type Email struct {
	To      string `json:"to"`
	Subject string `json:"subject"`
}

// register declares the two task types and their handlers on r (a
// taskflow.Worker, or a Mux in a test).
func register(r taskflow.Registrar) {
	r.Handle("invoice.render", taskflow.JSONHandler(renderInvoice),
		taskflow.Describe("Renders a customer's invoice as text."),
		taskflow.Params(param.Schema{Fields: []param.Field{
			{Name: "customer", Kind: param.String, Required: true, MaxLen: 200, Description: "the customer's email"},
			{Name: "amount", Kind: param.Number, Required: true, Min: 0.01, Max: 1e9, Description: "the amount due"},
		}}),
		taskflow.Notify("Your invoice for {customer} is ready"))
	r.Handle("email.send", taskflow.JSONHandler(sendEmail),
		taskflow.Describe("Sends an email (here: pretends to)."),
		taskflow.Params(param.Schema{Fields: []param.Field{
			{Name: "to", Kind: param.String, Required: true, MaxLen: 200},
			{Name: "subject", Kind: param.String, MaxLen: 200},
		}}),
		taskflow.Dependency("smtp")) // a circuit breaker keeps tasks waiting while the mail server fails
}

func renderInvoice(ctx context.Context, inv Invoice) (map[string]string, error) {
	if inv.Amount <= 0 {
		return nil, task.Permanent(errors.New("the amount must be positive")) // no retry: the input is wrong
	}
	_ = taskflow.ReportProgress(ctx, 50, "rendering")
	t, _ := taskflow.TaskFrom(ctx)
	return map[string]string{"invoice": fmt.Sprintf("INVOICE %s\nto: %s\ndue: %.2f", t.ID, inv.Customer, inv.Amount)}, nil
}

func sendEmail(ctx context.Context, e Email) (map[string]string, error) {
	if e.To == "bounce@example.com" {
		return nil, task.Transient(task.ErrTypeServiceUnavailable, errors.New("mail server unavailable")) // retried on its schedule
	}
	return map[string]string{"sent_to": e.To, "subject": e.Subject}, nil
}

// send enqueues an invoice and the email that waits for it, then waits for
// the email.
func send(ctx context.Context, cfg taskflow.Config, to string, amount float64) (*task.Task, error) {
	c, err := taskflow.NewClient(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	inv, err := c.Enqueue(ctx, "invoice.render", Invoice{Customer: to, Amount: amount}, taskflow.MaxRetries(3))
	if err != nil {
		return nil, err
	}
	mail, err := c.Enqueue(ctx, "email.send", Email{To: to, Subject: "Your invoice"}, taskflow.DependsOn(inv.ID))
	if err != nil {
		return nil, err
	}
	return c.Wait(ctx, mail.ID)
}

func config() taskflow.Config {
	mux := taskflow.NewMux()
	register(mux)
	return taskflow.Config{Getenv: os.Getenv, Types: mux.TypeInfos(),
		Logger: slog.New(slog.NewTextHandler(os.Stderr, nil))}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, config(), os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "invoices:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, cfg taskflow.Config, args []string) error {
	switch {
	case len(args) == 1 && args[0] == "worker":
		w, err := taskflow.NewWorker(cfg)
		if err != nil {
			return err
		}
		register(w)
		return w.Run(ctx)
	case len(args) == 3 && args[0] == "send":
		amount, err := strconv.ParseFloat(args[2], 64)
		if err != nil {
			return fmt.Errorf("amount %q: %w", args[2], err)
		}
		t, err := send(ctx, cfg, args[1], amount)
		if err != nil {
			return err
		}
		fmt.Println(t.State, string(t.Result))
		return nil
	}
	return errors.New("usage: invoices worker | invoices send EMAIL AMOUNT (REDIS_URL names the Redis)")
}
