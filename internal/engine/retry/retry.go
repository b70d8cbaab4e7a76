// Package retry classifies failures (transient or permanent, by
// error type) and computes when a transient failure is retried: the
// per-error-type schedules with 0–10 % jitter, scalable so tests can run a
// schedule in milliseconds.
package retry

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"syscall"
	"time"

	"github.com/taskflow/taskflow/task"
)

// Policy holds the retry schedules.
type Policy struct {
	// Schedules maps an error type to its delays; attempt k (0-based retry
	// count) waits Schedules[type][min(k, len-1)]. Types without an entry
	// use ErrTypeDefault's. Default: RETRY_SCHEDULES.
	Schedules map[string][]time.Duration
	// Jitter is the largest extra delay as a fraction of the base delay:
	// the delay is base + uniform[0, Jitter·base]. Default 0.1.
	Jitter float64
	// Scale multiplies every delay (tests: 0.001 runs a schedule in ms).
	// Default 1.
	Scale float64
	// Rand returns a uniform float in [0, 1); default math/rand/v2.
	Rand func() float64
}

// DefaultSchedules are RETRY_SCHEDULES.
func DefaultSchedules() map[string][]time.Duration {
	s := func(secs ...int) []time.Duration {
		out := make([]time.Duration, len(secs))
		for i, v := range secs {
			out[i] = time.Duration(v) * time.Second
		}
		return out
	}
	return map[string][]time.Duration{
		task.ErrTypeRateLimit:          s(60, 120, 300, 600),
		task.ErrTypeServiceUnavailable: s(5, 10, 30, 60, 120),
		task.ErrTypeNetworkTimeout:     s(2, 5, 10, 30, 60),
		task.ErrTypeDefault:            s(5, 15, 60, 300),
	}
}

// WithDefaults fills unset fields.
func (p Policy) WithDefaults() Policy {
	if p.Schedules == nil {
		p.Schedules = DefaultSchedules()
	}
	if p.Jitter == 0 {
		p.Jitter = 0.1
	}
	if p.Scale == 0 {
		p.Scale = 1
	}
	if p.Rand == nil {
		p.Rand = rand.Float64
	}
	return p
}

// Validate says what is wrong with p (after WithDefaults).
func (p Policy) Validate() error {
	if _, ok := p.Schedules[task.ErrTypeDefault]; !ok {
		return fmt.Errorf("retry: Schedules needs a %q entry", task.ErrTypeDefault)
	}
	for k, v := range p.Schedules {
		if len(v) == 0 {
			return fmt.Errorf("retry: schedule %q is empty", k)
		}
		for _, d := range v {
			if d < 0 {
				return fmt.Errorf("retry: schedule %q has a negative delay", k)
			}
		}
	}
	if p.Jitter < 0 || p.Jitter > 1 {
		return fmt.Errorf("retry: Jitter %v must be within [0, 1]", p.Jitter)
	}
	if p.Scale <= 0 {
		return fmt.Errorf("retry: Scale %v must be positive", p.Scale)
	}
	return nil
}

// Base is the delay before jitter for the retry after retryCount earlier
// retries of errType.
func (p Policy) Base(retryCount int, errType string) time.Duration {
	s, ok := p.Schedules[errType]
	if !ok {
		s = p.Schedules[task.ErrTypeDefault]
	}
	if retryCount < 0 {
		retryCount = 0
	}
	return time.Duration(float64(s[min(retryCount, len(s)-1)]) * p.Scale)
}

// Delay is Base plus jitter in [0, Jitter·Base].
func (p Policy) Delay(retryCount int, errType string) time.Duration {
	b := p.Base(retryCount, errType)
	return b + time.Duration(p.Rand()*p.Jitter*float64(b))
}

// NextRetryAt is now + Delay.
func (p Policy) NextRetryAt(now time.Time, retryCount int, errType string) time.Time {
	return now.Add(p.Delay(retryCount, errType))
}

