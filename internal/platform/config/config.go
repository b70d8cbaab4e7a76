// Package config is the one configuration of taskflow's binaries: the
// typed Config every part of a process is built from, and the table
// (Settings) that fills it in — for each setting its environment
// variable, its flag, its default, its documentation, its parse rule and
// its place in Config. Load reads the table once per process; BindFlags
// binds the flags of the settings a command uses, so a flag overrides its
// variable by the same rule; the README's configuration table is
// generated from the same table (go run ./internal/platform/config/gen).
//
// Nothing else in the product reads the environment (internal/testrig/layering
// checks it).
package config

//go:generate go run ./gen

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/taskflow/taskflow/internal/engine/keyspace"
	"github.com/taskflow/taskflow/internal/engine/maintenance"
	"github.com/taskflow/taskflow/internal/engine/retry"
	"github.com/taskflow/taskflow/internal/engine/store"
	"github.com/taskflow/taskflow/internal/engine/worker"
	"github.com/taskflow/taskflow/internal/platform/tracing"
	"github.com/taskflow/taskflow/internal/tasktypes/summarize"
)

// Config is the whole configuration of a process: the server's and the
// client commands', the engine's, the external path's, the plan engine's
// and the summarize task's. Load fills it in from the environment; the
// zero value is not ready: call WithDefaults. Each field names its
// variable; the table (Settings) says how it is read.
type Config struct {
	// Addr is the HTTP listen address (TASKFLOW_ADDR, --addr).
	// Default ":8080"; `taskflow dev` forces a loopback host.
	Addr string
	// RedisURL is the Redis to use (REDIS_URL, --redis-url). Default empty:
	// `taskflow dev` then embeds an in-memory server; `taskflow api` refuses.
	RedisURL string
	// DevRedisAddr is where `taskflow dev` serves its embedded Redis when
	// RedisURL is empty (TASKFLOW_DEV_REDIS_ADDR, --dev-redis-addr).
	// Default "127.0.0.1:6380", a fixed address the documentation's
	// commands (taskflow mcp, rankd) name; "127.0.0.1:0" picks a free port.
	DevRedisAddr string
	// Namespace prefixes every Redis key of this deployment
	// (TASKFLOW_NAMESPACE, --namespace). Default "taskflow".
	Namespace string
	// AdminKey is the bearer token of operators (TASKFLOW_ADMIN_KEY,
	// --admin-key). Default empty: `taskflow api` refuses to start without
	// it unless Insecure is set.
	AdminKey string
	// Insecure lets the API run without an admin key: every request without
	// credentials acts as the admin (--insecure). Default false.
	Insecure bool
	// DatabaseURL is the PostgreSQL archive (DATABASE_URL). Default empty
	// (no archive). The API passes it on; it does not need it itself.
	DatabaseURL string
	// ArtifactDir is the directory shared by the services and the API
	// processes for result files over 8 MiB (TASKFLOW_ARTIFACT_DIR).
	// Default empty: such files stay where their service wrote them.
	ArtifactDir string
	// Plans are the plan engine's settings (named plan runs and plan
	// tasks).
	Plans PlanSettings
	// MaxBodyBytes caps a request body (TASKFLOW_MAX_BODY_BYTES,
	// --max-body-bytes); larger bodies get 413. Default 1 MiB.
	MaxBodyBytes int64
	// MaxContentBytes caps a task's content field (TASKFLOW_MAX_CONTENT_BYTES);
	// larger content gets 413. Default 512 KiB, or MaxBodyBytes if smaller.
	MaxContentBytes int
	// SessionTTL is how long a session and its token live after creation
	// (TASKFLOW_SESSION_TTL: seconds or a duration, "86400" or "24h"), and
	// with them the session's task index. Default 24h. Read here only.
	SessionTTL time.Duration
	// IdempotencyTTL is how long an Idempotency-Key's record is kept
	// (TASKFLOW_IDEMPOTENCY_TTL): a request resent with its key within it
	// is answered the first response. Default 24h.
	IdempotencyTTL time.Duration
	// AuditRetention is how long the audit trail keeps an entry
	// (TASKFLOW_AUDIT_RETENTION). Default 90 days.
	AuditRetention time.Duration
	// ShutdownGrace bounds a graceful shutdown (TASKFLOW_SHUTDOWN_GRACE).
	// Default 10s.
	ShutdownGrace time.Duration
	// RequestTimeout bounds each API request, so a client gets a 503
	// within it when Redis does not answer (TASKFLOW_REQUEST_TIMEOUT; live
	// feeds and plan runs excepted). Default 1s.
	RequestTimeout time.Duration
	// Concurrency is the number of task goroutines of the workers that
	// `taskflow dev` runs (TASKFLOW_CONCURRENCY, --concurrency). Default 10.
	Concurrency int
	// APIURL is where client commands send requests (TASKFLOW_URL, --url).
	// Default "http://127.0.0.1:8080".
	APIURL string
	// Token is the bearer token given to the client commands and `taskflow
	// mcp` (TASKFLOW_TOKEN, --token). Default empty: the client commands
	// then send the admin key (ClientToken), `taskflow mcp` opens a
	// session.
	Token string
	// SessionRateLimit is how many sessions one client address may open
	// per minute (TASKFLOW_SESSION_RATE_LIMIT), shared by every API
	// process. nil: 30; 0 turns the limit off.
	SessionRateLimit *int
	// ClientIPHeader names the header a reverse proxy sets to the client's
	// address (TASKFLOW_CLIENT_IP_HEADER, e.g. X-Forwarded-For: its last
	// value is used). Default empty: the connection's address.
	ClientIPHeader string
	// LogLevel is the least severe level logged (LOG_LEVEL: debug, info,
	// warn, error). Default "info".
	LogLevel string
	// LogFormat is how log lines are written (LOG_FORMAT: text or json).
	// Default "text".
	LogFormat string
	// GOGC is the Go runtime's GC target as the environment sets it
	// (GOGC). Default empty: `taskflow api` then runs with 400.
	GOGC string
	// ArchiveSchema is the PostgreSQL schema of the archive's table
	// (TASKFLOW_ARCHIVE_SCHEMA). Default empty: the archive's ("taskflow").
	ArchiveSchema string
	// OutputDir is where the example services write their files
	// (TASKFLOW_OUTPUT_DIR, --output-dir). Default "taskflow-output".
	OutputDir string
	// MetricsAddr is where `taskflow orchestrator` serves Prometheus
	// metrics (TASKFLOW_ORCHESTRATOR_METRICS_ADDR, --metrics-addr).
	// Default empty: none.
	MetricsAddr string
	// Tracing is the OpenTelemetry exporter's settings
	// (OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT,
	// OTEL_SDK_DISABLED, OTEL_SERVICE_NAME); off unless an endpoint is set.
	Tracing tracing.Config
	// Engine are the store's, the workers' and the scheduler's settings.
	Engine Engine
	// External are the settings of the external path: which task types
	// the services perform, the in-flight bound, the retry delay.
	External External
	// Summarize are the summarize task's LLM and its rate limit
	// (OPENROUTER_*).
	Summarize summarize.Settings

	// TypeQueues maps a task type to its default named queue
	// (TASKFLOW_TYPE_QUEUES, type=queue comma-separated). nil: every
	// type's tasks go to the default queue unless their submit names one.
	TypeQueues map[string]string

	// given are the variables the environment set (not blank).
	given map[string]bool
}

