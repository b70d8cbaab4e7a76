package httpapi_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/internal/engine/keyspace"
	"github.com/taskflow/taskflow/internal/external/protocol"
)

// TestServicesShowGroupsAndInFlight: GET /api/v1/services carries the
// task.create stream's consumer groups (pending entries with the age of
// the oldest, entries not delivered yet counted in the stream), and each
// external type's in-flight count beside the dispatchers' bound.
func TestServicesShowGroupsAndInFlight(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	rdb := b.st.Client()
	create := protocol.NewKeys(keyspace.MustParse(b.ns)).Create()

	r := b.do("GET", "/api/v1/services", adminKey, nil)
	require.Equal(t, http.StatusOK, r.code, string(r.raw))
	require.Equal(t, []any{}, r.body["groups"], "no stream yet: no groups")

	// a service's group: three entries published a minute ago, two read,
	// one acknowledged
	require.NoError(t, protocol.EnsureGroup(ctx, rdb, create, "report-service-group", "0"))
	var ids []string
	minuteAgo := time.Now().Add(-time.Minute).UnixMilli()
	for i := range 3 {
		id, err := rdb.XAdd(ctx, &redis.XAddArgs{Stream: create, ID: fmt.Sprintf("%d-%d", minuteAgo, i+1), Values: map[string]any{"event_type": "task.create"}}).Result()
		require.NoError(t, err)
		ids = append(ids, id)
	}
	_, err := rdb.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "report-service-group", Consumer: "c1", Streams: []string{create, ">"}, Count: 2}).Result()
	require.NoError(t, err)
	require.NoError(t, rdb.XAck(ctx, create, "report-service-group", ids[0]).Err())

	r = b.do("GET", "/api/v1/services", adminKey, nil)
	require.Equal(t, http.StatusOK, r.code, string(r.raw))
	groups := r.body["groups"].([]any)
	require.Len(t, groups, 1)
	g := groups[0].(map[string]any)
	age := g["oldest_pending_seconds"].(float64)
	delete(g, "oldest_pending_seconds")
	require.Equal(t, map[string]any{"group": "report-service-group", "consumers": 1.0, "pending": 1.0, "lag": 1.0, "last_delivered_id": ids[1]}, g)
	require.GreaterOrEqual(t, age, 59.0, "the oldest pending entry was published a minute ago")
	require.Less(t, age, 600.0)
	types := r.body["external_types"].([]any)
	require.NotEmpty(t, types)
	for _, x := range types {
		et := x.(map[string]any)
		require.Equal(t, 0.0, et["in_flight"], et["task_type"])
		require.Equal(t, 64.0, et["in_flight_bound"], "the default bound")
	}
}