// Decision is how one failure is treated.
type Decision struct {
	Class     task.Class
	ErrorType string
	// After is an exact delay the failure asked for (Retry-After, a
	// handler's task.RetryAfter); 0 means use the schedule.
	After time.Duration
}

// HTTPStatuser is implemented by errors that carry an HTTP status code
// (an outside API's answer).
type HTTPStatuser interface{ HTTPStatus() int }

// StatusError is an HTTP failure of an outside dependency.
type StatusError struct {
	Code int
	// RetryAfter is the server's Retry-After, if any.
	RetryAfter time.Duration
	Err        error
}

func (e *StatusError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("HTTP %d: %v", e.Code, e.Err)
	}
	return fmt.Sprintf("HTTP %d", e.Code)
}
func (e *StatusError) Unwrap() error   { return e.Err }
func (e *StatusError) HTTPStatus() int { return e.Code }

// ClassifyStatus maps an HTTP status to classes: 429, 500, 502,
// 503, 504 transient; 400, 401, 403, 404 (and other 4xx) permanent.
func ClassifyStatus(code int) Decision {
	switch code {
	case 429:
		return Decision{Class: task.ClassTransient, ErrorType: task.ErrTypeRateLimit}
	case 503:
		return Decision{Class: task.ClassTransient, ErrorType: task.ErrTypeServiceUnavailable}
	case 504, 408: // 408: the server timed out waiting for the request
		return Decision{Class: task.ClassTransient, ErrorType: task.ErrTypeNetworkTimeout}
	case 500, 502:
		return Decision{Class: task.ClassTransient, ErrorType: task.ErrTypeServiceUnavailable}
	case 400, 422:
		return Decision{Class: task.ClassPermanent, ErrorType: task.ErrTypeInvalidInput}
	case 401:
		return Decision{Class: task.ClassPermanent, ErrorType: task.ErrTypeAuth}
	case 403:
		return Decision{Class: task.ClassPermanent, ErrorType: task.ErrTypeForbidden}
	case 404:
		return Decision{Class: task.ClassPermanent, ErrorType: task.ErrTypeNotFound}
	}
	if code >= 400 && code < 500 {
		return Decision{Class: task.ClassPermanent, ErrorType: task.ErrTypeInvalidInput}
	}
	return Decision{Class: task.ClassTransient, ErrorType: task.ErrTypeDefault}
}

// Classify decides how err is treated: the handler's own word first
// (task.Permanent, task.Transient/RetryAfter), then an HTTP status, then
// timeouts and connection errors (transient NetworkTimeout); anything else
// is transient of type Default. Cancellation (task.Cancel) is not a
// failure: callers check task.CancelError first.
func Classify(err error) Decision {
	var pe *task.PermanentError
	if errors.As(err, &pe) {
		t := pe.Type
		if t == "" {
			t = task.ErrTypePermanent
		}
		return Decision{Class: task.ClassPermanent, ErrorType: t}
	}
	var te *task.TransientError
	if errors.As(err, &te) {
		t := te.Type
		if t == "" {
			t = task.ErrTypeDefault
		}
		return Decision{Class: task.ClassTransient, ErrorType: t, After: te.After}
	}
	var se *StatusError
	if errors.As(err, &se) {
		d := ClassifyStatus(se.Code)
		d.After = se.RetryAfter
		return d
	}
	var hs HTTPStatuser
	if errors.As(err, &hs) {
		return ClassifyStatus(hs.HTTPStatus())
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) {
		return Decision{Class: task.ClassTransient, ErrorType: task.ErrTypeNetworkTimeout}
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return Decision{Class: task.ClassTransient, ErrorType: task.ErrTypeNetworkTimeout}
	}
	var oe *net.OpError
	if errors.As(err, &oe) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) {
		return Decision{Class: task.ClassTransient, ErrorType: task.ErrTypeNetworkTimeout}
	}
	return Decision{Class: task.ClassTransient, ErrorType: task.ErrTypeDefault}
}