// Engine is the engine's configuration: the store, the workers and the
// scheduler. Unset variables leave a field at its zero value, so the
// packages' own defaults apply.
type Engine struct {
	Store     store.Config
	Worker    worker.Config
	Scheduler maintenance.Config
}

// External is the configuration of the external path (docs/protocol.md).
type External struct {
	// Types are the task types performed by external services
	// (TASKFLOW_EXTERNAL_TYPES, comma-separated). nil: the example
	// services' types and text.wordcount (the binary knows them).
	Types []string
	// InFlight bounds the attempts of one external type dispatched and
	// unfinished at once (TASKFLOW_EXTERNAL_INFLIGHT). 0: the dispatcher
	// sizes it to the live services' concurrency; -1: no bound.
	InFlight int
	// Backoff is the retry delay of an external task's transient failure
	// (TASKFLOW_EXTERNAL_BACKOFF_INITIAL, _MAX, _JITTER), defaults filled
	// in.
	Backoff retry.Backoff
}

// Defaults, named so that docs and tests can refer to them.
const (
	DefaultAddr             = ":8080"
	DefaultDevRedisAddr     = "127.0.0.1:6380"
	DefaultNamespace        = keyspace.DefaultName
	DefaultMaxBodyBytes     = 1 << 20
	DefaultMaxContentBytes  = 512 << 10
	DefaultSessionTTL       = 24 * time.Hour
	DefaultIdempotencyTTL   = 24 * time.Hour
	DefaultAuditRetention   = 90 * 24 * time.Hour
	DefaultShutdownGrace    = 10 * time.Second
	DefaultRequestTimeout   = time.Second
	DefaultConcurrency      = 10
	DefaultAPIURL           = "http://127.0.0.1:8080"
	DefaultSessionRateLimit = 30
	DefaultLogLevel         = "info"
	DefaultLogFormat        = "text"
	DefaultOutputDir        = "taskflow-output"
)

