package config

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/taskflow/taskflow/internal/engine/retry"
	"github.com/taskflow/taskflow/internal/engine/store"
	"github.com/taskflow/taskflow/internal/engine/worker"
	"github.com/taskflow/taskflow/internal/platform/seconds"
)

// A Setting is one entry of the configuration table.
type Setting struct {
	// Env is the environment variable.
	Env string
	// Flag is the command-line flag that overrides the variable, "" when
	// there is none. The commands that take it bind it with BindFlags.
	Flag string
	// Default is the default in the variable's own syntax: setting the
	// variable to it changes nothing (a test checks it). "" when no one
	// value is the default; DefaultDoc then says what is.
	Default string
	// DefaultDoc is the README's words on the default, after Default or
	// alone (markdown).
	DefaultDoc string
	// Doc is what the setting means (markdown; the README's last column).
	Doc string
	// Usage is the flag's help text; the variable's name is appended.
	Usage string
	// Secret keeps the value out of the flag's help (a key, a token).
	Secret bool
	// into is the parse rule and where the value goes in Config.
	into target
}

// target is a parse rule bound to a field of Config.
type target interface {
	// set parses text into c's field; an error says what is wrong with
	// text, without naming the variable or the flag.
	set(c *Config, text string) error
	// show is the field's current value as a flag shows its default.
	show(c *Config) string
	// kind is the flag's type in --help: string, int, bool, duration.
	kind() string
}

// field is a target: parse, then store at the field at returns.
type field[T any] struct {
	at    func(*Config) *T
	parse func(string) (T, error)
}

func (f field[T]) set(c *Config, text string) error {
	v, err := f.parse(text)
	if err != nil {
		return err
	}
	*f.at(c) = v
	return nil
}

func (f field[T]) show(c *Config) string {
	switch v := any(*f.at(c)).(type) {
	case string:
		return v
	case time.Duration:
		return v.String()
	default:
		return fmt.Sprint(v)
	}
}

func (f field[T]) kind() string {
	var zero T
	switch any(zero).(type) {
	case string:
		return "string"
	case bool:
		return "bool"
	case time.Duration:
		return "duration"
	case int, int64:
		return "int"
	}
	return "value"
}

// to binds a parse rule to a field: the "where it goes" of a setting.
func to[T any](at func(*Config) *T, parse func(string) (T, error)) target {
	return field[T]{at: at, parse: parse}
}

