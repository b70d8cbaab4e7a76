package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/taskflow/taskflow/extsvc"
	"github.com/taskflow/taskflow/internal/platform/tracing"
	"github.com/taskflow/taskflow/internal/testrig/testredis"
)

// spans are the ended spans of one trace, for assertions.
type spans []sdktrace.ReadOnlySpan

func traceOf(rec *tracetest.SpanRecorder, id trace.TraceID) spans {
	var out spans
	for _, s := range rec.Ended() {
		if s.SpanContext().TraceID() == id {
			out = append(out, s)
		}
	}
	return out
}

// named returns the spans named name whose attribute key (if given) is v.
func (ss spans) named(name string, kv ...attribute.KeyValue) spans {
	var out spans
	for _, s := range ss {
		if s.Name() != name {
			continue
		}
		ok := true
		for _, want := range kv {
			found := false
			for _, a := range s.Attributes() {
				if a.Key == want.Key && a.Value == want.Value {
					found = true
				}
			}
			ok = ok && found
		}
		if ok {
			out = append(out, s)
		}
	}
	return out
}

func (ss spans) String() string {
	var b strings.Builder
	for _, s := range ss {
		fmt.Fprintf(&b, "%s %s parent=%s kind=%s\n", s.SpanContext().SpanID(), s.Name(), s.Parent().SpanID(), s.SpanKind())
	}
	return b.String()
}

func attr(s sdktrace.ReadOnlySpan, k attribute.Key) attribute.Value {
	for _, a := range s.Attributes() {
		if a.Key == k {
			return a.Value
		}
	}
	return attribute.Value{}
}