// ErrInvalid is wrapped by every error Validate and Load return.
var ErrInvalid = errors.New("invalid configuration")

// WithDefaults returns c with every unset field set to its default.
func (c Config) WithDefaults() Config {
	if c.Addr == "" {
		c.Addr = DefaultAddr
	}
	if c.DevRedisAddr == "" {
		c.DevRedisAddr = DefaultDevRedisAddr
	}
	if c.Namespace == "" {
		c.Namespace = DefaultNamespace
	}
	if c.MaxBodyBytes == 0 {
		c.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if c.MaxContentBytes == 0 {
		c.MaxContentBytes = DefaultMaxContentBytes
		if int64(c.MaxContentBytes) > c.MaxBodyBytes {
			c.MaxContentBytes = int(c.MaxBodyBytes)
		}
	}
	if c.AuditRetention == 0 {
		c.AuditRetention = DefaultAuditRetention
	}
	if c.SessionTTL == 0 {
		c.SessionTTL = DefaultSessionTTL
	}
	if c.IdempotencyTTL == 0 {
		c.IdempotencyTTL = DefaultIdempotencyTTL
	}
	if c.ShutdownGrace == 0 {
		c.ShutdownGrace = DefaultShutdownGrace
	}
	if c.RequestTimeout == 0 {
		c.RequestTimeout = DefaultRequestTimeout
	}
	if c.Concurrency == 0 {
		c.Concurrency = DefaultConcurrency
	}
	if c.APIURL == "" {
		c.APIURL = DefaultAPIURL
	}
	if c.SessionRateLimit == nil {
		c.SessionRateLimit = new(DefaultSessionRateLimit)
	}
	if c.LogLevel == "" {
		c.LogLevel = DefaultLogLevel
	}
	if c.LogFormat == "" {
		c.LogFormat = DefaultLogFormat
	}
	if c.OutputDir == "" {
		c.OutputDir = DefaultOutputDir
	}
	return c
}

// Given says whether the environment Load read set the variable (to
// something other than blanks).
func (c Config) Given(env string) bool { return c.given[env] }

// ClientToken is the bearer token of the client commands: TASKFLOW_TOKEN
// (or --token), else the admin key.
func (c Config) ClientToken() string {
	if c.Token != "" {
		return c.Token
	}
	return c.AdminKey
}

// Validate says in words what is wrong with c (after WithDefaults).
func (c Config) Validate() error {
	var errs []error
	bad := func(name, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: %s: %s", ErrInvalid, name, fmt.Sprintf(format, args...)))
	}
	if _, _, err := net.SplitHostPort(c.Addr); err != nil {
		bad("TASKFLOW_ADDR", "%q is not host:port (%v)", c.Addr, err)
	}
	if c.RedisURL != "" {
		u, err := url.Parse(c.RedisURL)
		if err != nil || (u.Scheme != "redis" && u.Scheme != "rediss" && u.Scheme != "unix") {
			bad("REDIS_URL", "%q is not a redis://, rediss:// or unix:// URL", redactURL(c.RedisURL))
		}
	}
	if _, err := keyspace.Parse(c.Namespace); err != nil {
		bad("TASKFLOW_NAMESPACE", "%v", err)
	}
	if c.AdminKey != "" && len(c.AdminKey) < 16 {
		bad("TASKFLOW_ADMIN_KEY", "must be at least 16 characters long (it is %d)", len(c.AdminKey))
	}
	if c.MaxBodyBytes < 1024 {
		bad("TASKFLOW_MAX_BODY_BYTES", "%d is below the minimum of 1024", c.MaxBodyBytes)
	}
	if c.MaxContentBytes < 1 || int64(c.MaxContentBytes) > c.MaxBodyBytes {
		bad("TASKFLOW_MAX_CONTENT_BYTES", "%d must be between 1 and TASKFLOW_MAX_BODY_BYTES (%d)", c.MaxContentBytes, c.MaxBodyBytes)
	}
	if c.IdempotencyTTL < time.Minute {
		bad("TASKFLOW_IDEMPOTENCY_TTL", "%s is below the minimum of 1m", c.IdempotencyTTL)
	}
	if c.SessionTTL < time.Minute {
		bad("TASKFLOW_SESSION_TTL", "%s is below the minimum of 1m", c.SessionTTL)
	}
	if c.ShutdownGrace < 0 {
		bad("TASKFLOW_SHUTDOWN_GRACE", "%s is negative", c.ShutdownGrace)
	}
	if c.Concurrency < 1 || c.Concurrency > 10000 {
		bad("TASKFLOW_CONCURRENCY", "%d must be between 1 and 10000", c.Concurrency)
	}
	if r := c.SessionRateLimit; r != nil && (*r < 0 || *r > 1000000) {
		bad("TASKFLOW_SESSION_RATE_LIMIT", "%d must be 0 to 1000000 per minute (0 turns the limit off)", *r)
	}
	if strings.ContainsAny(c.ClientIPHeader, " :\t\r\n") {
		bad("TASKFLOW_CLIENT_IP_HEADER", "%q is not a header name", c.ClientIPHeader)
	}
	if _, err := NewLogger(c.LogLevel, c.LogFormat, io.Discard); err != nil {
		errs = append(errs, err)
	}
	if u, err := url.Parse(c.APIURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		bad("TASKFLOW_URL", "%q is not an http(s) URL", c.APIURL)
	}
	return errors.Join(errs...)
}

// NewLogger builds the process's logger: level is debug, info, warn or
// error; format is text or json. A wrong value is an error naming
// LOG_LEVEL or LOG_FORMAT.
func NewLogger(level, format string, w io.Writer) (*slog.Logger, error) {
	var lv slog.Level
	switch level {
	case "debug":
		lv = slog.LevelDebug
	case "info", "":
		lv = slog.LevelInfo
	case "warn", "warning":
		lv = slog.LevelWarn
	case "error":
		lv = slog.LevelError
	default:
		return nil, fmt.Errorf("%w: LOG_LEVEL: %q is not debug, info, warn or error", ErrInvalid, level)
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch format {
	case "text", "":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("%w: LOG_FORMAT: %q is not text or json", ErrInvalid, format)
}

// redactURL hides a password in a URL for error messages.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "<unparseable URL>"
	}
	return u.Redacted()
}

// PlanSettings configure the plan engine of a process.
type PlanSettings struct {
	// RedisURL is the Redis holding the plans' data
	// (TASKFLOW_PLAN_REDIS_URL). Default empty: the process's own Redis
	// (PlanRedisURL).
	RedisURL string
	// KeyPrefix prefixes every key plans read (RANKD_KEY_PREFIX). Default
	// empty.
	KeyPrefix string
	// Dir is a directory of compiled plans (TASKFLOW_PLAN_DIR). Default
	// empty: the plans built into the binary.
	Dir string
	// Deadline is a run's default deadline (TASKFLOW_PLAN_DEADLINE_MS).
	// Default 0: the engine's (1 s).
	Deadline time.Duration
}

// PlanRedisURL is the Redis plans read: TASKFLOW_PLAN_REDIS_URL, else the
// process's own (REDIS_URL, or taskflow dev's embedded one once set).
func (c Config) PlanRedisURL() string {
	if c.Plans.RedisURL != "" {
		return c.Plans.RedisURL
	}
	return c.RedisURL
}
