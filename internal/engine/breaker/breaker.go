// Package breaker is the circuit breaker, one per outside
// dependency: CLOSED counts calls; when at least VolumeThreshold calls were
// seen and the failure rate reaches FailureThreshold it turns OPEN and no
// task needing the dependency starts; after Timeout it turns HALF_OPEN and
// lets one probe through: success closes it, failure opens it again, and a
// probe that says nothing about the dependency (it was cancelled, or never
// called it) is released, so the next task is the probe at once.
// Time comes from an injected clock.
//
// What counts (the caller decides, see internal/engine/worker): a success, or an
// answer of the dependency that the task cannot use (an HTTP 4xx: the
// dependency is up), is a success; a transient failure (timeout, refused
// connection, 429, 5xx) is a failure; anything else is no call (Release).
package breaker

import (
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/taskflow/taskflow/internal/engine/clock"
)

// State is a breaker state.
type State string

const (
	Closed   State = "CLOSED"
	Open     State = "OPEN"
	HalfOpen State = "HALF_OPEN"
)

// Config configures every breaker of a Set.
type Config struct {
	// FailureThreshold (CIRCUIT_FAILURE_THRESHOLD): failure rate that opens
	// the breaker. Default 0.5.
	FailureThreshold float64
	// VolumeThreshold (CIRCUIT_VOLUME_THRESHOLD): calls needed before the
	// rate counts. Default 10.
	VolumeThreshold int
	// Timeout (CIRCUIT_TIMEOUT): how long it stays OPEN before a probe.
	// Default 60s.
	Timeout time.Duration
	// Window: CLOSED counts restart after this long, so old successes do
	// not hide a new outage. Default 60s.
	Window time.Duration
	// Clock defaults to clock.Real{}.
	Clock clock.Clock
}

// WithDefaults fills unset fields.
func (c Config) WithDefaults() Config {
	if c.FailureThreshold == 0 {
		c.FailureThreshold = 0.5
	}
	if c.VolumeThreshold == 0 {
		c.VolumeThreshold = 10
	}
	if c.Timeout == 0 {
		c.Timeout = 60 * time.Second
	}
	if c.Window == 0 {
		c.Window = 60 * time.Second
	}
	if c.Clock == nil {
		c.Clock = clock.Real{}
	}
	return c
}

// Validate says what is wrong with c.
func (c Config) Validate() error {
	if c.FailureThreshold <= 0 || c.FailureThreshold > 1 {
		return fmt.Errorf("breaker: FailureThreshold %v must be within (0, 1]", c.FailureThreshold)
	}
	if c.VolumeThreshold < 1 {
		return fmt.Errorf("breaker: VolumeThreshold %d must be >= 1", c.VolumeThreshold)
	}
	if c.Timeout <= 0 || c.Window <= 0 {
		return fmt.Errorf("breaker: Timeout %s and Window %s must be positive", c.Timeout, c.Window)
	}
	return nil
}

// Snapshot is one breaker's state, as published for the health views.
type Snapshot struct {
	Dependency string    `json:"dependency"`
	State      State     `json:"state"`
	Failures   int       `json:"failures"`
	Successes  int       `json:"successes"`
	OpenedAt   time.Time `json:"opened_at,omitzero"`
	// Forced is true while an operator holds the breaker open (ForceOpen);
	// Until is when that ends (zero: until Reset).
	Forced bool      `json:"forced,omitempty"`
	Until  time.Time `json:"until,omitzero"`
}

type breaker struct {
	state      State
	failures   int
	successes  int
	since      time.Time // window start (CLOSED) or opened at (OPEN)
	probeSince time.Time // HALF_OPEN: when the probe was let through; zero = none
	forced     bool      // OPEN by an operator (ForceOpen), not by failures
	until      time.Time // forced: when it ends (then HALF_OPEN); zero = until Reset
}

// Set holds one breaker per dependency name. Safe for concurrent use.
type Set struct {
	cfg Config
	mu  sync.Mutex
	m   map[string]*breaker
}