// Settings is the configuration table: every setting of every taskflow
// process, in the README's order (the README's table is generated from
// it: go run ./internal/platform/config/gen).
var Settings = []Setting{
	{Env: "REDIS_URL", Flag: "redis-url", DefaultDoc: "(unset: `taskflow dev` embeds an in-memory server)",
		Doc: "Redis to use (`redis://`, `rediss://`, `unix://`; a Redis Cluster as `redis://h1:p1?addr=h2:p2`)", Usage: "Redis to use",
		into: to(func(c *Config) *string { return &c.RedisURL }, text)},
	{Env: "TASKFLOW_DEV_REDIS_ADDR", Flag: "dev-redis-addr", Default: DefaultDevRedisAddr,
		Doc: "where `taskflow dev` serves its embedded Redis when `REDIS_URL` is unset: a fixed address, so `taskflow mcp`, `rankd` and `seed-demo` reach what `make run` started at `redis://127.0.0.1:6380/0`; when it is taken, a free port (printed)", Usage: "address of the embedded Redis (REDIS_URL unset)",
		into: to(func(c *Config) *string { return &c.DevRedisAddr }, text)},
	{Env: "TASKFLOW_ADDR", Flag: "addr", Default: DefaultAddr, DefaultDoc: "(`taskflow dev`: `127.0.0.1:8080`, loopback only)",
		Doc: "HTTP listen address", Usage: "listen address",
		into: to(func(c *Config) *string { return &c.Addr }, text)},
	{Env: "TASKFLOW_NAMESPACE", Flag: "namespace", Default: DefaultNamespace,
		Doc: "prefix (hash tag) of every Redis key of the deployment", Usage: "Redis key namespace",
		into: to(func(c *Config) *string { return &c.Namespace }, text)},
	{Env: "TASKFLOW_PARTITIONS", Default: "1",
		Doc: "partitions the deployment's tasks are spread over, each under its own hash tag (`{taskflow:p0}` …) so a Redis Cluster puts them on different shards; every process of a deployment must agree, and a process refuses to start with another count than the deployment was created with (docs/guarantees.md, \"Partitions\")",
		into: to(func(c *Config) *int { return &c.Engine.Store.Partitions },
			check(integer, func(n int) bool { return n >= 1 && n <= store.MaxPartitions }, fmt.Sprintf("%%d must be within [1, %d]", store.MaxPartitions)))},
	{Env: "TASKFLOW_ADMIN_KEY", Flag: "admin-key", Secret: true, DefaultDoc: "(unset: `taskflow api` refuses to start unless `--insecure`; `taskflow dev` runs open)",
		Doc: "operator bearer token, ≥ 16 characters", Usage: "operator bearer token",
		into: to(func(c *Config) *string { return &c.AdminKey }, text)},
	{Env: "TASKFLOW_INSECURE", Flag: "insecure", Default: "false",
		Doc: "`taskflow api` without an admin key: unauthenticated requests act as the admin", Usage: "run without an admin key: unauthenticated requests act as the admin",
		into: to(func(c *Config) *bool { return &c.Insecure }, boolean)},
	{Env: "TASKFLOW_SESSION_TTL", Flag: "session-ttl", Default: "24h",
		Doc: "lifetime of a session and its token", Usage: "lifetime of a session token: seconds or a duration",
		into: to(func(c *Config) *time.Duration { return &c.SessionTTL }, not0(duration))},
	{Env: "TASKFLOW_IDEMPOTENCY_TTL", Default: "24h",
		Doc:  "how long an `Idempotency-Key` is kept: a request resent with its key within it is answered the first response (docs/api.md, \"Idempotent submits\")",
		into: to(func(c *Config) *time.Duration { return &c.IdempotencyTTL }, not0(duration))},
	{Env: "TASKFLOW_AUDIT_RETENTION", Default: "2160h",
		Doc:  "how long the audit trail keeps an entry (`GET /api/v1/audit`: every change made with the admin key or a named key)",
		into: to(func(c *Config) *time.Duration { return &c.AuditRetention }, not0(duration))},
	{Env: "TASKFLOW_SESSION_RATE_LIMIT", Default: "30",
		Doc:  "sessions one client address may open per minute (`POST /api/v1/sessions`, shared by every API process; beyond → 429); `0` = no limit",
		into: to(func(c *Config) **int { return &c.SessionRateLimit }, optional(sessionRate))},
	{Env: "TASKFLOW_CLIENT_IP_HEADER", DefaultDoc: "(none)",
		Doc:  "behind a reverse proxy: the header carrying the client's address (e.g. `X-Forwarded-For`; its last value is used); unset = the connection's address",
		into: to(func(c *Config) *string { return &c.ClientIPHeader }, trimmed)},
	{Env: "TASKFLOW_MAX_BODY_BYTES", Flag: "max-body-bytes", Default: "1048576",
		Doc: "largest request body; larger → 413", Usage: "largest request body accepted",
		into: to(func(c *Config) *int64 { return &c.MaxBodyBytes }, not0(integer64))},
	{Env: "TASKFLOW_MAX_CONTENT_BYTES", Default: "524288",
		Doc:  "largest task `content`; larger → 413",
		into: to(func(c *Config) *int { return &c.MaxContentBytes }, not0(integer))},
	{Env: "TASKFLOW_SHUTDOWN_GRACE", Default: "10s",
		Doc:  "how long a stopping process lets requests and tasks finish",
		into: to(func(c *Config) *time.Duration { return &c.ShutdownGrace }, not0(duration))},
	{Env: "TASKFLOW_REQUEST_TIMEOUT", Default: "1s",
		Doc:  "longest an API request may take (live feeds and plan runs excepted): when Redis stalls or is down, clients get a 503 within it, not a hung request",
		into: to(func(c *Config) *time.Duration { return &c.RequestTimeout }, not0(duration))},
	{Env: "GOGC", DefaultDoc: "`400` in `taskflow api` (Go's `100` elsewhere)",
		Doc:  "the Go runtime's GC target; set it to override (why 400: docs/architecture.md, HTTP API)",
		into: to(func(c *Config) *string { return &c.GOGC }, text)},
	{Env: "TASKFLOW_CONCURRENCY", Flag: "concurrency", Default: "10",
		Doc: "handler goroutines of `taskflow worker` / `taskflow dev`", Usage: "handler goroutines",
		into: to(func(c *Config) *int { return &c.Concurrency }, not0(integer))},
	{Env: "LOG_LEVEL", Default: DefaultLogLevel,
		Doc:  "least severe level logged by every process: `debug` (the lifecycle of each task), `info`, `warn`, `error`",
		into: to(func(c *Config) *string { return &c.LogLevel }, oneOf("%q is not debug, info, warn or error", "debug", "info", "warn", "warning", "error"))},
	{Env: "LOG_FORMAT", Default: DefaultLogFormat,
		Doc:  "`text` (slog's key=value lines) or `json` (one object per line, for a log collector)",
		into: to(func(c *Config) *string { return &c.LogFormat }, oneOf("%q is not text or json", "text", "json"))},
	{Env: "MAX_RETRIES", Default: "3",
		Doc:  "retries of a task that sets no `max_retries`; `0` = none",
		into: to(func(c *Config) **int { return &c.Engine.Store.DefaultMaxRetries }, optional(check(integer, func(n int) bool { return n >= 0 }, "%d must be 0 or more")))},
	{Env: "MAX_TASK_AGE", Default: "3600",
		Doc:  "seconds (or `1h`); older PENDING tasks at pickup, and FAILED ones when their retry is due, go to the DLQ; `0` or negative disables",
		into: to(func(c *Config) **time.Duration { return &c.Engine.Store.MaxTaskAge }, optional(noAgeLimitBelow0))},
	{Env: "DEFAULT_RETRY_RATIO", Default: "0.3",
		Doc:  "share of fetches served retry-first below `RETRY_QUEUE_WARNING` (this and the two ratios below: `0` = the retry queue only when the primary queues are empty)",
		into: to(func(c *Config) **float64 { return &c.Engine.Store.RetryRatio }, optional(ratio))},
	{Env: "RETRY_QUEUE_WARNING", Default: "1000",
		Doc:  "retry-queue depth from which the share is `RETRY_RATIO_WARNING`",
		into: to(func(c *Config) *int { return &c.Engine.Store.RetryQueueWarning }, above0(integer))},
	{Env: "RETRY_RATIO_WARNING", Default: "0.2",
		Doc:  "share of fetches served retry-first from `RETRY_QUEUE_WARNING` on",
		into: to(func(c *Config) **float64 { return &c.Engine.Store.RetryRatioWarning }, optional(ratio))},
	{Env: "RETRY_QUEUE_CRITICAL", Default: "5000",
		Doc:  "retry-queue depth above which the share is `RETRY_RATIO_CRITICAL`",
		into: to(func(c *Config) *int { return &c.Engine.Store.RetryQueueCritical }, above0(integer))},
	{Env: "RETRY_RATIO_CRITICAL", Default: "0.1",
		Doc:  "share of fetches served retry-first above `RETRY_QUEUE_CRITICAL`",
		into: to(func(c *Config) **float64 { return &c.Engine.Store.RetryRatioCritical }, optional(ratio))},
	{Env: "CIRCUIT_FAILURE_THRESHOLD", Default: "0.5",
		Doc:  "failure rate that opens a dependency's circuit breaker",
		into: to(func(c *Config) *float64 { return &c.Engine.Worker.Breaker.FailureThreshold }, above0(number))},
	{Env: "CIRCUIT_VOLUME_THRESHOLD", Default: "10",
		Doc:  "calls before the failure rate counts",
		into: to(func(c *Config) *int { return &c.Engine.Worker.Breaker.VolumeThreshold }, above0(integer))},
	{Env: "CIRCUIT_TIMEOUT", Default: "60",
		Doc:  "seconds a breaker stays OPEN before a HALF_OPEN probe",
		into: to(func(c *Config) *time.Duration { return &c.Engine.Worker.Breaker.Timeout }, above0(duration))},
	{Env: "TASKFLOW_LEASE", Default: "30s",
		Doc:  "how long a worker holds a task without a heartbeat; then the reaper requeues it",
		into: to(func(c *Config) *time.Duration { return &c.Engine.Worker.Lease }, above0(duration))},
	{Env: "TASKFLOW_TASK_TIMEOUT", Default: "5m",
		Doc:  "attempt timeout of tasks that set no `timeout`",
		into: to(func(c *Config) *time.Duration { return &c.Engine.Worker.DefaultTimeout }, above0(duration))},
	{Env: "TASKFLOW_QUEUES", DefaultDoc: "(unset: the `default` queue)",
		Doc:  "the named queues a worker serves, `name[:weight[:concurrency]]` comma-separated: tried in a weighted random order per fetch, each at most `concurrency` running in this worker ([docs/api.md](docs/api.md), \"Queues, pauses and limits\")",
		into: to(func(c *Config) *[]worker.QueueConfig { return &c.Engine.Worker.Queues }, queueList)},
	{Env: "TASKFLOW_QUEUES_STRICT", Default: "false",
		Doc:  "take from `TASKFLOW_QUEUES` in their order: a queue only while those before it give nothing",
		into: to(func(c *Config) *bool { return &c.Engine.Worker.StrictOrder }, boolean)},
	{Env: "TASKFLOW_TYPE_QUEUES", DefaultDoc: "(unset: every type's tasks go to `default`)",
		Doc:  "the default queue of task types, `type=queue` comma-separated: a submit of such a type that names no queue goes there",
		into: to(func(c *Config) *map[string]string { return &c.TypeQueues }, typeQueues)},
	{Env: "TASKFLOW_FETCH_BATCH", Default: "64",
		Doc:  "most tasks a worker takes per fetch",
		into: to(func(c *Config) *int { return &c.Engine.Worker.FetchBatch }, above0(integer))},
	{Env: "TASKFLOW_RETRY_SCALE", Default: "1",
		Doc:  "multiplies every retry delay (`0.001`: schedules in milliseconds, for demos and tests)",
		into: to(func(c *Config) *float64 { return &c.Engine.Worker.Retry.Scale }, above0(number))},
	{Env: "TASKFLOW_RETRY_SCHEDULES", DefaultDoc: "the built-in schedules",
		Doc:  "per error type, the retry delays: `RateLimitError=60,120,300,600; Default=5,15,60,300` (seconds or `90s`; types not given keep the built-in ones, listed in [docs/operations.md](docs/operations.md); the last delay repeats)",
		into: to(func(c *Config) *map[string][]time.Duration { return &c.Engine.Worker.Retry.Schedules }, retry.ParseSchedules)},
	{Env: "TASKFLOW_SCHEDULER_INTERVAL", Default: "500ms",
		Doc:  "scheduler tick: due retries, expired leases, max-age sweep (≤ 1 s)",
		into: to(func(c *Config) *time.Duration { return &c.Engine.Scheduler.Interval }, above0(duration))},
	{Env: "TASKFLOW_RETENTION", Default: "24h",
		Doc:  "COMPLETED and CANCELLED tasks are deleted from Redis this long after they finished (24 h; the archive keeps them); `0` keeps them forever",
		into: to(func(c *Config) **time.Duration { return &c.Engine.Scheduler.Retention }, optional(retention))},
	{Env: "TASKFLOW_DLQ_RETENTION", Default: "168h",
		Doc:  "DLQ tasks (list entry, snapshot) are deleted this long after they were dead-lettered; `0` keeps them forever",
		into: to(func(c *Config) **time.Duration { return &c.Engine.Scheduler.DLQRetention }, optional(retention))},
	{Env: "TASKFLOW_URL", Flag: "url", Default: DefaultAPIURL,
		Doc: "API the client commands talk to", Usage: "taskflow API base URL",
		into: to(func(c *Config) *string { return &c.APIURL }, text)},
	{Env: "TASKFLOW_TOKEN", Flag: "token", Secret: true, DefaultDoc: "`TASKFLOW_ADMIN_KEY`",
		Doc: "bearer token of the client commands: a session token or the admin key (`taskflow mcp`: the session it acts as; unset: a new one)", Usage: "bearer token: a session token or the admin key",
		into: to(func(c *Config) *string { return &c.Token }, text)},
	{Env: "OPENROUTER_API_KEY", Secret: true, DefaultDoc: "(unset: the built-in extractive summarizer)",
		Doc:  "key for the summarize task's LLM; never logged ([docs/summarize.md](docs/summarize.md))",
		into: to(func(c *Config) *string { return &c.Summarize.LLM.APIKey }, trimmed)},
	{Env: "OPENROUTER_BASE_URL", Default: "https://openrouter.ai/api/v1",
		Doc:  "OpenAI-compatible API root (`taskflow fake-llm` prints a local one)",
		into: to(func(c *Config) *string { return &c.Summarize.LLM.BaseURL }, trimmed)},
	{Env: "OPENROUTER_MODEL", Default: "meta-llama/llama-3.2-90b-text-preview",
		Doc:  "model for summaries",
		into: to(func(c *Config) *string { return &c.Summarize.LLM.Model }, trimmed)},
	{Env: "OPENROUTER_TIMEOUT", Default: "30",
		Doc:  "seconds per LLM call",
		into: to(func(c *Config) *time.Duration { return &c.Summarize.LLM.Timeout }, atLeast(time.Nanosecond, "%q is not seconds (e.g. 30) or a duration (e.g. 45s)"))},
	{Env: "OPENROUTER_RATE_LIMIT", Default: "60",
		Doc:  "LLM calls per interval across all workers (Redis-shared); `0` = no limit",
		into: to(func(c *Config) **int { return &c.Summarize.RateLimit }, optional(calls))},
	{Env: "OPENROUTER_RATE_INTERVAL", Default: "60",
		Doc:  "that interval, seconds or a duration (`1m`)",
		into: to(func(c *Config) *time.Duration { return &c.Summarize.RateInterval }, atLeast(time.Millisecond, "%q is not seconds (e.g. 60) or a duration (e.g. 1m)"))},
	{Env: "TASKFLOW_PLAN_DIR", DefaultDoc: "(unset: the plans built into the binary)",
		Doc:  "a folder of named plans (`<name>.plan.json`) the API and workers use instead of the built-in ones (the repository's `plans/`)",
		into: to(func(c *Config) *string { return &c.Plans.Dir }, text)},
	{Env: "TASKFLOW_PLAN_REDIS_URL", DefaultDoc: "`REDIS_URL`, else the registry's `ep_0001` address",
		Doc:  "Redis holding the plans' data (rankd: `--redis-url`, default `REDIS_URL`; `taskflow seed-demo` writes here unless given `--redis-url`)",
		into: to(func(c *Config) *string { return &c.Plans.RedisURL }, text)},
	{Env: "RANKD_KEY_PREFIX", Flag: "key-prefix", DefaultDoc: "(empty)",
		Doc: "prefix of every key plans read and `seed-demo` writes (rankd and seed-demo)", Usage: "prefix of every Redis key the plans read",
		into: to(func(c *Config) *string { return &c.Plans.KeyPrefix }, text)},
	{Env: "TASKFLOW_PLAN_DEADLINE_MS", Default: "1000",
		Doc:  "default deadline of a plan run over HTTP or as a task (requests may set `deadline_ms` up to 30 s)",
		into: to(func(c *Config) *time.Duration { return &c.Plans.Deadline }, milliseconds)},
	{Env: "TASKFLOW_EXTERNAL_TYPES", Default: "data.analyze,data.export,document.process,report.generate,text.wordcount",
		Doc:  "task types performed by external services over Redis Streams; workers dispatch them ([docs/protocol.md](docs/protocol.md))",
		into: to(func(c *Config) *[]string { return &c.External.Types }, list)},
	{Env: "DATABASE_URL", DefaultDoc: "(unset: no archive)",
		Doc:  "PostgreSQL archive of finished tasks; `taskflow orchestrator` creates its schema ([docs/notifications.md](docs/notifications.md))",
		into: to(func(c *Config) *string { return &c.DatabaseURL }, text)},
	{Env: "TASKFLOW_ARCHIVE_SCHEMA", Default: "taskflow",
		Doc:  "schema of the archive's table `archived_tasks`",
		into: to(func(c *Config) *string { return &c.ArchiveSchema }, text)},
	{Env: "TASKFLOW_OUTPUT_DIR", Flag: "output-dir", Default: DefaultOutputDir,
		Doc: "where `taskflow service NAME` (and `taskflow dev --services`) writes its output files", Usage: "where the example services write their output files",
		into: to(func(c *Config) *string { return &c.OutputDir }, text)},
	{Env: "TASKFLOW_ARTIFACT_DIR", DefaultDoc: "(unset: result files over 8 MiB stay where the service wrote them)",
		Doc:  "a directory the services and the API processes share: result files over 8 MiB go there (smaller ones into Redis), and the API serves them at `/api/v1/results/{id}/files/{name}`",
		into: to(func(c *Config) *string { return &c.ArtifactDir }, text)},
	{Env: "TASKFLOW_EXTERNAL_BACKOFF_INITIAL", Default: "1s",
		Doc:  "first retry delay of an external task's transient failure (then ·2ⁿ, capped at `TASKFLOW_EXTERNAL_BACKOFF_MAX`), read by `taskflow orchestrator` and `taskflow dev`",
		into: to(func(c *Config) *time.Duration { return &c.External.Backoff.Initial }, atLeast(time.Nanosecond, backoffDelay))},
	{Env: "TASKFLOW_EXTERNAL_BACKOFF_MAX", Default: "60s",
		Doc:  "longest retry delay of an external task's transient failure",
		into: to(func(c *Config) *time.Duration { return &c.External.Backoff.Max }, atLeast(time.Nanosecond, backoffDelay))},
	{Env: "TASKFLOW_EXTERNAL_BACKOFF_JITTER", Default: "0.2",
		Doc:  "± share of each such delay drawn at random; `0` = none",
		into: to(func(c *Config) **float64 { return &c.External.Backoff.Jitter }, optional(jitter))},
	{Env: "TASKFLOW_ORCHESTRATOR_METRICS_ADDR", Flag: "metrics-addr", DefaultDoc: "(unset: none)",
		Doc: "where `taskflow orchestrator` serves Prometheus metrics", Usage: "serve Prometheus metrics here, e.g. 127.0.0.1:9102",
		into: to(func(c *Config) *string { return &c.MetricsAddr }, text)},
	{Env: "TASKFLOW_EXTERNAL_INFLIGHT", DefaultDoc: "(unset: four times the live services' concurrency)",
		Doc:  "most attempts of one external task type dispatched and unfinished at once, across all workers; the rest wait in the core's priority queues. Unset, it sizes itself: the total concurrency the type's live service instances publish when they register (64 while none does; [docs/protocol.md](docs/protocol.md)); `-1` = no bound. Read by the workers (`taskflow worker`, `taskflow dev`)",
		into: to(func(c *Config) *int { return &c.External.InFlight }, inFlight)},
	{Env: "OTEL_EXPORTER_OTLP_ENDPOINT", DefaultDoc: "(unset: no traces)",
		Doc:  "OTLP/HTTP collector base URL (`http://127.0.0.1:4318`): every process exports its OpenTelemetry traces to its `/v1/traces`; the SDK reads the other `OTEL_*` variables itself ([docs/operations.md](docs/operations.md#traces))",
		into: to(func(c *Config) *string { return &c.Tracing.Endpoint }, trimmed)},
	{Env: "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", DefaultDoc: "(unset)",
		Doc:  "full OTLP/HTTP traces URL, instead of `OTEL_EXPORTER_OTLP_ENDPOINT`",
		into: to(func(c *Config) *string { return &c.Tracing.TracesEndpoint }, trimmed)},
	{Env: "OTEL_SDK_DISABLED", Default: "false",
		Doc:  "`true`: no traces whatever the endpoints",
		into: to(func(c *Config) *bool { return &c.Tracing.Disabled }, boolean)},
	{Env: "OTEL_SERVICE_NAME", DefaultDoc: "`taskflow-<role>` (`taskflow-worker`, `taskflow-api`, …)",
		Doc:  "the traces' `service.name`",
		into: to(func(c *Config) *string { return &c.Tracing.ServiceName }, trimmed)},
}

