// Package tracing is taskflow's OpenTelemetry tracing: the process's
// TracerProvider (an OTLP/HTTP exporter when an OTLP endpoint is
// configured, nothing otherwise), the W3C traceparent a task carries from
// its submit to its attempts and to the external services, the span
// attributes after OpenTelemetry's messaging semantic conventions, and a
// slog handler that adds the active span's ids to log records.
//
// Spans are made through the global TracerProvider (otel.GetTracerProvider),
// so a program embedding the public Go API gets them in its own provider
// when it installs one, and none when it does not: the global default is a
// no-op that records nothing.
package tracing

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// Scope is the instrumentation scope of taskflow's spans.
const Scope = "github.com/taskflow/taskflow"

// Config is the part of the OTel environment taskflow reads itself
// (through internal/platform/config's table): whether to export, where,
// and under which service name. Every other OTEL_* variable
// (OTEL_EXPORTER_OTLP_HEADERS, _TIMEOUT, _COMPRESSION, OTEL_TRACES_SAMPLER,
// OTEL_BSP_*, OTEL_RESOURCE_ATTRIBUTES) is read by the OTel SDK itself.
type Config struct {
	// Endpoint is the OTLP/HTTP base URL (OTEL_EXPORTER_OTLP_ENDPOINT);
	// traces go to Endpoint + "/v1/traces".
	Endpoint string
	// TracesEndpoint is the full traces URL
	// (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT); it wins over Endpoint.
	TracesEndpoint string
	// Disabled turns tracing off whatever the endpoints (OTEL_SDK_DISABLED).
	Disabled bool
	// ServiceName is service.name (OTEL_SERVICE_NAME); default
	// "taskflow-<role>".
	ServiceName string
}

// Enabled reports whether c exports traces: an endpoint is set and the
// SDK is not disabled.
func (c Config) Enabled() bool {
	return !c.Disabled && (c.Endpoint != "" || c.TracesEndpoint != "")
}

// url is where the exporter posts spans.
func (c Config) url() string {
	if c.TracesEndpoint != "" {
		return c.TracesEndpoint
	}
	return strings.TrimRight(c.Endpoint, "/") + "/v1/traces"
}