// NewSet returns a Set; cfg gets its defaults and must validate.
func NewSet(cfg Config) (*Set, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Set{cfg: cfg, m: map[string]*breaker{}}, nil
}

func (s *Set) get(dep string, now time.Time) *breaker {
	b, ok := s.m[dep]
	if !ok {
		b = &breaker{state: Closed, since: now}
		s.m[dep] = b
	}
	return b
}

// Declare makes the breakers of deps known (CLOSED) before their first
// use, so that the workers view lists every dependency a worker has.
func (s *Set) Declare(deps ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.cfg.Clock.Now()
	for _, d := range deps {
		s.get(d, now)
	}
}

// Allow reports whether a task needing dep may start now; when not, wait
// is how long until the breaker lets a probe through.
func (s *Set) Allow(dep string) (ok bool, wait time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.cfg.Clock.Now()
	b := s.get(dep, now)
	switch b.state {
	case Open:
		if b.forced && b.until.IsZero() {
			// held open until an operator resets it: look again after Timeout
			return false, s.cfg.Timeout
		}
		until := b.since.Add(s.cfg.Timeout)
		if b.forced {
			until = b.until
		}
		if now.Before(until) {
			return false, until.Sub(now)
		}
		b.state = HalfOpen
		b.probeSince = now
		b.forced, b.until = false, time.Time{}
		return true, 0
	case HalfOpen:
		// one probe at a time; a probe that never reports (its process
		// died) is replaced after Timeout
		if !b.probeSince.IsZero() && now.Sub(b.probeSince) < s.cfg.Timeout {
			return false, s.cfg.Timeout - now.Sub(b.probeSince)
		}
		b.probeSince = now
		return true, 0
	}
	return true, 0
}

// Record reports the outcome of a call to dep (failures are the outside
// dependency's: transient errors, not the task's bad input).
func (s *Set) Record(dep string, success bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.cfg.Clock.Now()
	b := s.get(dep, now)
	switch b.state {
	case HalfOpen:
		if success {
			*b = breaker{state: Closed, since: now}
		} else {
			*b = breaker{state: Open, since: now}
		}
		return
	case Open:
		return // late results of calls started before it opened
	}
	if now.Sub(b.since) >= s.cfg.Window {
		b.failures, b.successes, b.since = 0, 0, now
	}
	if success {
		b.successes++
	} else {
		b.failures++
	}
	total := b.failures + b.successes
	if total >= s.cfg.VolumeThreshold && float64(b.failures)/float64(total) >= s.cfg.FailureThreshold {
		*b = breaker{state: Open, since: now}
	}
}

// Release ends a call to dep that tells nothing about the dependency (the
// task was cancelled, handed back, or ended before it called the
// dependency). In HALF_OPEN it frees the probe slot, so the next task
// becomes the probe at once instead of after another Timeout; in CLOSED and
// OPEN it does nothing. (Like Record, it does not tell the probe from a
// call started before the breaker opened: at worst a second probe runs.)
func (s *Set) Release(dep string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if b, ok := s.m[dep]; ok && b.state == HalfOpen {
		b.probeSince = time.Time{}
	}
}

// State returns dep's current state (OPEN turns HALF_OPEN only on Allow).
func (s *Set) State(dep string) State {
	s.mu.Lock()
	defer s.mu.Unlock()
	if b, ok := s.m[dep]; ok {
		return b.state
	}
	return Closed
}

// Snapshots lists every known breaker, sorted by dependency.
func (s *Set) Snapshots() []Snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Snapshot, 0, len(s.m))
	for dep, b := range s.m {
		sn := Snapshot{Dependency: dep, State: b.state, Failures: b.failures, Successes: b.successes}
		if b.state == Open {
			sn.OpenedAt = b.since
			sn.Forced, sn.Until = b.forced, b.until
		}
		out = append(out, sn)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Dependency < out[j].Dependency })
	return out
}