// Lookup returns the table's entry of the variable env; it panics when
// there is none (a name in the code that the table does not know).
func Lookup(env string) Setting {
	for _, s := range Settings {
		if s.Env == env {
			return s
		}
	}
	panic("config: no setting " + env)
}

// VarError is what is wrong with one variable.
type VarError struct {
	Var string
	Err error
}

func (e *VarError) Error() string   { return fmt.Sprintf("%v: %s: %v", ErrInvalid, e.Var, e.Err) }
func (e *VarError) Unwrap() []error { return []error{ErrInvalid, e.Err} }

// Load reads every setting of the table from the environment through
// getenv, once, and returns the configuration with the defaults filled
// in. A variable that is unset or blank keeps its default; one that does
// not follow its rule is an error naming it (*VarError). The error names
// every wrong variable; with an error the configuration is still
// returned, as far as it could be read.
func Load(getenv func(string) string) (Config, error) {
	c := Config{given: map[string]bool{}}
	var errs []error
	for _, s := range Settings {
		v := getenv(s.Env)
		if strings.TrimSpace(v) == "" {
			continue
		}
		c.given[s.Env] = true
		if err := s.into.set(&c, v); err != nil {
			errs = append(errs, &VarError{Var: s.Env, Err: err})
		}
	}
	c = c.WithDefaults()
	c.Engine.Store.Namespace = c.Namespace
	b := c.External.Backoff.WithDefaults()
	if err := b.Validate(); err != nil {
		errs = append(errs, &VarError{Var: "TASKFLOW_EXTERNAL_BACKOFF_INITIAL / TASKFLOW_EXTERNAL_BACKOFF_MAX", Err: err})
	}
	c.External.Backoff = b
	if len(errs) > 0 {
		return c, errors.Join(errs...)
	}
	// the rules between settings: the engine's packages say them
	e := c.Engine
	for _, err := range []error{e.Store.WithDefaults().Validate(), e.Worker.WithDefaults().Validate(), e.Scheduler.WithDefaults().Validate()} {
		if err != nil {
			return c, fmt.Errorf("%w: %w", ErrInvalid, err)
		}
	}
	return c, nil
}

