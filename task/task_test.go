package task

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCanTransitionIsTheDocumentedMachine: the arrows of CanTransition are
// exactly those of docs/state_machine.md (its diagram, arrow by arrow), no
// more: an arrow no script performs would let a corrupt history pass the
// chaos test's path check.
func TestCanTransitionIsTheDocumentedMachine(t *testing.T) {
	t.Parallel()
	documented := map[[2]State]bool{
		{StatePending, StateActive}: true, {StatePending, StateDLQ}: true, {StatePending, StateCancelled}: true,
		{StateActive, StateCompleted}: true, {StateActive, StateFailed}: true, {StateActive, StateTimeout}: true,
		{StateActive, StatePending}: true, {StateActive, StateCancelled}: true,
		{StateFailed, StatePending}: true, {StateFailed, StateDLQ}: true,
		{StateTimeout, StateCompleted}: true, {StateTimeout, StateFailed}: true, {StateTimeout, StateCancelled}: true,
		{StateDLQ, StatePending}: true,
	}
	for _, from := range States {
		for _, to := range States {
			require.Equal(t, documented[[2]State{from, to}], CanTransition(from, to), "%s → %s", from, to)
		}
	}
	for _, s := range []State{StateCompleted, StateCancelled} {
		for _, to := range States {
			require.False(t, CanTransition(s, to), "%s is final", s)
		}
	}
}
