// Package config holds the one configuration struct of the taskflow binary:
// where it listens, which Redis it uses, how clients authenticate, and the
// limits of the HTTP API. Values come from environment variables (the original
// names where it has them) and are overridden by command-line flags.
package config

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/taskflow/taskflow/internal/keyspace"
	"github.com/taskflow/taskflow/internal/seconds"
)

// Config is the configuration shared by `taskflow api`, `taskflow dev` and
// the client commands. The zero value is not ready: call WithDefaults.
type Config struct {
	// Addr is the HTTP listen address (TASKFLOW_ADDR, --addr).
	// Default ":8080"; `taskflow dev` forces a loopback host.
	Addr string
	// RedisURL is the Redis to use (REDIS_URL, --redis-url). Default empty:
	// `taskflow dev` then embeds an in-memory server; `taskflow api` refuses.
	RedisURL string
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
	// Token is the bearer token client commands send (TASKFLOW_TOKEN,
	// --token; falls back to TASKFLOW_ADMIN_KEY). Default empty.
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
}

// Defaults, named so that docs and tests can refer to them.
const (
	DefaultAddr             = ":8080"
	DefaultNamespace        = keyspace.DefaultName
	DefaultMaxBodyBytes     = 1 << 20
	DefaultMaxContentBytes  = 512 << 10
	DefaultSessionTTL       = 24 * time.Hour
	DefaultShutdownGrace    = 10 * time.Second
	DefaultRequestTimeout   = time.Second
	DefaultConcurrency      = 10
	DefaultAPIURL           = "http://127.0.0.1:8080"
	DefaultSessionRateLimit = 30
	DefaultLogLevel         = "info"
	DefaultLogFormat        = "text"
)

// ErrInvalid is wrapped by every error Validate and FromEnv return.
var ErrInvalid = errors.New("invalid configuration")

// WithDefaults returns c with every unset field set to its default.
func (c Config) WithDefaults() Config {
	if c.Addr == "" {
		c.Addr = DefaultAddr
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
	if c.SessionTTL == 0 {
		c.SessionTTL = DefaultSessionTTL
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
	return c
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

// FromEnv reads the environment through getenv and returns the config with
// defaults filled in. A variable that is set but cannot be parsed is an error
// naming it.
func FromEnv(getenv func(string) string) (Config, error) {
	var c Config
	var errs []error
	unparsed := map[string]bool{}
	c.Addr = getenv("TASKFLOW_ADDR")
	c.RedisURL = getenv("REDIS_URL")
	c.Namespace = getenv("TASKFLOW_NAMESPACE")
	c.AdminKey = getenv("TASKFLOW_ADMIN_KEY")
	c.DatabaseURL = getenv("DATABASE_URL")
	c.ArtifactDir = getenv("TASKFLOW_ARTIFACT_DIR")
	c.Plans.RedisURL = getenv("TASKFLOW_PLAN_REDIS_URL")
	c.Plans.KeyPrefix = getenv("RANKD_KEY_PREFIX")
	c.Plans.Dir = getenv("TASKFLOW_PLAN_DIR")
	if v := strings.TrimSpace(getenv("TASKFLOW_PLAN_DEADLINE_MS")); v != "" {
		ms, err := strconv.Atoi(v)
		if err != nil || ms <= 0 {
			errs = append(errs, fmt.Errorf("%w: TASKFLOW_PLAN_DEADLINE_MS: %q is not a positive number of milliseconds", ErrInvalid, v))
		} else {
			c.Plans.Deadline = time.Duration(ms) * time.Millisecond
		}
	}
	c.APIURL = getenv("TASKFLOW_URL")
	c.Token = getenv("TASKFLOW_TOKEN")
	if c.Token == "" {
		c.Token = c.AdminKey
	}
	if v := getenv("TASKFLOW_MAX_BODY_BYTES"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			errs = append(errs, fmt.Errorf("%w: TASKFLOW_MAX_BODY_BYTES: %q is not an integer", ErrInvalid, v))
			unparsed["TASKFLOW_MAX_BODY_BYTES"] = true
		}
		c.MaxBodyBytes = n
	}
	if v := getenv("TASKFLOW_MAX_CONTENT_BYTES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("%w: TASKFLOW_MAX_CONTENT_BYTES: %q is not an integer", ErrInvalid, v))
			unparsed["TASKFLOW_MAX_CONTENT_BYTES"] = true
		}
		c.MaxContentBytes = n
	}
	if v := getenv("TASKFLOW_CONCURRENCY"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("%w: TASKFLOW_CONCURRENCY: %q is not an integer", ErrInvalid, v))
			unparsed["TASKFLOW_CONCURRENCY"] = true
		}
		c.Concurrency = n
	}
	for _, d := range []struct {
		name string
		dst  *time.Duration
	}{{"TASKFLOW_SESSION_TTL", &c.SessionTTL}, {"TASKFLOW_SHUTDOWN_GRACE", &c.ShutdownGrace}, {"TASKFLOW_REQUEST_TIMEOUT", &c.RequestTimeout}} {
		if v := getenv(d.name); v != "" {
			x, err := seconds.Parse(v) // the one rule: seconds or a Go duration
			if err != nil {
				errs = append(errs, fmt.Errorf("%w: %s: %v", ErrInvalid, d.name, err))
				unparsed[d.name] = true
			}
			*d.dst = x
		}
	}
	c.ClientIPHeader = strings.TrimSpace(getenv("TASKFLOW_CLIENT_IP_HEADER"))
	c.LogLevel = strings.ToLower(strings.TrimSpace(getenv("LOG_LEVEL")))
	c.LogFormat = strings.ToLower(strings.TrimSpace(getenv("LOG_FORMAT")))
	if v := strings.TrimSpace(getenv("TASKFLOW_SESSION_RATE_LIMIT")); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			errs = append(errs, fmt.Errorf("%w: TASKFLOW_SESSION_RATE_LIMIT: %q is not a count of sessions per minute (0 = no limit)", ErrInvalid, v))
		}
		if err == nil && n >= 0 {
			c.SessionRateLimit = new(n) // 0: off
		}
	}
	// 0 is the fields' "unset": refuse it rather than serve the default
	for name, zero := range map[string]bool{"TASKFLOW_MAX_BODY_BYTES": c.MaxBodyBytes == 0,
		"TASKFLOW_MAX_CONTENT_BYTES": c.MaxContentBytes == 0, "TASKFLOW_CONCURRENCY": c.Concurrency == 0,
		"TASKFLOW_SESSION_TTL": c.SessionTTL == 0, "TASKFLOW_SHUTDOWN_GRACE": c.ShutdownGrace == 0,
		"TASKFLOW_REQUEST_TIMEOUT": c.RequestTimeout == 0} {
		if v := getenv(name); v != "" && zero && !unparsed[name] {
			errs = append(errs, fmt.Errorf("%w: %s: %q must be more than 0", ErrInvalid, name, v))
		}
	}
	if v := getenv("TASKFLOW_INSECURE"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("%w: TASKFLOW_INSECURE: %q is not a boolean", ErrInvalid, v))
		}
		c.Insecure = b
	}
	return c.WithDefaults(), errors.Join(errs...)
}