// Only is the part of an error of Load that concerns the variables
// named: nil when none of them is wrong.
func Only(err error, vars ...string) error {
	var errs []error
	var walk func(error)
	walk = func(e error) {
		if ve, ok := e.(*VarError); ok {
			if slices.Contains(vars, ve.Var) {
				errs = append(errs, ve)
			}
			return
		}
		if j, ok := e.(interface{ Unwrap() []error }); ok {
			for _, x := range j.Unwrap() {
				walk(x)
			}
		}
	}
	if err != nil {
		walk(err)
	}
	return errors.Join(errs...)
}

// The parse rules. Each reads the text of a variable or a flag; its
// error says what is wrong with the text, and the caller names the
// variable (Load) or the flag (pflag).

func text(s string) (string, error)    { return s, nil }
func trimmed(s string) (string, error) { return strings.TrimSpace(s), nil }

func integer(s string) (int, error) {
	v := strings.TrimSpace(s)
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, fmt.Errorf("%q is not an integer", v)
	}
	return n, nil
}

func integer64(s string) (int64, error) {
	v := strings.TrimSpace(s)
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not an integer", v)
	}
	return n, nil
}

func number(s string) (float64, error) {
	v := strings.TrimSpace(s)
	f, err := strconv.ParseFloat(v, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a number", v)
	}
	return f, nil
}

