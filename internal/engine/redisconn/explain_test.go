package redisconn

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestExplain(t *testing.T) {
	require.NoError(t, Explain(nil))
	plain := errors.New("ERR unknown command")
	require.Equal(t, plain, Explain(plain))
	for msg, hint := range map[string]string{
		"MOVED 866 127.0.0.1:7102":                              "cluster form",
		"ASK 866 127.0.0.1:7102":                                "cluster form",
		"READONLY You can't write against a read only replica.": "primary",
		"CLUSTERDOWN The cluster is down":                       "cannot serve",
		"ERR This instance has cluster support disabled":        "single server",
	} {
		err := Explain(errors.New(msg))
		require.ErrorIs(t, err, ErrTopology, msg)
		require.Contains(t, err.Error(), msg, "Redis's own words stay")
		require.Contains(t, err.Error(), hint)
		// wrapped in the store's words, or one part of a joined error
		// (a call per partition): recognised all the same
		for _, wrapped := range []error{
			fmt.Errorf("store: enqueue: %w", errors.New(msg)),
			errors.Join(errors.New("store: dial tcp 127.0.0.1:7202: connect: connection refused"), fmt.Errorf("store: %w", errors.New(msg))),
		} {
			err := Explain(wrapped)
			require.ErrorIs(t, err, ErrTopology, wrapped.Error())
			require.Contains(t, err.Error(), hint)
		}
	}
	require.Equal(t, error(fmt.Errorf("store: %w", plain)), Explain(fmt.Errorf("store: %w", plain)))
}
