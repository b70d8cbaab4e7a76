package dispatch

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/taskflow/taskflow/internal/engine/keyspace"
	"github.com/taskflow/taskflow/internal/engine/store"
)

// InFlight counts the attempts of taskType that dispatchers admitted and
// that have not finished, leaving out those past their deadline (a
// dispatcher admitting the next attempt drops them): the number the
// TASKFLOW_EXTERNAL_INFLIGHT bound is checked against.
func InFlight(ctx context.Context, rdb redis.UniversalClient, ns keyspace.Namespace, taskType string, now time.Time) (int64, error) {
	n, err := InFlightOf(ctx, rdb, ns, []string{taskType}, now)
	if err != nil {
		return 0, err
	}
	return n[0], nil
}

// InFlightOf is InFlight for several task types in one round trip, in the
// order of taskTypes.
func InFlightOf(ctx context.Context, rdb redis.UniversalClient, ns keyspace.Namespace, taskTypes []string, now time.Time) ([]int64, error) {
	k, from := newKeys(ns), strconv.FormatInt(now.UnixMilli(), 10)
	cmds := make([]*redis.IntCmd, len(taskTypes))
	_, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, typ := range taskTypes {
			cmds[i] = p.ZCount(ctx, k.inflight(typ), from, "+inf")
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("dispatch: in-flight counts of %v: %w", taskTypes, err)
	}
	out := make([]int64, len(cmds))
	for i, c := range cmds {
		out[i] = c.Val()
	}
	return out, nil
}

// Release frees the in-flight place of the attempt (taskID, token) of
// taskType: its outcome has come, or it is no longer the task's attempt;
// a place it frees is announced on FreedChannel in the same call
// (release.lua). Releasing a place that is free already changes nothing.
func Release(ctx context.Context, rdb redis.UniversalClient, ns keyspace.Namespace, taskType, taskID, token string) error {
	k := newKeys(ns)
	if err := releaseScript.Run(ctx, rdb, []string{k.inflight(taskType)}, inflightMember(taskID, token), k.freed()).Err(); err != nil {
		return fmt.Errorf("dispatch: release the in-flight place of %s: %w", taskID, err)
	}
	return nil
}

// LastToken is the fencing token the task was last dispatched with, ""
// when it never was (or its records are gone). With one partition it is
// the task hash's handoff field, written in the call that published the
// attempt (store.DispatchMany); with several the dispatch's token key,
// written with its task.create (7 days) before the handoff. Each falls
// back on the other (a record an earlier version wrote).
func LastToken(ctx context.Context, st *store.Store, taskID string) (string, error) {
	if st.CanDispatch() {
		if tok, err := st.HandoffToken(ctx, taskID); err != nil || tok != "" {
			return tok, err
		}
	}
	tok, err := st.Client().Get(ctx, newKeys(st.Namespace()).token(taskID)).Result()
	if errors.Is(err, redis.Nil) {
		if st.CanDispatch() {
			return "", nil
		}
		return st.HandoffToken(ctx, taskID)
	}
	if err != nil {
		return "", fmt.Errorf("dispatch: last token of %s: %w", taskID, err)
	}
	return tok, nil
}

// Place is the in-flight set of taskType and the member by which the
// attempt of taskID with token holds a place in it (what Release removes),
// for a caller that frees the place in a script of its own.
func Place(ns keyspace.Namespace, taskType, taskID, token string) (set, member string) {
	return InFlightSet(ns, taskType), inflightMember(taskID, token)
}

// InFlightSet is the in-flight set of taskType, for a script that frees
// the places of attempts it learns itself (the outcome consumer's
// settle.lua, which names a member "<task id> <token>" as Place does).
func InFlightSet(ns keyspace.Namespace, taskType string) string {
	return newKeys(ns).inflight(taskType)
}
