package app

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/taskflow/taskflow/internal/retry"
	"github.com/taskflow/taskflow/internal/scheduler"
	"github.com/taskflow/taskflow/internal/seconds"
	"github.com/taskflow/taskflow/internal/store"
	"github.com/taskflow/taskflow/internal/worker"
)

// Engine is the engine's configuration from the environment: the store,
// the workers and the scheduler. Unset variables keep the packages'
// defaults (the README's configuration table lists every one).
type Engine struct {
	Store     store.Config
	Worker    worker.Config
	Scheduler scheduler.Config
}

// EngineFromEnv reads the engine's variables; an error names the variable.
// Every duration is read by one rule (seconds.Parse: "30", "0.5" or "90s").
func EngineFromEnv(getenv func(string) string, namespace string) (Engine, error) {
	var e Engine
	var errs []error
	unparsed := map[string]bool{} // set, but not a number or duration
	e.Store.Namespace = namespace
	intVar := func(name string, dst *int) {
		if v := strings.TrimSpace(getenv(name)); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %q is not an integer", name, v))
				unparsed[name] = true
				return
			}
			*dst = n
		}
	}
	floatVar := func(name string, dst *float64) {
		if v := strings.TrimSpace(getenv(name)); v != "" {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %q is not a number", name, v))
				unparsed[name] = true
				return
			}
			*dst = f
		}
	}
	durVar := func(name string, dst *time.Duration) {
		if v := strings.TrimSpace(getenv(name)); v != "" {
			d, err := seconds.Parse(v)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", name, err))
				unparsed[name] = true
				return
			}
			*dst = d
		}
	}
	set := func(name string) bool { return strings.TrimSpace(getenv(name)) != "" && !unparsed[name] }
	// optional settings: set only when the variable is (0 is a value)
	optInt := func(name string, dst **int) {
		var v int
		if intVar(name, &v); set(name) {
			*dst = new(v)
		}
	}
	optFloat := func(name string, dst **float64) {
		var v float64
		if floatVar(name, &v); set(name) {
			*dst = new(v)
		}
	}
	optDur := func(name string, dst **time.Duration) {
		var v time.Duration
		if durVar(name, &v); set(name) {
			*dst = new(v)
		}
	}
	intVar("TASKFLOW_PARTITIONS", &e.Store.Partitions)
	if set("TASKFLOW_PARTITIONS") && (e.Store.Partitions < 1 || e.Store.Partitions > store.MaxPartitions) {
		errs = append(errs, fmt.Errorf("TASKFLOW_PARTITIONS: %d must be within [1, %d]", e.Store.Partitions, store.MaxPartitions))
	}
	optInt("MAX_RETRIES", &e.Store.DefaultMaxRetries)
	optDur("MAX_TASK_AGE", &e.Store.MaxTaskAge)
	optFloat("DEFAULT_RETRY_RATIO", &e.Store.RetryRatio)
	optFloat("RETRY_RATIO_WARNING", &e.Store.RetryRatioWarning)
	optFloat("RETRY_RATIO_CRITICAL", &e.Store.RetryRatioCritical)
	intVar("RETRY_QUEUE_WARNING", &e.Store.RetryQueueWarning)
	intVar("RETRY_QUEUE_CRITICAL", &e.Store.RetryQueueCritical)
	floatVar("CIRCUIT_FAILURE_THRESHOLD", &e.Worker.Breaker.FailureThreshold)
	intVar("CIRCUIT_VOLUME_THRESHOLD", &e.Worker.Breaker.VolumeThreshold)
	durVar("CIRCUIT_TIMEOUT", &e.Worker.Breaker.Timeout)
	durVar("TASKFLOW_LEASE", &e.Worker.Lease)
	durVar("TASKFLOW_TASK_TIMEOUT", &e.Worker.DefaultTimeout)
	intVar("TASKFLOW_FETCH_BATCH", &e.Worker.FetchBatch)
	floatVar("TASKFLOW_RETRY_SCALE", &e.Worker.Retry.Scale)
	if v := strings.TrimSpace(getenv("TASKFLOW_RETRY_SCHEDULES")); v != "" {
		sch, err := retry.ParseSchedules(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("TASKFLOW_RETRY_SCHEDULES: %w", err))
		}
		e.Worker.Retry.Schedules = sch
	}
	durVar("TASKFLOW_SCHEDULER_INTERVAL", &e.Scheduler.Interval)
	// retention: unset keeps the scheduler's defaults (24 h, DLQ 7 days);
	// 0 keeps finished tasks forever
	optDur("TASKFLOW_RETENTION", &e.Scheduler.Retention)
	optDur("TASKFLOW_DLQ_RETENTION", &e.Scheduler.DLQRetention)
	for name, r := range map[string]*time.Duration{"TASKFLOW_RETENTION": e.Scheduler.Retention, "TASKFLOW_DLQ_RETENTION": e.Scheduler.DLQRetention} {
		if r != nil && *r < 0 {
			errs = append(errs, fmt.Errorf("%s: %s must not be negative (0 keeps finished tasks forever)", name, *r))
		}
	}
	// the optional settings' own rules (0 is a value: no retries, no age
	// rule, retry queue only when the primaries are empty)
	if r := e.Store.DefaultMaxRetries; r != nil && *r < 0 {
		errs = append(errs, fmt.Errorf("MAX_RETRIES: %d must be 0 or more", *r))
	}
	for name, r := range map[string]*float64{"DEFAULT_RETRY_RATIO": e.Store.RetryRatio,
		"RETRY_RATIO_WARNING": e.Store.RetryRatioWarning, "RETRY_RATIO_CRITICAL": e.Store.RetryRatioCritical} {
		if r != nil && (*r < 0 || *r > 1) {
			errs = append(errs, fmt.Errorf("%s: %v must be within [0, 1]", name, *r))
		}
	}
	if a := e.Store.MaxTaskAge; a != nil && *a < 0 {
		*a = 0 // negative, as 0: no age limit
	}
	for name, pos := range map[string]bool{
		"RETRY_QUEUE_WARNING": e.Store.RetryQueueWarning > 0, "RETRY_QUEUE_CRITICAL": e.Store.RetryQueueCritical > 0,
		"CIRCUIT_FAILURE_THRESHOLD": e.Worker.Breaker.FailureThreshold > 0, "CIRCUIT_VOLUME_THRESHOLD": e.Worker.Breaker.VolumeThreshold > 0,
		"CIRCUIT_TIMEOUT": e.Worker.Breaker.Timeout > 0, "TASKFLOW_LEASE": e.Worker.Lease > 0,
		"TASKFLOW_TASK_TIMEOUT": e.Worker.DefaultTimeout > 0, "TASKFLOW_FETCH_BATCH": e.Worker.FetchBatch > 0,
		"TASKFLOW_RETRY_SCALE": e.Worker.Retry.Scale > 0, "TASKFLOW_SCHEDULER_INTERVAL": e.Scheduler.Interval > 0,
	} {
		if set(name) && !pos {
			errs = append(errs, fmt.Errorf("%s: %q must be more than 0", name, strings.TrimSpace(getenv(name))))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return e, err
	}
	if err := e.Store.WithDefaults().Validate(); err != nil {
		return e, err
	}
	if err := e.Worker.WithDefaults().Validate(); err != nil {
		return e, err
	}
	return e, e.Scheduler.WithDefaults().Validate()
}
