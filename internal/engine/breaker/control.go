package breaker

import "time"

// Operator control: a worker applies the commands the API publishes
// (see Command) to its own Set.

// Reset closes the breakers of deps and clears their counts, whatever
// their state (an operator's forced open included). It returns the
// dependencies it closed, in the order given.
func (s *Set) Reset(deps ...string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.cfg.Clock.Now()
	for _, dep := range deps {
		s.m[dep] = &breaker{state: Closed, since: now}
	}
	return deps
}

// ForceOpen opens the breakers of deps as an operator asks: no task
// needing one starts until until (then it turns HALF_OPEN and probes as
// after a normal timeout), or, when until is zero, until Reset. Calls in
// flight finish; their results do not move a forced breaker.
func (s *Set) ForceOpen(until time.Time, deps ...string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.cfg.Clock.Now()
	for _, dep := range deps {
		s.m[dep] = &breaker{state: Open, since: now, forced: true, until: until}
	}
	return deps
}

// Known lists the dependencies the Set has a breaker for (sorted).
func (s *Set) Known() []string {
	sn := s.Snapshots()
	out := make([]string, len(sn))
	for i, x := range sn {
		out[i] = x.Dependency
	}
	return out
}