// duration is the one rule of durations: seconds ("30", "0.5") or a Go
// duration ("90s").
func duration(s string) (time.Duration, error) { return seconds.Parse(strings.TrimSpace(s)) }

func boolean(s string) (bool, error) {
	v := strings.TrimSpace(s)
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("%q is not a boolean", v)
	}
	return b, nil
}

// list is comma-separated names, blanks dropped.
func list(s string) ([]string, error) {
	var out []string
	for _, t := range strings.Split(s, ",") {
		if t = strings.TrimSpace(t); t != "" {
			out = append(out, t)
		}
	}
	return out, nil
}

// oneOf is a word among words, any case; msg has one %q for the text.
func oneOf(msg string, words ...string) func(string) (string, error) {
	return func(s string) (string, error) {
		v := strings.ToLower(strings.TrimSpace(s))
		for _, w := range words {
			if v == w {
				return v, nil
			}
		}
		return "", fmt.Errorf(msg, v)
	}
}

type numeric interface{ ~int | ~int64 | ~float64 }

// not0 refuses 0, which is the field's "unset": a variable set to 0
// would otherwise quietly stand for the default. Negative values are
// Validate's to refuse, with the range.
func not0[T numeric](p func(string) (T, error)) func(string) (T, error) {
	return func(s string) (T, error) {
		v, err := p(s)
		if err == nil && v == 0 {
			err = fmt.Errorf("%q must be more than 0", strings.TrimSpace(s))
		}
		return v, err
	}
}