// Setup installs the process's TracerProvider and the W3C propagator as
// OTel's globals when c is enabled, and returns the shutdown that flushes
// the spans still buffered (call it on exit). When c is not enabled it
// installs nothing: the global provider stays OTel's no-op and shutdown
// does nothing.
func Setup(ctx context.Context, c Config, role string) (shutdown func(context.Context) error, err error) {
	if !c.Enabled() {
		return func(context.Context) error { return nil }, nil
	}
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(c.url()))
	if err != nil {
		return nil, fmt.Errorf("tracing: OTLP exporter: %w", err)
	}
	name := c.ServiceName
	if name == "" {
		name = "taskflow"
		if role != "" {
			name += "-" + role
		}
	}
	// resource.Default reads OTEL_RESOURCE_ATTRIBUTES; service.name is ours
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(attribute.String("service.name", name)))
	if err != nil {
		return nil, fmt.Errorf("tracing: resource: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	Install(tp)
	return tp.Shutdown, nil
}

// Install makes tp OTel's global TracerProvider and W3C trace context the
// global propagator (tests install a provider with an in-memory exporter).
func Install(tp trace.TracerProvider) {
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(propagation.TraceContext{})
}

// Tracer is taskflow's tracer from the global provider.
func Tracer() trace.Tracer { return otel.GetTracerProvider().Tracer(Scope) }

// unset is OTel's global TracerProvider before anyone installs one (this
// package is initialised before any package that imports it can install
// one).
var unset = otel.GetTracerProvider()

// Active reports whether a TracerProvider is installed as OTel's global
// (by Setup, Install or the program's own otel.SetTracerProvider) that is
// not a no-op: one atomic load and a comparison, so that with tracing off
// a task's path skips its spans altogether.
func Active() bool {
	tp := otel.GetTracerProvider()
	if tp == unset {
		return false
	}
	_, off := tp.(noop.TracerProvider)
	return !off
}

// none is the span Start returns when tracing is off.
var none = trace.SpanFromContext(context.Background())

// Start starts the span "name subject" (just name when subject is "") of
// the given kind, child of ctx's span, when tracing is Active. Otherwise it
// returns ctx unchanged (an incoming trace context it carries passes on)
// and a span that records nothing: no allocation, no name built.
// Attributes are set by the caller once span.IsRecording().
func Start(ctx context.Context, name, subject string, kind trace.SpanKind, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	if !Active() {
		return ctx, none
	}
	if subject != "" {
		name += " " + subject
	}
	return Tracer().Start(ctx, name, append(opts, trace.WithSpanKind(kind))...)
}

// Messaging attributes (OpenTelemetry semantic conventions for messaging)
// and taskflow's own.
const (
	AttrSystem        = attribute.Key("messaging.system")
	AttrOperationType = attribute.Key("messaging.operation.type")
	AttrOperationName = attribute.Key("messaging.operation.name")
	AttrDestination   = attribute.Key("messaging.destination.name")
	AttrMessageID     = attribute.Key("messaging.message.id")
	AttrBatchCount    = attribute.Key("messaging.batch.message_count")
	AttrConsumerGroup = attribute.Key("messaging.consumer.group.name")
	AttrTaskType      = attribute.Key("taskflow.task.type")
	AttrAttempt       = attribute.Key("taskflow.task.attempt")
	AttrRetryCount    = attribute.Key("taskflow.task.retry_count")
	AttrOutcome       = attribute.Key("taskflow.task.outcome")
	AttrErrorType     = attribute.Key("error.type")
)

// System is messaging.system of every taskflow span.
const System = "taskflow"

var systemAttr = AttrSystem.String(System)

// Messaging returns the common attributes of a span about one task
// message: system, operation, destination and, when known, its id.
func Messaging(op, destination, id string) []attribute.KeyValue {
	a := []attribute.KeyValue{systemAttr, AttrOperationType.String(op), AttrDestination.String(destination)}
	if id != "" {
		a = append(a, AttrMessageID.String(id))
	}
	return a
}

// carrier holds one traceparent for the W3C propagator (no map).
type carrier struct{ tp string }

func (c *carrier) Get(k string) string {
	if k == "traceparent" {
		return c.tp
	}
	return ""
}
func (c *carrier) Set(k, v string) {
	if k == "traceparent" {
		c.tp = v
	}
}
func (c *carrier) Keys() []string { return []string{"traceparent"} }

// Traceparent is the W3C traceparent of ctx's span, "" when ctx has no
// valid span context (tracing off costs no formatting).
func Traceparent(ctx context.Context) string {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return ""
	}
	var c carrier
	propagation.TraceContext{}.Inject(ctx, &c)
	return c.tp
}

// WithTraceparent returns ctx carrying tp's span context as its remote
// parent; ctx itself when tp is "" or not a valid traceparent.
func WithTraceparent(ctx context.Context, tp string) context.Context {
	if tp == "" {
		return ctx
	}
	return propagation.TraceContext{}.Extract(ctx, &carrier{tp: tp})
}

// Fail marks span as failed with err (error.type is errType when given).
func Fail(span trace.Span, err error, errType string) {
	if err == nil || !span.IsRecording() {
		return
	}
	span.RecordError(err)
	span.SetStatus(codes.Error, err.Error())
	if errType != "" {
		span.SetAttributes(AttrErrorType.String(errType))
	}
}

// LogHandler wraps h: a record logged with a context that carries a valid
// span gets the span's trace_id and span_id attributes, so a log line
// leads to its trace.
func LogHandler(h slog.Handler) slog.Handler {
	if _, ok := h.(logHandler); ok {
		return h
	}
	return logHandler{h}
}

type logHandler struct{ slog.Handler }

func (h logHandler) Handle(ctx context.Context, r slog.Record) error {
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		r.AddAttrs(slog.String("trace_id", sc.TraceID().String()), slog.String("span_id", sc.SpanID().String()))
	}
	return h.Handler.Handle(ctx, r)
}

func (h logHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return logHandler{h.Handler.WithAttrs(as)}
}

func (h logHandler) WithGroup(name string) slog.Handler {
	return logHandler{h.Handler.WithGroup(name)}
}
