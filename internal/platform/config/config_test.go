package config_test

import (
	"testing"
	"time"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/internal/engine/retry"
	"github.com/taskflow/taskflow/internal/platform/config"
	"github.com/taskflow/taskflow/task"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestLoadDefaults(t *testing.T) {
	t.Parallel()
	c, err := config.Load(env(nil))
	require.NoError(t, err)
	require.NoError(t, c.Validate())
	require.Equal(t, config.DefaultAddr, c.Addr)
	require.Equal(t, config.DefaultNamespace, c.Namespace)
	require.Equal(t, config.DefaultNamespace, c.Engine.Store.Namespace)
	require.Equal(t, int64(config.DefaultMaxBodyBytes), c.MaxBodyBytes)
	require.Equal(t, config.DefaultSessionTTL, c.SessionTTL)
	require.Equal(t, config.DefaultAPIURL, c.APIURL)
	require.Equal(t, config.DefaultOutputDir, c.OutputDir)
	require.Empty(t, c.RedisURL)
	require.False(t, c.Given("REDIS_URL"))
	require.Nil(t, c.Engine.Store.DefaultMaxRetries, "unset keeps the package default")
	require.Nil(t, c.External.Types, "unset: the binary's default types")
	require.Zero(t, c.External.InFlight, "unset: the dispatcher's default")
	require.Equal(t, retry.Backoff{Initial: time.Second, Max: time.Minute, Jitter: new(0.2)}, c.External.Backoff)
}

func TestLoadValues(t *testing.T) {
	t.Parallel()
	c, err := config.Load(env(map[string]string{
		"TASKFLOW_ADDR":           "127.0.0.1:9000",
		"REDIS_URL":               "redis://127.0.0.1:6379/3",
		"TASKFLOW_NAMESPACE":      "ns1",
		"TASKFLOW_ADMIN_KEY":      "0123456789abcdef0123",
		"TASKFLOW_SESSION_TTL":    "1h",
		"TASKFLOW_MAX_BODY_BYTES": "2048",
		"TASKFLOW_INSECURE":       "true",
		"GOGC":                    "200",
		"TASKFLOW_ARCHIVE_SCHEMA": "arch",
		"TASKFLOW_EXTERNAL_TYPES": " a.b , c ,",
	}))
	require.NoError(t, err)
	require.NoError(t, c.Validate())
	require.Equal(t, "127.0.0.1:9000", c.Addr)
	require.True(t, c.Given("TASKFLOW_ADDR"))
	require.Equal(t, "ns1", c.Engine.Store.Namespace, "the store's namespace is the process's")
	require.Equal(t, time.Hour, c.SessionTTL)
	require.Equal(t, int64(2048), c.MaxBodyBytes)
	require.Equal(t, 2048, c.MaxContentBytes, "an unset content limit is clamped to the body limit")
	require.True(t, c.Insecure)
	require.Empty(t, c.Token)
	require.Equal(t, "0123456789abcdef0123", c.ClientToken(), "client token falls back to the admin key")
	require.Equal(t, "200", c.GOGC)
	require.Equal(t, "arch", c.ArchiveSchema)
	require.Equal(t, []string{"a.b", "c"}, c.External.Types)
}

// A variable set to blanks is unset.
func TestBlankIsUnset(t *testing.T) {
	t.Parallel()
	c, err := config.Load(env(map[string]string{"TASKFLOW_CONCURRENCY": "  ", "TASKFLOW_NAMESPACE": ""}))
	require.NoError(t, err)
	require.Equal(t, config.DefaultConcurrency, c.Concurrency)
	require.False(t, c.Given("TASKFLOW_CONCURRENCY"))
}

func TestLoadUnparseable(t *testing.T) {
	t.Parallel()
	for name, kv := range map[string][2]string{
		"Duration": {"TASKFLOW_SESSION_TTL", "forever"},
		"Int":      {"TASKFLOW_MAX_BODY_BYTES", "lots"},
		"Bool":     {"TASKFLOW_INSECURE", "perhaps"},
		"Conc":     {"TASKFLOW_CONCURRENCY", "x"},
		"Level":    {"LOG_LEVEL", "loud"},
		"Format":   {"LOG_FORMAT", "xml"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := config.Load(env(map[string]string{kv[0]: kv[1]}))
			require.ErrorIs(t, err, config.ErrInvalid)
			require.ErrorContains(t, err, kv[0])
			var ve *config.VarError
			require.ErrorAs(t, err, &ve)
			require.Equal(t, kv[0], ve.Var)
		})
	}
}