// above0 refuses 0 and negative values.
func above0[T numeric](p func(string) (T, error)) func(string) (T, error) {
	return func(s string) (T, error) {
		v, err := p(s)
		if err == nil && v <= 0 {
			err = fmt.Errorf("%q must be more than 0", strings.TrimSpace(s))
		}
		return v, err
	}
}

// check refuses a parsed value ok rejects; msg has one verb for the value.
func check[T any](p func(string) (T, error), ok func(T) bool, msg string) func(string) (T, error) {
	return func(s string) (T, error) {
		v, err := p(s)
		if err == nil && !ok(v) {
			err = fmt.Errorf(msg, v)
		}
		return v, err
	}
}

// atLeast is a duration of at least min; any other text is msg (one %q).
func atLeast(min time.Duration, msg string) func(string) (time.Duration, error) {
	return func(s string) (time.Duration, error) {
		d, err := duration(s)
		if err != nil || d < min {
			return 0, fmt.Errorf(msg, strings.TrimSpace(s))
		}
		return d, nil
	}
}

// optional is a setting whose field is a pointer: nil when unset, so 0
// can be a value of its own (no retries, no limit, keep forever).
func optional[T any](p func(string) (T, error)) func(string) (*T, error) {
	return func(s string) (*T, error) {
		v, err := p(s)
		if err != nil {
			return nil, err
		}
		return &v, nil
	}
}

