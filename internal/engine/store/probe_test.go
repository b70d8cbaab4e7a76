package store

import (
	"context"
	"fmt"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/internal/engine/redisconn"
	"github.com/taskflow/taskflow/internal/testrig/testredis"
)

// TestProbeNamesTheWrongNode: readiness writes in the namespace's slot. A
// plain client pointed at one node of a cluster answers PING but not for
// a namespace another node holds: Probe fails with Redis's MOVED and what
// to do about it; the cluster client passes.
func TestProbeNamesTheWrongNode(t *testing.T) {
	t.Parallel()
	cl := testredis.StartCluster(t)
	ctx := context.Background()
	single := cl.Nodes[0].Client()
	require.NoError(t, single.Ping(ctx).Err())
	cluster := cl.Client()
	moved := 0
	for i := range 12 {
		ns := fmt.Sprintf("probe-%d", i)
		st, err := New(single, Config{Namespace: ns})
		require.NoError(t, err)
		if err := st.Probe(ctx); err != nil {
			require.ErrorIs(t, err, redisconn.ErrTopology)
			require.Contains(t, err.Error(), "MOVED")
			require.Contains(t, err.Error(), "cluster form")
			moved++
		}
		var c redis.UniversalClient = cluster
		sc, err := New(c, Config{Namespace: ns})
		require.NoError(t, err)
		require.NoError(t, sc.Probe(ctx), ns)
	}
	require.NotZero(t, moved, "of 12 namespaces, some hash to the other two masters")
}
