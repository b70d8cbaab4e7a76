package outcome

import (
	"context"

	"github.com/taskflow/taskflow/internal/engine/keyspace"
	"github.com/taskflow/taskflow/internal/external/protocol"
)

// CrashAfterApply makes c stop, as a killed process would, after the
// transition of an event for which fn says so and before anything else
// is written: no side effect, no marker, no acknowledgement.
func CrashAfterApply(c *Consumer, fn func(protocol.Message) bool) { c.crashAfterApply = fn }

// Handle applies one event and acknowledges it, as the loop does.
func Handle(ctx context.Context, c *Consumer, m protocol.Message) error { return c.handle(ctx, m) }

// AppliedKey is the applied marker of the attempt (taskID, token).
func AppliedKey(ns keyspace.Namespace, taskID, token string) string {
	return newKeys(ns).applied(taskID, token)
}

// CrashAfterClaim makes c stop, as a killed process would, once the
// entry for which fn says so has claimed its attempt's outcome, before
// the transition.
func CrashAfterClaim(c *Consumer, fn func(protocol.Message) bool) { c.crashAfterClaim = fn }

// EntryName is m's name in its attempt's applied marker.
func EntryName(m protocol.Message) string { return entryName(m) }

// Settled is how many entries c applied with settle.lua.
func Settled(c *Consumer) int64 { return c.nsettled.Load() }

// Learn makes typ a type c settles, as the first completion of it
// applied by the other paths does.
func Learn(c *Consumer, typ string) { c.settled.learn(typ) }