var ratio = check(number, func(f float64) bool { return f >= 0 && f <= 1 }, "%v must be within [0, 1]")

// noAgeLimitBelow0: a negative age is as 0, no age limit.
func noAgeLimitBelow0(s string) (time.Duration, error) {
	d, err := duration(s)
	return max(d, 0), err
}

var retention = check(duration, func(d time.Duration) bool { return d >= 0 }, "%s must not be negative (0 keeps finished tasks forever)")

func sessionRate(s string) (int, error) {
	v := strings.TrimSpace(s)
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%q is not a count of sessions per minute (0 = no limit)", v)
	}
	return n, nil
}

func calls(s string) (int, error) {
	v := strings.TrimSpace(s)
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%q is not a whole number of calls (0 turns the limit off)", v)
	}
	return n, nil
}

func milliseconds(s string) (time.Duration, error) {
	v := strings.TrimSpace(s)
	ms, err := strconv.Atoi(v)
	if err != nil || ms <= 0 {
		return 0, fmt.Errorf("%q is not a positive number of milliseconds", v)
	}
	return time.Duration(ms) * time.Millisecond, nil
}

const backoffDelay = "%q is not a positive number of seconds or duration like 1, 0.5 or 500ms"

func jitter(s string) (float64, error) {
	v := strings.TrimSpace(s)
	j, err := strconv.ParseFloat(v, 64)
	if err != nil || j < 0 || j >= 1 {
		return 0, fmt.Errorf("%q is not a fraction in [0, 1) like 0.2", v)
	}
	return j, nil
}