// Every wrong variable is named in the one error, and Only picks those
// of some variables.
func TestEveryWrongVariableIsNamed(t *testing.T) {
	t.Parallel()
	_, err := config.Load(env(map[string]string{"TASKFLOW_LEASE": "x", "TASKFLOW_SESSION_TTL": "y", "LOG_LEVEL": "loud",
		"TASKFLOW_EXTERNAL_INFLIGHT": "0", "OPENROUTER_TIMEOUT": "soon"}))
	for _, v := range []string{"TASKFLOW_LEASE", "TASKFLOW_SESSION_TTL", "LOG_LEVEL", "TASKFLOW_EXTERNAL_INFLIGHT", "OPENROUTER_TIMEOUT"} {
		require.ErrorContains(t, err, v+": ")
	}
	only := config.Only(err, "LOG_LEVEL", "LOG_FORMAT")
	require.EqualError(t, only, `invalid configuration: LOG_LEVEL: "loud" is not debug, info, warn or error`)
	require.NoError(t, config.Only(err, "LOG_FORMAT"))
	require.NoError(t, config.Only(nil, "LOG_FORMAT"))
}

// TestZeroIsNotTheDefault: 0 is the fields' "unset", so a 0 in the
// environment is refused naming the variable instead of quietly serving
// the default.
func TestZeroIsNotTheDefault(t *testing.T) {
	t.Parallel()
	for _, kv := range [][2]string{
		{"TASKFLOW_MAX_BODY_BYTES", "0"}, {"TASKFLOW_MAX_CONTENT_BYTES", "0"}, {"TASKFLOW_CONCURRENCY", "0"},
		{"TASKFLOW_SESSION_TTL", "0s"}, {"TASKFLOW_SHUTDOWN_GRACE", "0"},
	} {
		t.Run(kv[0], func(t *testing.T) {
			t.Parallel()
			_, err := config.Load(env(map[string]string{kv[0]: kv[1]}))
			require.ErrorIs(t, err, config.ErrInvalid)
			require.EqualError(t, err, config.ErrInvalid.Error()+": "+kv[0]+`: "`+kv[1]+`" must be more than 0`)
		})
	}
}

