package worker

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/taskflow/taskflow/internal/platform/tracing"
	"github.com/taskflow/taskflow/task"
)

// startAttempt starts the consumer span "process TYPE" of t's attempt,
// child of the submit's span when t carries its traceparent, and — for a
// first attempt — records the task's wait in its queue as the span
// "queue wait" from its creation to now (the pickup). The handler's
// context carries the attempt's span: a handler's own spans, and the
// dispatch of an external task, are its children.
func startAttempt(ctx context.Context, t *task.Task, now time.Time) (context.Context, trace.Span) {
	parent := tracing.WithTraceparent(ctx, t.Traceparent)
	ctx, span := tracing.Start(parent, "process", t.Type, trace.SpanKindConsumer, trace.WithTimestamp(now))
	if !span.IsRecording() {
		return ctx, span // tracing is off: no attributes, no wait span
	}
	tr := tracing.Tracer()
	queue := string(t.Priority)
	if queue == "" {
		queue = string(task.PriorityNormal)
	}
	attrs := append(tracing.Messaging("process", queue, t.ID), tracing.AttrOperationName.String("process"),
		tracing.AttrTaskType.String(t.Type), tracing.AttrAttempt.Int(t.Attempt()), tracing.AttrRetryCount.Int(t.RetryCount))
	span.SetAttributes(attrs...)
	if t.RetryCount == 0 && !t.CreatedAt.IsZero() && t.CreatedAt.Before(now) {
		_, wait := tr.Start(parent, "queue wait", trace.WithTimestamp(t.CreatedAt),
			trace.WithAttributes(append(tracing.Messaging("receive", queue, t.ID), tracing.AttrTaskType.String(t.Type))...))
		wait.End(trace.WithTimestamp(now))
	}
	return ctx, span
}

// endAttempt records what became of the attempt and ends its span.
func endAttempt(span trace.Span, outcome string) {
	if span.IsRecording() {
		span.SetAttributes(tracing.AttrOutcome.String(outcome))
	}
	span.End()
}