func inFlight(s string) (int, error) {
	v := strings.TrimSpace(s)
	n, err := strconv.Atoi(v)
	if err != nil || n == 0 || n < -1 {
		return 0, fmt.Errorf("%q is not a positive number of tasks (or -1 for no bound)", v)
	}
	return n, nil
}

// queueList is TASKFLOW_QUEUES: name[:weight[:concurrency]], comma-separated.
func queueList(s string) ([]worker.QueueConfig, error) {
	var out []worker.QueueConfig
	for _, t := range strings.Split(s, ",") {
		if t = strings.TrimSpace(t); t == "" {
			continue
		}
		parts := strings.Split(t, ":")
		if len(parts) > 3 {
			return nil, fmt.Errorf("%q: give name[:weight[:concurrency]]", t)
		}
		q := worker.QueueConfig{Name: parts[0]}
		if err := store.ValidQueueName(q.Name); err != nil {
			return nil, fmt.Errorf("queue %q must match ^[a-z0-9][a-z0-9._-]{0,63}$", q.Name)
		}
		if len(parts) > 1 {
			w, err := strconv.Atoi(parts[1])
			if err != nil || w < 1 || w > 1000 {
				return nil, fmt.Errorf("%q: the weight must be a whole number from 1 to 1000", t)
			}
			q.Weight = w
		}
		if len(parts) > 2 {
			c, err := strconv.Atoi(parts[2])
			if err != nil || c < 0 || c > 10000 {
				return nil, fmt.Errorf("%q: the concurrency must be a whole number from 0 (no bound) to 10000", t)
			}
			q.Concurrency = c
		}
		if slices.ContainsFunc(out, func(o worker.QueueConfig) bool { return o.Name == q.Name }) {
			return nil, fmt.Errorf("queue %q is listed twice", q.Name)
		}
		out = append(out, q)
	}
	return out, nil
}

// typeQueues is TASKFLOW_TYPE_QUEUES: type=queue, comma-separated.
func typeQueues(s string) (map[string]string, error) {
	out := map[string]string{}
	for _, t := range strings.Split(s, ",") {
		if t = strings.TrimSpace(t); t == "" {
			continue
		}
		typ, q, ok := strings.Cut(t, "=")
		typ, q = strings.TrimSpace(typ), strings.TrimSpace(q)
		if !ok || typ == "" {
			return nil, fmt.Errorf("%q: give task_type=queue", t)
		}
		if err := store.ValidQueueName(q); err != nil {
			return nil, fmt.Errorf("queue %q must match ^[a-z0-9][a-z0-9._-]{0,63}$", q)
		}
		out[typ] = q
	}
	return out, nil
}
