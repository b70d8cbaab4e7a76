package redisconn

import (
	"errors"
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
	}
}
