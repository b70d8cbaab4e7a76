package retry

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/task"
)

func TestScheduleFollowsSpec(t *testing.T) {
	t.Parallel()
	p := Policy{Rand: func() float64 { return 0 }}.WithDefaults()
	require.NoError(t, p.Validate())
	cases := []struct {
		name  string
		typ   string
		count int
		want  time.Duration
	}{
		{"RateLimitFirst", task.ErrTypeRateLimit, 0, 60 * time.Second},
		{"RateLimitLastRepeats", task.ErrTypeRateLimit, 9, 600 * time.Second},
		{"ServiceUnavailableSecond", task.ErrTypeServiceUnavailable, 1, 10 * time.Second},
		{"NetworkTimeoutFifth", task.ErrTypeNetworkTimeout, 4, 60 * time.Second},
		{"DefaultThird", task.ErrTypeDefault, 2, 60 * time.Second},
		{"UnknownTypeUsesDefault", "Weird", 0, 5 * time.Second},
		{"NegativeCountIsFirst", task.ErrTypeDefault, -1, 5 * time.Second},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, c.want, p.Delay(c.count, c.typ))
		})
	}
}

func TestJitterBounds(t *testing.T) {
	t.Parallel()
	p := Policy{}.WithDefaults()
	for _, typ := range []string{task.ErrTypeRateLimit, task.ErrTypeServiceUnavailable, task.ErrTypeNetworkTimeout, task.ErrTypeDefault} {
		for k := 0; k < 6; k++ {
			base := p.Base(k, typ)
			lo, hi := base, base+base/10
			var sawAbove bool
			for i := 0; i < 2000; i++ {
				d := p.Delay(k, typ)
				require.GreaterOrEqual(t, d, lo)
				require.LessOrEqual(t, d, hi)
				if d > lo+base/20 {
					sawAbove = true
				}
			}
			require.True(t, sawAbove, "jitter never exceeded 5%% of %s for %s", base, typ)
		}
	}
	// the extremes of the random source map to the bounds
	top := Policy{Rand: func() float64 { return 0.999999 }}.WithDefaults()
	require.InDelta(t, float64(66*time.Second), float64(top.Delay(0, task.ErrTypeRateLimit)), float64(time.Millisecond))
}

func TestScale(t *testing.T) {
	t.Parallel()
	p := Policy{Scale: 0.001, Rand: func() float64 { return 0 }}.WithDefaults()
	require.Equal(t, 60*time.Millisecond, p.Delay(0, task.ErrTypeRateLimit))
	now := time.Unix(100, 0)
	require.Equal(t, now.Add(2*time.Millisecond), p.NextRetryAt(now, 0, task.ErrTypeNetworkTimeout))
}

func TestValidate(t *testing.T) {
	t.Parallel()
	require.Error(t, Policy{Schedules: map[string][]time.Duration{"X": {time.Second}}}.WithDefaults().Validate())
	require.Error(t, Policy{Schedules: map[string][]time.Duration{task.ErrTypeDefault: {}}}.WithDefaults().Validate())
	require.Error(t, Policy{Jitter: 2}.WithDefaults().Validate())
	require.Error(t, Policy{Scale: -1}.WithDefaults().Validate())
}

type statusErr int

func (s statusErr) Error() string   { return fmt.Sprintf("status %d", int(s)) }
func (s statusErr) HTTPStatus() int { return int(s) }

func TestClassify(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		err   error
		class task.Class
		typ   string
		after time.Duration
	}{
		{"429", &StatusError{Code: 429, RetryAfter: 7 * time.Second}, task.ClassTransient, task.ErrTypeRateLimit, 7 * time.Second},
		{"500", &StatusError{Code: 500}, task.ClassTransient, task.ErrTypeServiceUnavailable, 0},
		{"502", &StatusError{Code: 502}, task.ClassTransient, task.ErrTypeServiceUnavailable, 0},
		{"503", &StatusError{Code: 503}, task.ClassTransient, task.ErrTypeServiceUnavailable, 0},
		{"504", &StatusError{Code: 504}, task.ClassTransient, task.ErrTypeNetworkTimeout, 0},
		{"408", &StatusError{Code: 408}, task.ClassTransient, task.ErrTypeNetworkTimeout, 0},
		{"409", &StatusError{Code: 409}, task.ClassPermanent, task.ErrTypeInvalidInput, 0},
		{"599", &StatusError{Code: 599}, task.ClassTransient, task.ErrTypeDefault, 0},
		{"400", &StatusError{Code: 400}, task.ClassPermanent, task.ErrTypeInvalidInput, 0},
		{"401", &StatusError{Code: 401}, task.ClassPermanent, task.ErrTypeAuth, 0},
		{"403", &StatusError{Code: 403}, task.ClassPermanent, task.ErrTypeForbidden, 0},
		{"404", fmt.Errorf("wrapped: %w", statusErr(404)), task.ClassPermanent, task.ErrTypeNotFound, 0},
		{"Deadline", fmt.Errorf("call: %w", context.DeadlineExceeded), task.ClassTransient, task.ErrTypeNetworkTimeout, 0},
		{"ConnRefused", &net.OpError{Op: "dial", Err: errors.New("refused")}, task.ClassTransient, task.ErrTypeNetworkTimeout, 0},
		{"Permanent", task.Permanent(errors.New("bad")), task.ClassPermanent, task.ErrTypePermanent, 0},
		{"RetryAfter", task.RetryAfter(errors.New("later"), time.Minute), task.ClassTransient, task.ErrTypeDefault, time.Minute},
		{"TransientTyped", task.Transient(task.ErrTypeRateLimit, errors.New("slow down")), task.ClassTransient, task.ErrTypeRateLimit, 0},
		{"Other", errors.New("boom"), task.ClassTransient, task.ErrTypeDefault, 0},
	}
	for _, c := range cases {
		t.Run("Status"+c.name, func(t *testing.T) {
			t.Parallel()
			d := Classify(c.err)
			require.Equal(t, c.class, d.Class)
			require.Equal(t, c.typ, d.ErrorType)
			require.Equal(t, c.after, d.After)
		})
	}
}