func TestValidate(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		mod  func(*config.Config)
		want string
	}{
		"Addr":      {func(c *config.Config) { c.Addr = "nope" }, "TASKFLOW_ADDR"},
		"RedisURL":  {func(c *config.Config) { c.RedisURL = "http://x" }, "REDIS_URL"},
		"ShortKey":  {func(c *config.Config) { c.AdminKey = "short" }, "TASKFLOW_ADMIN_KEY"},
		"Namespace": {func(c *config.Config) { c.Namespace = "a{b}" }, "TASKFLOW_NAMESPACE"},
		"Body":      {func(c *config.Config) { c.MaxBodyBytes = 10 }, "TASKFLOW_MAX_BODY_BYTES"},
		"TTL":       {func(c *config.Config) { c.SessionTTL = time.Second }, "TASKFLOW_SESSION_TTL"},
		"URL":       {func(c *config.Config) { c.APIURL = "ftp://x" }, "TASKFLOW_URL"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c := config.Config{}.WithDefaults()
			tc.mod(&c)
			err := c.Validate()
			require.ErrorIs(t, err, config.ErrInvalid)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

// A flag overrides its variable, read by the same rule; a flag not given
// keeps the variable's value.
func TestFlagsOverrideEnv(t *testing.T) {
	t.Parallel()
	c, err := config.Load(env(map[string]string{"TASKFLOW_ADDR": "127.0.0.1:1", "TASKFLOW_NAMESPACE": "fromenv",
		"TASKFLOW_SESSION_TTL": "2h", "TASKFLOW_CONCURRENCY": "3"}))
	require.NoError(t, err)
	fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
	c.BindFlags(fs, config.ServerFlags...)
	c.BindFlags(fs, config.ClientFlags...)
	c.BindFlags(fs, "concurrency")
	require.Equal(t, "2h0m0s", fs.Lookup("session-ttl").DefValue, "the variable's value is the flag's default")
	require.NoError(t, fs.Parse([]string{"--addr", "127.0.0.1:2", "--insecure", "--session-ttl", "90", "--max-body-bytes=4096"}))
	require.Equal(t, "127.0.0.1:2", c.Addr)
	require.True(t, c.Insecure)
	require.Equal(t, 90*time.Second, c.SessionTTL, "seconds or a duration, as the variable")
	require.Equal(t, int64(4096), c.MaxBodyBytes)
	require.Equal(t, "fromenv", c.Namespace, "a flag not given keeps the variable")
	require.Equal(t, 3, c.Concurrency)

	for _, bad := range [][]string{{"--session-ttl", "soon"}, {"--concurrency", "0"}, {"--insecure=maybe"}} {
		fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
		c.BindFlags(fs, "session-ttl", "concurrency", "insecure")
		err := fs.Parse(bad)
		require.Error(t, err, "%v", bad)
		require.ErrorContains(t, err, bad[0][:7], "the error names the flag")
	}
	require.Panics(t, func() { c.BindFlags(pflag.NewFlagSet("x", pflag.ContinueOnError), "no-such-flag") })
}

// A key or a token is no flag's default in --help.
func TestSecretsStayOutOfHelp(t *testing.T) {
	t.Parallel()
	c, err := config.Load(env(map[string]string{"TASKFLOW_ADMIN_KEY": "0123456789abcdef-secret", "TASKFLOW_TOKEN": "tok-secret"}))
	require.NoError(t, err)
	fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
	c.BindFlags(fs, "admin-key", "token")
	require.NotContains(t, fs.FlagUsages(), "secret")
	require.NoError(t, fs.Parse(nil))
	require.Equal(t, "tok-secret", c.Token, "the value is still the variable's")
}

func TestSessionRateLimitEnv(t *testing.T) {
	t.Parallel()
	c, err := config.Load(env(nil))
	require.NoError(t, err)
	require.Equal(t, config.DefaultSessionRateLimit, *c.SessionRateLimit)
	require.Empty(t, c.ClientIPHeader)

	c, err = config.Load(env(map[string]string{"TASKFLOW_SESSION_RATE_LIMIT": "5", "TASKFLOW_CLIENT_IP_HEADER": "X-Real-IP"}))
	require.NoError(t, err)
	require.NoError(t, c.Validate())
	require.Equal(t, 5, *c.SessionRateLimit)
	require.Equal(t, "X-Real-IP", c.ClientIPHeader)

	c, err = config.Load(env(map[string]string{"TASKFLOW_SESSION_RATE_LIMIT": "0"}))
	require.NoError(t, err)
	require.Zero(t, *c.SessionRateLimit, "0 turns the limit off")

	for _, v := range []string{"many", "-3", "1.5"} {
		_, err = config.Load(env(map[string]string{"TASKFLOW_SESSION_RATE_LIMIT": v}))
		require.ErrorIs(t, err, config.ErrInvalid, v)
		require.ErrorContains(t, err, "TASKFLOW_SESSION_RATE_LIMIT", v)
	}
	c, err = config.Load(env(map[string]string{"TASKFLOW_CLIENT_IP_HEADER": "X Real"}))
	require.NoError(t, err)
	require.ErrorContains(t, c.Validate(), "TASKFLOW_CLIENT_IP_HEADER")
}

// TestPlanSettings: the plan engine's settings are read once here, with
// the process's Redis as the plans' default and a bad deadline refused
// naming its variable.
func TestPlanSettings(t *testing.T) {
	t.Parallel()
	c, err := config.Load(env(map[string]string{"REDIS_URL": "redis://a:6379/0", "RANKD_KEY_PREFIX": "demo:",
		"TASKFLOW_PLAN_DIR": "/plans", "TASKFLOW_PLAN_DEADLINE_MS": "2500"}))
	require.NoError(t, err)
	require.Equal(t, "redis://a:6379/0", c.PlanRedisURL(), "the process's Redis by default")
	require.Equal(t, config.PlanSettings{KeyPrefix: "demo:", Dir: "/plans", Deadline: 2500 * time.Millisecond}, c.Plans)
	c, err = config.Load(env(map[string]string{"REDIS_URL": "redis://a:6379/0", "TASKFLOW_PLAN_REDIS_URL": "redis://b:6379/1"}))
	require.NoError(t, err)
	require.Equal(t, "redis://b:6379/1", c.PlanRedisURL())
	for _, v := range []string{"0", "-5", "1.5", "soon"} {
		_, err = config.Load(env(map[string]string{"TASKFLOW_PLAN_DEADLINE_MS": v}))
		require.ErrorContains(t, err, "TASKFLOW_PLAN_DEADLINE_MS", v)
	}
}

func TestEngineSettings(t *testing.T) {
	t.Parallel()
	e, err := config.Load(env(map[string]string{"MAX_RETRIES": "5", "MAX_TASK_AGE": "90", "CIRCUIT_TIMEOUT": "2m", "DEFAULT_RETRY_RATIO": "0.25",
		"TASKFLOW_LEASE": "10s", "TASKFLOW_RETRY_SCALE": "0.001", "RETRY_QUEUE_WARNING": "10", "RETRY_QUEUE_CRITICAL": "20",
		"TASKFLOW_PARTITIONS": "3", "TASKFLOW_RETENTION": "0"}))
	require.NoError(t, err)
	require.Equal(t, 5, *e.Engine.Store.DefaultMaxRetries)
	require.Equal(t, 90*time.Second, *e.Engine.Store.MaxTaskAge)
	require.Equal(t, 2*time.Minute, e.Engine.Worker.Breaker.Timeout)
	require.Equal(t, 0.25, *e.Engine.Store.RetryRatio)
	require.Equal(t, 10*time.Second, e.Engine.Worker.Lease)
	require.Equal(t, 0.001, e.Engine.Worker.Retry.Scale)
	require.Equal(t, 3, e.Engine.Store.Partitions)
	require.Zero(t, *e.Engine.Scheduler.Retention, "0 keeps finished tasks forever")
	require.Nil(t, e.Engine.Worker.Retry.Schedules, "unset: schedules")

	e, err = config.Load(env(map[string]string{"TASKFLOW_RETRY_SCHEDULES": "RateLimitError=30,90s; Default=1"}))
	require.NoError(t, err)
	s := e.Engine.Worker.Retry.Schedules
	require.Equal(t, []time.Duration{30 * time.Second, 90 * time.Second}, s[task.ErrTypeRateLimit])
	require.Equal(t, []time.Duration{time.Second}, s[task.ErrTypeDefault])
	require.Equal(t, retry.DefaultSchedules()[task.ErrTypeNetworkTimeout], s[task.ErrTypeNetworkTimeout])
	_, err = config.Load(env(map[string]string{"TASKFLOW_RETRY_SCHEDULES": "Default=soon"}))
	require.ErrorContains(t, err, `TASKFLOW_RETRY_SCHEDULES: retry schedules: Default: delay "soon"`)

	for name, val := range map[string]string{
		"MAX_RETRIES":            "three",
		"MAX_TASK_AGE":           "forever",
		"DEFAULT_RETRY_RATIO":    "1.5",
		"RETRY_QUEUE_CRITICAL":   "-1",
		"TASKFLOW_PARTITIONS":    "0",
		"TASKFLOW_DLQ_RETENTION": "-1s",
	} {
		_, err := config.Load(env(map[string]string{name: val}))
		require.ErrorIs(t, err, config.ErrInvalid, name)
		require.ErrorContains(t, err, name)
	}
	// the rules between settings: the packages' own (a lease of 1ms leaves
	// no room for a heartbeat)
	_, err = config.Load(env(map[string]string{"TASKFLOW_LEASE": "1ms"}))
	require.ErrorIs(t, err, config.ErrInvalid)
}

// TestEngineExplicitZero: 0 in a variable is never silently the default:
// the store's optional settings are unset only when nil, so where 0 means
// something (no retries, no age rule, no retry-first share) it reaches
// the store as 0; where it does not, it is refused naming the variable.
func TestEngineExplicitZero(t *testing.T) {
	t.Parallel()
	e, err := config.Load(env(map[string]string{"MAX_RETRIES": "0", "DEFAULT_RETRY_RATIO": "0", "RETRY_RATIO_WARNING": "0.0",
		"RETRY_RATIO_CRITICAL": "0", "MAX_TASK_AGE": "0"}))
	require.NoError(t, err)
	cfg := e.Engine.Store.WithDefaults()
	require.NoError(t, cfg.Validate())
	require.Zero(t, *cfg.DefaultMaxRetries, "no retries: a set 0 stays 0")
	require.Zero(t, *cfg.RetryRatio)
	require.Zero(t, *cfg.RetryRatioWarning)
	require.Zero(t, *cfg.RetryRatioCritical)
	require.Zero(t, *cfg.MaxTaskAge, "0 turns the age rule off")
	e, err = config.Load(env(map[string]string{"MAX_TASK_AGE": "-5"}))
	require.NoError(t, err)
	require.Zero(t, *e.Engine.Store.MaxTaskAge, "negative: as 0")

	for _, name := range []string{"RETRY_QUEUE_WARNING", "CIRCUIT_FAILURE_THRESHOLD", "CIRCUIT_VOLUME_THRESHOLD",
		"CIRCUIT_TIMEOUT", "TASKFLOW_LEASE", "TASKFLOW_TASK_TIMEOUT", "TASKFLOW_FETCH_BATCH", "TASKFLOW_RETRY_SCALE",
		"TASKFLOW_SCHEDULER_INTERVAL"} {
		_, err := config.Load(env(map[string]string{name: "0"}))
		require.ErrorContains(t, err, name+": \"0\" must be more than 0", name)
	}
	for name, val := range map[string]string{"MAX_RETRIES": "-1", "DEFAULT_RETRY_RATIO": "-0.1", "RETRY_RATIO_CRITICAL": "2"} {
		_, err := config.Load(env(map[string]string{name: val}))
		require.ErrorContains(t, err, name, val)
	}
	// a value that does not parse is reported once
	_, err = config.Load(env(map[string]string{"TASKFLOW_LEASE": "forever"}))
	require.EqualError(t, err, `invalid configuration: TASKFLOW_LEASE: "forever" is not seconds (30, 0.5) or a duration (90s, 1h)`)
}

// TestExternalBackoff: defaults when unset; each variable overrides its
// field; a bad value is refused naming the variable.
func TestExternalBackoff(t *testing.T) {
	t.Parallel()
	c, err := config.Load(env(map[string]string{"TASKFLOW_EXTERNAL_BACKOFF_INITIAL": "250ms", "TASKFLOW_EXTERNAL_BACKOFF_MAX": "5",
		"TASKFLOW_EXTERNAL_BACKOFF_JITTER": "0"}))
	require.NoError(t, err)
	require.Equal(t, retry.Backoff{Initial: 250 * time.Millisecond, Max: 5 * time.Second, Jitter: new(0.0)}, c.External.Backoff)
	for name, kv := range map[string]map[string]string{
		"Initial":         {"TASKFLOW_EXTERNAL_BACKOFF_INITIAL": "soon"},
		"Max":             {"TASKFLOW_EXTERNAL_BACKOFF_MAX": "-1s"},
		"Jitter":          {"TASKFLOW_EXTERNAL_BACKOFF_JITTER": "x"},
		"JitterOne":       {"TASKFLOW_EXTERNAL_BACKOFF_JITTER": "1"},
		"MaxBelowInitial": {"TASKFLOW_EXTERNAL_BACKOFF_INITIAL": "10s", "TASKFLOW_EXTERNAL_BACKOFF_MAX": "1s"},
	} {
		_, err := config.Load(env(kv))
		require.ErrorIs(t, err, config.ErrInvalid, name)
		for k := range kv {
			require.ErrorContains(t, err, k, name)
		}
	}
}

func TestExternalInFlight(t *testing.T) {
	t.Parallel()
	for v, want := range map[string]int{"": 0, "64": 64, " 8 ": 8, "-1": -1} {
		c, err := config.Load(env(map[string]string{"TASKFLOW_EXTERNAL_INFLIGHT": v}))
		require.NoError(t, err, "%q", v)
		require.Equal(t, want, c.External.InFlight, "%q", v)
	}
	for _, v := range []string{"0", "-2", "many", "1.5"} {
		_, err := config.Load(env(map[string]string{"TASKFLOW_EXTERNAL_INFLIGHT": v}))
		require.ErrorContains(t, err, `TASKFLOW_EXTERNAL_INFLIGHT: "`+v+`" is not a positive number of tasks (or -1 for no bound)`)
	}
}

// The summarize task's settings: the LLM's, its rate limit.
func TestSummarizeSettings(t *testing.T) {
	t.Parallel()
	c, err := config.Load(env(map[string]string{"OPENROUTER_API_KEY": " k ", "OPENROUTER_TIMEOUT": "2.5",
		"OPENROUTER_RATE_LIMIT": "0", "OPENROUTER_RATE_INTERVAL": "1m"}))
	require.NoError(t, err)
	s := c.Summarize
	require.Equal(t, "k", s.LLM.APIKey)
	require.Equal(t, 2500*time.Millisecond, s.LLM.Timeout)
	require.Zero(t, *s.RateLimit, "0 turns the limit off")
	require.Equal(t, time.Minute, s.RateInterval)
	for name, val := range map[string]string{"OPENROUTER_TIMEOUT": "soon", "OPENROUTER_RATE_LIMIT": "lots",
		"OPENROUTER_RATE_INTERVAL": "never"} {
		_, err := config.Load(env(map[string]string{name: val}))
		require.ErrorContains(t, err, name+`: "`+val+`" is not`)
	}
	_, err = config.Load(env(map[string]string{"OPENROUTER_RATE_INTERVAL": "0.0001"}))
	require.ErrorContains(t, err, "OPENROUTER_RATE_INTERVAL", "below a millisecond")
}