// ServerFlags binds the server's flags to c; the current values of c (from
// the environment) are the flags' defaults, so a flag overrides a variable.
func (c *Config) ServerFlags(fs *pflag.FlagSet) {
	fs.StringVar(&c.Addr, "addr", c.Addr, "listen address (TASKFLOW_ADDR)")
	fs.StringVar(&c.RedisURL, "redis-url", c.RedisURL, "Redis URL (REDIS_URL)")
	fs.StringVar(&c.Namespace, "namespace", c.Namespace, "Redis key namespace (TASKFLOW_NAMESPACE)")
	fs.StringVar(&c.AdminKey, "admin-key", c.AdminKey, "operator bearer token (TASKFLOW_ADMIN_KEY)")
	fs.BoolVar(&c.Insecure, "insecure", c.Insecure, "run without an admin key: unauthenticated requests act as the admin")
	fs.Int64Var(&c.MaxBodyBytes, "max-body-bytes", c.MaxBodyBytes, "largest request body accepted (TASKFLOW_MAX_BODY_BYTES)")
	fs.Var((*durationFlag)(&c.SessionTTL), "session-ttl", "lifetime of a session token: seconds or a duration (TASKFLOW_SESSION_TTL)")
}

// durationFlag is a duration flag read by the same rule as the variables:
// seconds ("86400") or a Go duration ("24h").
type durationFlag time.Duration

func (d *durationFlag) String() string { return time.Duration(*d).String() }
func (d *durationFlag) Type() string   { return "duration" }
func (d *durationFlag) Set(v string) error {
	x, err := seconds.Parse(v)
	if err != nil {
		return err
	}
	*d = durationFlag(x)
	return nil
}

// ClientFlags binds the client commands' flags to c.
func (c *Config) ClientFlags(fs *pflag.FlagSet) {
	fs.StringVar(&c.APIURL, "url", c.APIURL, "taskflow API base URL (TASKFLOW_URL)")
	fs.StringVar(&c.Token, "token", c.Token, "bearer token: a session token or the admin key (TASKFLOW_TOKEN, else TASKFLOW_ADMIN_KEY)")
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
