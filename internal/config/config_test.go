package config_test

import (
	"testing"
	"time"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/internal/config"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestFromEnvDefaults(t *testing.T) {
	t.Parallel()
	c, err := config.FromEnv(env(nil))
	require.NoError(t, err)
	require.NoError(t, c.Validate())
	require.Equal(t, config.DefaultAddr, c.Addr)
	require.Equal(t, config.DefaultNamespace, c.Namespace)
	require.Equal(t, int64(config.DefaultMaxBodyBytes), c.MaxBodyBytes)
	require.Equal(t, config.DefaultSessionTTL, c.SessionTTL)
	require.Equal(t, config.DefaultAPIURL, c.APIURL)
	require.Empty(t, c.RedisURL)
}

func TestFromEnvValues(t *testing.T) {
	t.Parallel()
	c, err := config.FromEnv(env(map[string]string{
		"TASKFLOW_ADDR":           "127.0.0.1:9000",
		"REDIS_URL":               "redis://127.0.0.1:6379/3",
		"TASKFLOW_ADMIN_KEY":      "0123456789abcdef0123",
		"TASKFLOW_SESSION_TTL":    "1h",
		"TASKFLOW_MAX_BODY_BYTES": "2048",
		"TASKFLOW_INSECURE":       "true",
	}))
	require.NoError(t, err)
	require.NoError(t, c.Validate())
	require.Equal(t, "127.0.0.1:9000", c.Addr)
	require.Equal(t, time.Hour, c.SessionTTL)
	require.Equal(t, int64(2048), c.MaxBodyBytes)
	require.Equal(t, 2048, c.MaxContentBytes, "an unset content limit is clamped to the body limit")
	require.True(t, c.Insecure)
	require.Equal(t, "0123456789abcdef0123", c.Token, "client token falls back to the admin key")
}

func TestFromEnvUnparseable(t *testing.T) {
	t.Parallel()
	for name, kv := range map[string][2]string{
		"Duration": {"TASKFLOW_SESSION_TTL", "forever"},
		"Int":      {"TASKFLOW_MAX_BODY_BYTES", "lots"},
		"Bool":     {"TASKFLOW_INSECURE", "perhaps"},
		"Conc":     {"TASKFLOW_CONCURRENCY", "x"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := config.FromEnv(env(map[string]string{kv[0]: kv[1]}))
			require.ErrorIs(t, err, config.ErrInvalid)
			require.ErrorContains(t, err, kv[0])
		})
	}
}

// TestFromEnvZeroIsNotTheDefault: 0 is the fields' "unset", so a 0 in
// the environment is refused naming the variable instead of quietly
// serving the default.
func TestFromEnvZeroIsNotTheDefault(t *testing.T) {
	t.Parallel()
	for _, kv := range [][2]string{
		{"TASKFLOW_MAX_BODY_BYTES", "0"}, {"TASKFLOW_MAX_CONTENT_BYTES", "0"}, {"TASKFLOW_CONCURRENCY", "0"},
		{"TASKFLOW_SESSION_TTL", "0s"}, {"TASKFLOW_SHUTDOWN_GRACE", "0"},
	} {
		t.Run(kv[0], func(t *testing.T) {
			t.Parallel()
			_, err := config.FromEnv(env(map[string]string{kv[0]: kv[1]}))
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

func TestFlagsOverrideEnv(t *testing.T) {
	t.Parallel()
	c, err := config.FromEnv(env(map[string]string{"TASKFLOW_ADDR": "127.0.0.1:1"}))
	require.NoError(t, err)
	fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
	c.ServerFlags(fs)
	c.ClientFlags(fs)
	require.NoError(t, fs.Parse([]string{"--addr", "127.0.0.1:2", "--insecure"}))
	require.Equal(t, "127.0.0.1:2", c.Addr)
	require.True(t, c.Insecure)
}

func TestSessionRateLimitEnv(t *testing.T) {
	t.Parallel()
	c, err := config.FromEnv(env(nil))
	require.NoError(t, err)
	require.Equal(t, config.DefaultSessionRateLimit, *c.SessionRateLimit)
	require.Empty(t, c.ClientIPHeader)

	c, err = config.FromEnv(env(map[string]string{"TASKFLOW_SESSION_RATE_LIMIT": "5", "TASKFLOW_CLIENT_IP_HEADER": "X-Real-IP"}))
	require.NoError(t, err)
	require.NoError(t, c.Validate())
	require.Equal(t, 5, *c.SessionRateLimit)
	require.Equal(t, "X-Real-IP", c.ClientIPHeader)

	c, err = config.FromEnv(env(map[string]string{"TASKFLOW_SESSION_RATE_LIMIT": "0"}))
	require.NoError(t, err)
	require.Zero(t, *c.SessionRateLimit, "0 turns the limit off")

	for _, v := range []string{"many", "-3", "1.5"} {
		_, err = config.FromEnv(env(map[string]string{"TASKFLOW_SESSION_RATE_LIMIT": v}))
		require.ErrorIs(t, err, config.ErrInvalid, v)
		require.ErrorContains(t, err, "TASKFLOW_SESSION_RATE_LIMIT", v)
	}
	c, err = config.FromEnv(env(map[string]string{"TASKFLOW_CLIENT_IP_HEADER": "X Real"}))
	require.NoError(t, err)
	require.ErrorContains(t, c.Validate(), "TASKFLOW_CLIENT_IP_HEADER")
}

// TestPlanSettings: the plan engine's settings are read once here, with
// the process's Redis as the plans' default and a bad deadline refused
// naming its variable.
func TestPlanSettings(t *testing.T) {
	t.Parallel()
	env := func(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }
	c, err := config.FromEnv(env(map[string]string{"REDIS_URL": "redis://a:6379/0", "RANKD_KEY_PREFIX": "demo:",
		"TASKFLOW_PLAN_DIR": "/plans", "TASKFLOW_PLAN_DEADLINE_MS": "2500"}))
	require.NoError(t, err)
	require.Equal(t, "redis://a:6379/0", c.PlanRedisURL(), "the process's Redis by default")
	require.Equal(t, config.PlanSettings{KeyPrefix: "demo:", Dir: "/plans", Deadline: 2500 * time.Millisecond}, c.Plans)
	c, err = config.FromEnv(env(map[string]string{"REDIS_URL": "redis://a:6379/0", "TASKFLOW_PLAN_REDIS_URL": "redis://b:6379/1"}))
	require.NoError(t, err)
	require.Equal(t, "redis://b:6379/1", c.PlanRedisURL())
	for _, v := range []string{"0", "-5", "1.5", "soon"} {
		_, err = config.FromEnv(env(map[string]string{"TASKFLOW_PLAN_DEADLINE_MS": v}))
		require.ErrorContains(t, err, "TASKFLOW_PLAN_DEADLINE_MS", v)
	}
}
