package breaker

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"
)

// Command ops.
const (
	OpReset = "reset" // close the breaker and clear its counts
	OpOpen  = "open"  // force it open (ForceOpen)
)

// Command is what the operator endpoints publish on CommandChannel for
// every worker to apply to its own breakers.
type Command struct {
	// Op is OpReset or OpOpen.
	Op string `json:"op"`
	// Dependency names the breaker; empty means every breaker the worker
	// knows (those it has seen and those its task types need).
	Dependency string `json:"dependency,omitempty"`
	// Until is when a forced open ends (unix ms); 0 = held open until a
	// reset.
	Until int64 `json:"until_ms,omitempty"`
	// At is when the operator asked (unix ms).
	At int64 `json:"at_ms"`
}

// ErrBadCommand is wrapped by ParseCommand's errors.
var ErrBadCommand = errors.New("breaker: bad command")

// ParseCommand decodes and checks a published command.
func ParseCommand(b []byte) (Command, error) {
	var c Command
	if err := json.Unmarshal(b, &c); err != nil {
		return Command{}, fmt.Errorf("%w: %w", ErrBadCommand, err)
	}
	switch {
	case c.Op != OpReset && c.Op != OpOpen:
		return Command{}, fmt.Errorf("%w: op %q is neither %q nor %q", ErrBadCommand, c.Op, OpReset, OpOpen)
	case c.Until < 0 || (c.Op == OpReset && c.Until != 0):
		return Command{}, fmt.Errorf("%w: until_ms %d", ErrBadCommand, c.Until)
	case len(c.Dependency) > 200:
		return Command{}, fmt.Errorf("%w: dependency longer than 200 bytes", ErrBadCommand)
	}
	return c, nil
}

// Apply applies c to s. all lists the dependencies an empty
// c.Dependency stands for, besides those s already knows. It returns the
// dependencies it changed (sorted when c.Dependency is empty).
func (s *Set) Apply(c Command, all []string) []string {
	deps := []string{c.Dependency}
	if c.Dependency == "" {
		seen := map[string]bool{}
		deps = deps[:0]
		for _, d := range append(s.Known(), all...) {
			if d != "" && !seen[d] {
				seen[d] = true
				deps = append(deps, d)
			}
		}
		sort.Strings(deps)
	}
	if c.Op == OpOpen {
		var until time.Time
		if c.Until > 0 {
			until = time.UnixMilli(c.Until)
		}
		return s.ForceOpen(until, deps...)
	}
	return s.Reset(deps...)
}

// Replay applies the commands in force (ForcedKey's fields: dependency →
// JSON Command) to s at a worker's start: the all-dependencies command
// first, then the per-dependency ones (always newer: an all-dependencies
// command replaces them), skipping forced opens that have ended and
// fields that do not parse. It returns how many it applied.
func (s *Set) Replay(fields map[string]string, all []string, now time.Time) int {
	n := 0
	apply := func(raw string) {
		c, err := ParseCommand([]byte(raw))
		if err != nil || c.Op == OpOpen && c.Until > 0 && c.Until <= now.UnixMilli() {
			return
		}
		s.Apply(c, all)
		n++
	}
	if raw, ok := fields[""]; ok {
		apply(raw)
	}
	deps := make([]string, 0, len(fields))
	for d := range fields {
		if d != "" {
			deps = append(deps, d)
		}
	}
	sort.Strings(deps)
	for _, d := range deps {
		apply(fields[d])
	}
	return n
}
