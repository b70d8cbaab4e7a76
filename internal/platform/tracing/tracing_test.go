package tracing_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
	"go.uber.org/goleak"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/taskflow/taskflow/internal/platform/tracing"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// With no endpoint (no OTEL_* set) Setup installs nothing: the global
// provider stays OTel's no-op, whose spans record nothing and carry no
// trace context, so no traceparent is written anywhere.
func TestOffIsANoop(t *testing.T) {
	for _, c := range []tracing.Config{{}, {ServiceName: "x"}, {Endpoint: "http://127.0.0.1:1", Disabled: true}} {
		if c.Enabled() {
			t.Fatalf("%+v: enabled", c)
		}
		shutdown, err := tracing.Setup(context.Background(), c, "worker")
		if err != nil {
			t.Fatal(err)
		}
		if tracing.Active() {
			t.Fatalf("%+v: active", c)
		}
		if ctx, span := tracing.Start(context.Background(), "x", "y", trace.SpanKindInternal); span.IsRecording() || ctx != context.Background() {
			t.Fatalf("%+v: Start made a span or a context", c)
		}
		if n := testing.AllocsPerRun(100, func() {
			_, span := tracing.Start(context.Background(), "process", "t", trace.SpanKindConsumer)
			span.End()
		}); n != 0 {
			t.Fatalf("%+v: Start allocates %v times with tracing off", c, n)
		}
		ctx, span := tracing.Tracer().Start(context.Background(), "x")
		if span.IsRecording() || span.SpanContext().IsValid() {
			t.Fatalf("%+v: the span records (%v) or has a context (%v)", c, span.IsRecording(), span.SpanContext())
		}
		if tp := tracing.Traceparent(ctx); tp != "" {
			t.Fatalf("%+v: traceparent %q", c, tp)
		}
		span.End()
		if _, ok := otel.GetTracerProvider().(*sdktrace.TracerProvider); ok {
			t.Fatalf("%+v: an SDK provider was installed", c)
		}
		if err := shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
}

func TestTraceparentRoundTrip(t *testing.T) {
	tp := sdktrace.NewTracerProvider()
	defer tp.Shutdown(context.Background())
	ctx, span := tp.Tracer("t").Start(context.Background(), "parent")
	defer span.End()
	s := tracing.Traceparent(ctx)
	want := "00-" + span.SpanContext().TraceID().String() + "-" + span.SpanContext().SpanID().String() + "-01"
	if s != want {
		t.Fatalf("traceparent %q, want %q", s, want)
	}
	back := trace.SpanContextFromContext(tracing.WithTraceparent(context.Background(), s))
	if !back.IsRemote() || back.TraceID() != span.SpanContext().TraceID() || back.SpanID() != span.SpanContext().SpanID() {
		t.Fatalf("extracted %v", back)
	}
	for _, bad := range []string{"", "garbage", "00-zz-yy-01"} {
		if sc := trace.SpanContextFromContext(tracing.WithTraceparent(context.Background(), bad)); sc.IsValid() {
			t.Fatalf("%q extracted as %v", bad, sc)
		}
	}
}

func TestLogHandlerAddsTraceIDs(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(tracing.LogHandler(slog.NewTextHandler(&buf, nil))).With("k", "v")
	tp := sdktrace.NewTracerProvider()
	defer tp.Shutdown(context.Background())
	ctx, span := tp.Tracer("t").Start(context.Background(), "s")
	log.InfoContext(ctx, "with span")
	span.End()
	log.InfoContext(context.Background(), "without")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if !strings.Contains(lines[0], "trace_id="+span.SpanContext().TraceID().String()) || !strings.Contains(lines[0], "span_id="+span.SpanContext().SpanID().String()) {
		t.Fatalf("no ids: %s", lines[0])
	}
	if strings.Contains(lines[1], "trace_id") {
		t.Fatalf("ids without a span: %s", lines[1])
	}
}

// A real OTLP/HTTP exporter, set up from the endpoint as the processes set
// it up, posts protobuf to <endpoint>/v1/traces: an httptest server stands
// in for the collector.
func TestSetupExportsToTheEndpoint(t *testing.T) {
	var mu sync.Mutex
	var posts []string
	var sizes []int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		posts = append(posts, r.Method+" "+r.URL.Path+" "+r.Header.Get("Content-Type"))
		sizes = append(sizes, len(b))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	prev := otel.GetTracerProvider()
	defer otel.SetTracerProvider(prev)

	shutdown, err := tracing.Setup(context.Background(), tracing.Config{Endpoint: srv.URL + "/"}, "worker")
	if err != nil {
		t.Fatal(err)
	}
	ctx, span := tracing.Start(context.Background(), "one", "", trace.SpanKindInternal)
	if !tracing.Active() || !span.IsRecording() || tracing.Traceparent(ctx) == "" {
		t.Fatal("the installed provider does not record")
	}
	span.End()
	if err := shutdown(context.Background()); err != nil { // flushes
		t.Fatal(err)
	}
	otel.SetTracerProvider(noop.NewTracerProvider())
	if tracing.Active() {
		t.Fatal("a no-op provider counts as active")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(posts) != 1 || posts[0] != "POST /v1/traces application/x-protobuf" || sizes[0] == 0 {
		t.Fatalf("collector got %q (%v bytes)", posts, sizes)
	}
}

func TestTracesEndpointWins(t *testing.T) {
	got := make(chan string, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.URL.Path
	}))
	defer srv.Close()
	prev := otel.GetTracerProvider()
	defer otel.SetTracerProvider(prev)
	shutdown, err := tracing.Setup(context.Background(), tracing.Config{Endpoint: "http://127.0.0.1:1", TracesEndpoint: srv.URL + "/custom/traces"}, "api")
	if err != nil {
		t.Fatal(err)
	}
	_, span := tracing.Tracer().Start(context.Background(), "one")
	span.End()
	if err := shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if p := <-got; p != "/custom/traces" {
		t.Fatalf("posted to %q", p)
	}
}