// TestDevOneTracePerTask: with a TracerProvider installed (the SDK's span
// recorder as its processor), a task submitted over HTTP with a
// traceparent header is one trace from the caller's span to its
// notification: the HTTP server span, the submit, the queue wait, the
// worker's attempt, the dispatch of task.create, the service's handler
// (extsvc), the outcome's apply and the notification, each the child of
// the one before; the messaging attributes name the task. A CLI submit is
// a trace rooted in the CLI's span.
func TestDevOneTracePerTask(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	tracing.Install(tp)
	t.Cleanup(func() {
		otel.SetTracerProvider(noop.NewTracerProvider())
		_ = tp.Shutdown(context.Background())
	})

	rdb, ns := testredis.Client(t)
	base, printed := startDev(t, map[string]string{"REDIS_URL": testredis.URL(), "TASKFLOW_NAMESPACE": ns,
		"TASKFLOW_EXTERNAL_TYPES": "traced.job", "LOG_LEVEL": "info"}) // LOG_LEVEL: the process logs to printed

	handlerSpan := make(chan trace.SpanContext, 1)
	svc, err := extsvc.New(rdb, extsvc.Config{Name: "traced-service", Namespace: ns, Block: 100 * time.Millisecond})
	require.NoError(t, err)
	svc.HandleFunc("traced.job", func(ctx context.Context, tk *extsvc.Task) (json.RawMessage, error) {
		handlerSpan <- trace.SpanContextFromContext(ctx)
		return extsvc.Result("", "traced", nil), nil
	})
	svcCtx, stopSvc := context.WithCancel(context.Background())
	svcDone := make(chan error, 1)
	go func() { svcDone <- svc.Run(svcCtx) }()
	t.Cleanup(func() {
		stopSvc()
		select {
		case err := <-svcDone:
			if !errors.Is(err, context.Canceled) {
				require.NoError(t, err)
			}
		case <-time.After(20 * time.Second):
			t.Error("the service did not stop")
		}
	})

	// the caller's own span: the API continues its traceparent header
	callerCtx, caller := tp.Tracer("test").Start(context.Background(), "caller")
	do := func(method, path, token, body string, traced bool) (int, string) {
		req, err := http.NewRequest(method, base+path, strings.NewReader(body))
		require.NoError(t, err)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		req.Header.Set("Content-Type", "application/json")
		if traced {
			req.Header.Set("traceparent", tracing.Traceparent(callerCtx))
		}
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	code, body := do("POST", "/api/v1/sessions", "", "", false)
	require.Equal(t, http.StatusCreated, code, body)
	var sess struct {
		Token string `json:"token"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &sess))
	code, body = do("POST", "/api/v1/tasks", sess.Token, `{"task_type":"traced.job"}`, true)
	require.Equal(t, http.StatusCreated, code, body)
	var sub struct {
		ID string `json:"task_id"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &sub))
	caller.End()
	tid := caller.SpanContext().TraceID()

	select {
	case sc := <-handlerSpan:
		require.Equal(t, tid, sc.TraceID(), "the service's handler runs in the task's trace")
	case <-time.After(20 * time.Second):
		t.Fatalf("the service never ran the task\n%s", printed.String())
	}
	var ss spans
	require.Eventually(t, func() bool {
		ss = traceOf(rec, tid)
		return len(ss.named("publish notification")) == 1 && len(ss.named("apply task.completed")) == 1
	}, 20*time.Second, 20*time.Millisecond, "no notification span in the task's trace:\n%s", traceOf(rec, tid))

	one := func(name string, kind trace.SpanKind, kv ...attribute.KeyValue) sdktrace.ReadOnlySpan {
		t.Helper()
		got := ss.named(name, kv...)
		require.Len(t, got, 1, "span %q in\n%s", name, ss)
		require.Equal(t, kind, got[0].SpanKind(), name)
		return got[0]
	}
	msgID := tracing.AttrMessageID.String(sub.ID)
	server := one("POST /api/v1/tasks", trace.SpanKindServer)
	submit := one("submit traced.job", trace.SpanKindProducer, msgID)
	wait := one("queue wait", trace.SpanKindInternal, msgID)
	process := one("process traced.job", trace.SpanKindConsumer, msgID)
	publish := one("publish task.create", trace.SpanKindProducer)
	handler := one("process traced.job", trace.SpanKindConsumer, attribute.String("taskflow.service", "traced-service"))
	apply := one("apply task.completed", trace.SpanKindConsumer)
	note := one("publish notification", trace.SpanKindProducer)

	chain := []struct {
		child, parent sdktrace.ReadOnlySpan
	}{{server, caller.(sdktrace.ReadOnlySpan)}, {submit, server}, {wait, submit}, {process, submit}, {publish, process},
		{handler, publish}, {apply, handler}, {note, apply}}
	for _, c := range chain {
		require.Equal(t, c.parent.SpanContext().SpanID(), c.child.Parent().SpanID(), "%s is a child of %s\n%s", c.child.Name(), c.parent.Name(), ss)
	}
	require.False(t, wait.StartTime().After(process.StartTime()), "the wait starts before the attempt")
	require.Equal(t, "taskflow", attr(process, tracing.AttrSystem).AsString())
	require.Equal(t, "process", attr(process, tracing.AttrOperationType).AsString())
	require.Equal(t, "normal", attr(process, tracing.AttrDestination).AsString())
	require.Equal(t, int64(0), attr(process, tracing.AttrRetryCount).AsInt64())
	require.Equal(t, "handed_off", attr(process, tracing.AttrOutcome).AsString())
	require.Equal(t, codes.Unset, process.Status().Code, "a hand-off is no failure")
	require.Equal(t, "send", attr(submit, tracing.AttrOperationType).AsString())
	require.Contains(t, attr(publish, tracing.AttrDestination).AsString(), "task.create")
	require.Equal(t, sub.ID, attr(note, attribute.Key("taskflow.task.id")).AsString())
	// the dispatch's log line names the trace and its span
	require.Contains(t, printed.String(), "trace_id="+tid.String()+" span_id="+publish.SpanContext().SpanID().String(), "log lines:\n%s", printed.String())

	// A CLI submit: the command's span is the root, the API continues it.
	var out, errb bytes.Buffer
	m := testMain(map[string]string{"TASKFLOW_URL": base, "TASKFLOW_TOKEN": sess.Token}, &out)
	m.Stderr = &errb
	require.NoError(t, m.Run(context.Background(), []string{"submit", "--type", "traced.job", "--wait"}), errb.String())
	var cli sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.Name() == "taskflow submit" {
			cli = s
		}
	}
	require.NotNil(t, cli, "the CLI's span")
	require.Equal(t, trace.SpanKindClient, cli.SpanKind())
	cs := traceOf(rec, cli.SpanContext().TraceID())
	require.NotEmpty(t, cs.named("submit traced.job"), "the CLI's submit is in its trace:\n%s", cs)
	require.NotEmpty(t, cs.named("process traced.job"), "and so is its attempt:\n%s", cs)
}
