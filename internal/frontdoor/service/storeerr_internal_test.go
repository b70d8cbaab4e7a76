package service

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/internal/engine/redisconn"
	"github.com/taskflow/taskflow/internal/engine/store"
)

// TestStoreErrExplainsTopology: a MOVED from a plain client on the wrong
// cluster node is a 503 whose error (what the API logs) says what to fix,
// not an unexplained 500.
func TestStoreErrExplainsTopology(t *testing.T) {
	err := storeErr("", errors.New("MOVED 866 127.0.0.1:7102"))
	var se *Error
	require.ErrorAs(t, err, &se)
	require.Equal(t, KindUnavailable, se.Kind)
	require.ErrorIs(t, se.Err, redisconn.ErrTopology)
	require.Contains(t, se.Err.Error(), "MOVED 866")
	require.Contains(t, se.Err.Error(), "cluster form")

	// as the store wraps it, or one partition's part of a joined error:
	// a 503 all the same, not a 500
	for _, wrapped := range []error{
		fmt.Errorf("store: %w", errors.New("CLUSTERDOWN The cluster is down")),
		errors.Join(errors.New("store: dial tcp 127.0.0.1:7202: connect: connection refused"), fmt.Errorf("store: %w", errors.New("CLUSTERDOWN The cluster is down"))),
	} {
		se = nil
		require.ErrorAs(t, storeErr("", wrapped), &se)
		require.Equal(t, KindUnavailable, se.Kind, wrapped.Error())
	}

	se = nil
	require.ErrorAs(t, storeErr("", errors.New("ERR something else")), &se)
	require.Equal(t, KindInternal, se.Kind)
}

// A partition marked down answers at once with store.ErrPartitionDown: a
// 503 like any Redis that does not answer, not a 500.
func TestStoreErrPartitionDownIsUnavailable(t *testing.T) {
	var se *Error
	require.ErrorAs(t, storeErr("", fmt.Errorf("store: partition 2: %w", store.ErrPartitionDown)), &se)
	require.Equal(t, KindUnavailable, se.Kind)
	require.ErrorIs(t, se, store.ErrPartitionDown)
}
