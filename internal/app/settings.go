package app

import (
	"strconv"
	"time"
)

// Setting is one row of the configuration table: the variables it covers,
// the default as the README writes it, and what it means. The README's
// table is checked against Settings by a test (settings_test.go): a
// variable added to the code and not here, or a default that differs,
// fails it.
type Setting struct {
	// Vars are the environment variables of the row ("A / B" in the README).
	Vars []string
	// Default is the README's default cell, word for word.
	Default string
	// Effective renders the default the code applies, from a
	// configuration loaded from an empty environment, in the README's
	// spelling (without backticks); nil where the default is prose.
	Effective func(Config) string
}

func secs(d time.Duration) string { return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) }
func num(f float64) string        { return strconv.FormatFloat(f, 'f', -1, 64) }

// Settings lists every setting, in the README's order.
var Settings = []Setting{
	{Vars: []string{"REDIS_URL"}, Default: "(unset: `taskflow dev` embeds an in-memory server)"},
	{Vars: []string{"TASKFLOW_ADDR"}, Default: "`:8080` (`taskflow dev`: `127.0.0.1:8080`, loopback only)"},
	{Vars: []string{"TASKFLOW_NAMESPACE"}, Default: "`taskflow`", Effective: func(c Config) string { return c.Namespace }},
	{Vars: []string{"TASKFLOW_PARTITIONS"}, Default: "`1`", Effective: func(c Config) string { return strconv.Itoa(c.Engine.Store.WithDefaults().Partitions) }},
	{Vars: []string{"TASKFLOW_ADMIN_KEY"}, Default: "(unset: `taskflow api` refuses to start unless `--insecure`; `taskflow dev` runs open)"},
	{Vars: []string{"TASKFLOW_INSECURE"}, Default: "`false`", Effective: func(c Config) string { return strconv.FormatBool(c.Insecure) }},
	{Vars: []string{"TASKFLOW_SESSION_TTL"}, Default: "`24h`", Effective: func(c Config) string { return c.SessionTTL.String()[:3] }},
	{Vars: []string{"TASKFLOW_SESSION_RATE_LIMIT"}, Default: "`30`", Effective: func(c Config) string { return strconv.Itoa(*c.SessionRateLimit) }},
	{Vars: []string{"TASKFLOW_CLIENT_IP_HEADER"}, Default: "(none)"},
	{Vars: []string{"TASKFLOW_MAX_BODY_BYTES"}, Default: "`1048576`", Effective: func(c Config) string { return strconv.FormatInt(c.MaxBodyBytes, 10) }},
	{Vars: []string{"TASKFLOW_MAX_CONTENT_BYTES"}, Default: "`524288`", Effective: func(c Config) string { return strconv.Itoa(c.MaxContentBytes) }},
	{Vars: []string{"TASKFLOW_SHUTDOWN_GRACE"}, Default: "`10s`", Effective: func(c Config) string { return c.ShutdownGrace.String() }},
	{Vars: []string{"TASKFLOW_REQUEST_TIMEOUT"}, Default: "`1s`", Effective: func(c Config) string { return c.RequestTimeout.String() }},
	{Vars: []string{"GOGC"}, Default: "`400` in `taskflow api` (Go's `100` elsewhere)"},
	{Vars: []string{"TASKFLOW_CONCURRENCY"}, Default: "`10`", Effective: func(c Config) string { return strconv.Itoa(c.Concurrency) }},
	{Vars: []string{"LOG_LEVEL"}, Default: "`info`", Effective: func(c Config) string { return c.LogLevel }},
	{Vars: []string{"LOG_FORMAT"}, Default: "`text`", Effective: func(c Config) string { return c.LogFormat }},
	{Vars: []string{"MAX_RETRIES"}, Default: "`3`", Effective: func(c Config) string { return strconv.Itoa(*c.Engine.Store.WithDefaults().DefaultMaxRetries) }},
	{Vars: []string{"MAX_TASK_AGE"}, Default: "`3600`", Effective: func(c Config) string { return secs(*c.Engine.Store.WithDefaults().MaxTaskAge) }},
	{Vars: []string{"DEFAULT_RETRY_RATIO"}, Default: "`0.3`", Effective: func(c Config) string { return num(*c.Engine.Store.WithDefaults().RetryRatio) }},
	{Vars: []string{"RETRY_QUEUE_WARNING", "RETRY_RATIO_WARNING"}, Default: "`1000` / `0.2`", Effective: func(c Config) string {
		s := c.Engine.Store.WithDefaults()
		return strconv.Itoa(s.RetryQueueWarning) + "` / `" + num(*s.RetryRatioWarning)
	}},
	{Vars: []string{"RETRY_QUEUE_CRITICAL", "RETRY_RATIO_CRITICAL"}, Default: "`5000` / `0.1`", Effective: func(c Config) string {
		s := c.Engine.Store.WithDefaults()
		return strconv.Itoa(s.RetryQueueCritical) + "` / `" + num(*s.RetryRatioCritical)
	}},
	{Vars: []string{"CIRCUIT_FAILURE_THRESHOLD"}, Default: "`0.5`", Effective: func(c Config) string {
		return num(c.Engine.Worker.WithDefaults().Breaker.WithDefaults().FailureThreshold)
	}},
	{Vars: []string{"CIRCUIT_VOLUME_THRESHOLD"}, Default: "`10`", Effective: func(c Config) string {
		return strconv.Itoa(c.Engine.Worker.WithDefaults().Breaker.WithDefaults().VolumeThreshold)
	}},
	{Vars: []string{"CIRCUIT_TIMEOUT"}, Default: "`60`", Effective: func(c Config) string { return secs(c.Engine.Worker.WithDefaults().Breaker.WithDefaults().Timeout) }},
	{Vars: []string{"TASKFLOW_LEASE"}, Default: "`30s`", Effective: func(c Config) string { return c.Engine.Worker.WithDefaults().Lease.String() }},
	{Vars: []string{"TASKFLOW_TASK_TIMEOUT"}, Default: "`5m`", Effective: func(c Config) string { return c.Engine.Worker.WithDefaults().DefaultTimeout.String()[:2] }},
	{Vars: []string{"TASKFLOW_FETCH_BATCH"}, Default: "`64`", Effective: func(c Config) string { return strconv.Itoa(c.Engine.Worker.WithDefaults().FetchBatch) }},
	{Vars: []string{"TASKFLOW_RETRY_SCALE"}, Default: "`1`", Effective: func(c Config) string { return num(c.Engine.Worker.WithDefaults().Retry.WithDefaults().Scale) }},
	{Vars: []string{"TASKFLOW_RETRY_SCHEDULES"}, Default: "the built-in schedules"},
	{Vars: []string{"TASKFLOW_SCHEDULER_INTERVAL"}, Default: "`500ms`", Effective: func(c Config) string { return c.Engine.Scheduler.WithDefaults().Interval.String() }},
	{Vars: []string{"TASKFLOW_RETENTION"}, Default: "`24h`", Effective: func(c Config) string { return (*c.Engine.Scheduler.WithDefaults().Retention).String()[:3] }},
	{Vars: []string{"TASKFLOW_DLQ_RETENTION"}, Default: "`168h`", Effective: func(c Config) string { return (*c.Engine.Scheduler.WithDefaults().DLQRetention).String()[:4] }},
	{Vars: []string{"TASKFLOW_URL"}, Default: "`http://127.0.0.1:8080`", Effective: func(c Config) string { return c.APIURL }},
	{Vars: []string{"TASKFLOW_TOKEN"}, Default: "`TASKFLOW_ADMIN_KEY`"},
	{Vars: []string{"OPENROUTER_API_KEY"}, Default: "(unset: the built-in extractive summarizer)"},
	{Vars: []string{"OPENROUTER_BASE_URL"}, Default: "`https://openrouter.ai/api/v1`"},
	{Vars: []string{"OPENROUTER_MODEL"}, Default: "`meta-llama/llama-3.2-90b-text-preview`"},
	{Vars: []string{"OPENROUTER_TIMEOUT"}, Default: "`30`"},
	{Vars: []string{"OPENROUTER_RATE_LIMIT"}, Default: "`60`"},
	{Vars: []string{"OPENROUTER_RATE_INTERVAL"}, Default: "`60`"},
	{Vars: []string{"TASKFLOW_PLAN_DIR"}, Default: "(unset: the plans built into the binary)"},
	{Vars: []string{"TASKFLOW_PLAN_REDIS_URL"}, Default: "`REDIS_URL`, else the registry's `ep_0001` address"},
	{Vars: []string{"RANKD_KEY_PREFIX"}, Default: "(empty)"},
	{Vars: []string{"TASKFLOW_PLAN_DEADLINE_MS"}, Default: "`1000`"},
	{Vars: []string{"TASKFLOW_EXTERNAL_TYPES"}, Default: "`data.analyze,data.export,document.process,report.generate,text.wordcount`"},
	{Vars: []string{"DATABASE_URL"}, Default: "(unset: no archive)"},
	{Vars: []string{"TASKFLOW_ARCHIVE_SCHEMA"}, Default: "`taskflow`"},
	{Vars: []string{"TASKFLOW_OUTPUT_DIR"}, Default: "`taskflow-output`"},
	{Vars: []string{"TASKFLOW_ARTIFACT_DIR"}, Default: "(unset: result files over 8 MiB stay where the service wrote them)"},
	{Vars: []string{"TASKFLOW_EXTERNAL_BACKOFF_INITIAL", "TASKFLOW_EXTERNAL_BACKOFF_MAX", "TASKFLOW_EXTERNAL_BACKOFF_JITTER"}, Default: "`1s` / `60s` / `0.2`"},
	{Vars: []string{"TASKFLOW_ORCHESTRATOR_METRICS_ADDR"}, Default: "(unset: none)"},
	{Vars: []string{"TASKFLOW_EXTERNAL_INFLIGHT"}, Default: "`64`"},
}
