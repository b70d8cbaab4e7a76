package orchestrator

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/taskflow/taskflow/internal/keyspace"
)

// InFlight counts the attempts of taskType that dispatchers admitted and
// that have not finished, leaving out those past their deadline (a
// dispatcher admitting the next attempt drops them): the number the
// TASKFLOW_EXTERNAL_INFLIGHT bound is checked against.
func InFlight(ctx context.Context, rdb redis.UniversalClient, ns keyspace.Namespace, taskType string, now time.Time) (int64, error) {
	n, err := rdb.ZCount(ctx, newKeys(ns).inflight(taskType), strconv.FormatInt(now.UnixMilli(), 10), "+inf").Result()
	if err != nil {
		return 0, fmt.Errorf("orchestrator: in-flight count of %s: %w", taskType, err)
	}
	return n, nil
}
