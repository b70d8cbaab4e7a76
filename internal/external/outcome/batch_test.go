package outcome_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/extsvc"
	"github.com/taskflow/taskflow/internal/engine/keyspace"
	"github.com/taskflow/taskflow/internal/engine/store"
	"github.com/taskflow/taskflow/internal/external/acl"
	"github.com/taskflow/taskflow/internal/external/dispatch"
	"github.com/taskflow/taskflow/internal/external/notify"
	"github.com/taskflow/taskflow/internal/external/outcome"
	"github.com/taskflow/taskflow/internal/external/protocol"
	"github.com/taskflow/taskflow/internal/testrig/externaltest"
	"github.com/taskflow/taskflow/internal/testrig/testredis"
	"github.com/taskflow/taskflow/task"
)

// TestBatchKilledBetweenItsParts: a consumer that reads many completions
// at once applies them together (one step of all of them per round trip);
// killed after the batch's claims, or after its transitions and before any
// effect, it leaves every entry pending with its marker claimed. Another
// consumer finishes each of them: every task COMPLETED with its result,
// notified exactly once, every entry acknowledged, every marker done.
func TestBatchKilledBetweenItsParts(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		crash func(*outcome.Consumer, func(protocol.Message) bool)
		state task.State // of the tasks when the consumer died
	}{
		{"AfterTheClaims", outcome.CrashAfterClaim, task.StateActive},
		{"AfterTheTransitions", outcome.CrashAfterApply, task.StateCompleted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			const n = 20
			done := func(ctx context.Context, tk *extsvc.Task) (json.RawMessage, error) {
				return json.RawMessage(fmt.Sprintf(`{"task":%q}`, tk.ID)), nil
			}
			b := externaltest.Setup(t, externaltest.Options{NoOrchestrator: true, SkipArchive: true,
				Handlers: map[string]extsvc.HandlerFunc{"batch.run": done}})
			ids := outcomesPublished(t, b, "batch.run", n)

			dying, err := outcome.New(b.Store, b.Notifier, nil, outcome.Config{Consumer: "agent-dying", Block: 50 * time.Millisecond})
			require.NoError(t, err)
			crashed := make(chan struct{})
			var seen int
			tc.crash(dying, func(protocol.Message) bool {
				if seen++; seen == n/2 { // in the middle of the batch's items
					close(crashed)
					return true
				}
				return false
			})
			b.Run(t, "dying", dying.Run)
			<-crashed
			for i, id := range ids {
				tk, err := b.Store.Get(context.Background(), id)
				require.NoError(t, err)
				require.Equal(t, tc.state, tk.State, "task %d when the consumer died", i)
				ns, err := b.Notifier.List(context.Background(), fmt.Sprintf("s%d", i), "", 10)
				require.NoError(t, err)
				require.Empty(t, ns, "task %d: no effect before the crash", i)
			}
			_, pending, err := protocol.Lag(context.Background(), b.Redis, b.Streams.Completed(), protocol.AgentGroup)
			require.NoError(t, err)
			require.EqualValues(t, n, pending, "every entry of the batch left pending")

			b.StartConsumer(t, outcome.Config{Consumer: "agent-2", ClaimIdle: 200 * time.Millisecond})
			for i, id := range ids {
				got := b.WaitState(t, id, task.StateCompleted)
				require.JSONEq(t, fmt.Sprintf(`{"task":%q}`, id), string(got.Result))
				ns := b.WaitNotes(t, fmt.Sprintf("s%d", i), 1)
				require.Equal(t, notify.KindCompleted, ns[0].Type)
			}
			b.Drained(t, b.Streams.Completed())
			for i, id := range ids {
				ns, err := b.Notifier.List(context.Background(), fmt.Sprintf("s%d", i), "", 10)
				require.NoError(t, err)
				require.Len(t, ns, 1, "task %d notified once", i)
				require.Equal(t, "1", marker(t, b, id), "task %d: its outcome is marked done", i)
			}
		})
	}
}

// outcomesPublished submits n tasks of typ (task i of session s<i>), which
// the bundle's service performs, and waits until every outcome is on the
// completed stream (no consumer reads it yet); it returns their ids.
func outcomesPublished(t *testing.T, b *externaltest.Bundle, typ string, n int) []string {
	t.Helper()
	ids := make([]string, n)
	for i := range ids {
		ids[i] = b.Enqueue(t, typ, fmt.Sprintf("s%d", i), `{}`, time.Minute).ID
	}
	require.Eventually(t, func() bool { return len(b.Entries(t, b.Streams.Completed())) == n },
		10*time.Second, 5*time.Millisecond, "every outcome published before the consumer reads")
	return ids
}

// TestBatchWithAPartitionDown: a batch of completions of tasks in two
// partitions, one of which the consumer cannot reach (its user's rules
// leave that partition's keys out, so every call there fails, as with a
// master down): the reachable partition's tasks are completed and
// notified; the others' entries stay pending, their tasks ACTIVE, until
// the partition is back, then they are applied once each.
func TestBatchWithAPartitionDown(t *testing.T) {
	t.Parallel()
	srv := testredis.StartServer(t)
	admin := srv.Client()
	ctx := context.Background()
	const name = "batchparts"
	ns := keyspace.MustParse(name)
	setUser := func(user string, withPartition1 bool) {
		args := []any{"ACL", "SETUSER", user, "reset", "on", ">pw"}
		for _, r := range acl.ProcessRules(ns, 2) {
			if !withPartition1 && r == "~"+ns.PartitionPrefixes(2)[1]+"*" {
				continue
			}
			args = append(args, r)
		}
		require.NoError(t, admin.Do(ctx, args...).Err())
	}
	setUser("full", true)
	setUser("half", false) // the namespace's own keys and partition 0
	open := func(user string) (*store.Store, *notify.Notifier, redis.UniversalClient) {
		rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, Username: user, Password: "pw"})
		t.Cleanup(func() { _ = rdb.Close() })
		st, err := store.New(rdb, store.Config{Namespace: name, Partitions: 2})
		require.NoError(t, err)
		note, err := notify.New(rdb, notify.Config{Namespace: ns})
		require.NoError(t, err)
		return st, note, rdb
	}
	st, note, rdb := open("full")
	half, halfNote, _ := open("half")

	// tasks of both partitions, fetched (ACTIVE, leased), each with its
	// task.completed published as a service would
	const n = 12
	keys := protocol.NewKeys(ns)
	pub := protocol.NewPublisher(rdb, 0, nil)
	var ids []string
	inPart := map[string]int{}
	for i := 0; len(ids) < n; i++ {
		id := fmt.Sprintf("t%03d", i)
		p := st.PartitionOf(id)
		if count(inPart, p) >= n/2 {
			continue
		}
		_, err := st.Enqueue(ctx, store.EnqueueRequest{ID: id, Type: "batch.run", SessionID: "s-" + id})
		require.NoError(t, err)
		inPart[id] = p
		ids = append(ids, id)
	}
	var got []*task.Task
	require.Eventually(t, func() bool {
		ts, err := st.Fetch(ctx, store.FetchRequest{N: n, WorkerID: "w", TokenPrefix: fmt.Sprintf("w:%d", len(got)), Lease: time.Minute})
		require.NoError(t, err)
		got = append(got, ts...)
		return len(got) == n
	}, 5*time.Second, time.Millisecond)
	for _, tk := range got {
		e, err := protocol.New(protocol.TypeCompleted, time.Now(), protocol.CompletedData{TaskID: tk.ID, Status: "success",
			Result: json.RawMessage(`{"ok":true}`), CompletedBy: "test", Token: tk.Lease})
		require.NoError(t, err)
		_, err = pub.Publish(ctx, keys.Completed(), e)
		require.NoError(t, err)
	}

	c, err := outcome.New(half, halfNote, nil, outcome.Config{Consumer: "agent-half", Block: 50 * time.Millisecond, ClaimIdle: 300 * time.Millisecond})
	require.NoError(t, err)
	cctx, stop := context.WithCancel(ctx)
	stopped := make(chan error, 1)
	go func() { stopped <- c.Run(cctx) }()
	t.Cleanup(func() { stop(); <-stopped })

	state := func(id string) task.State {
		tk, err := st.Get(ctx, id)
		require.NoError(t, err)
		return tk.State
	}
	notes := func(id string) int {
		ns, err := note.List(ctx, "s-"+id, "", 10)
		require.NoError(t, err)
		return len(ns)
	}
	for _, id := range ids {
		if inPart[id] == 0 {
			require.Eventually(t, func() bool { return state(id) == task.StateCompleted && notes(id) == 1 },
				10*time.Second, 5*time.Millisecond, "%s (reachable partition) completed and notified", id)
		}
	}
	time.Sleep(500 * time.Millisecond) // the unreachable ones are tried again meanwhile (ClaimIdle)
	for _, id := range ids {
		if inPart[id] == 1 {
			require.Equal(t, task.StateActive, state(id), "%s waits for its partition", id)
			require.Zero(t, notes(id))
		}
	}
	_, pending, err := protocol.Lag(ctx, rdb, keys.Completed(), protocol.AgentGroup)
	require.NoError(t, err)
	require.EqualValues(t, n/2, pending, "the unreachable partition's entries stay pending")

	setUser("half", true) // the partition is back
	for _, id := range ids {
		require.Eventually(t, func() bool { return state(id) == task.StateCompleted && notes(id) == 1 },
			20*time.Second, 10*time.Millisecond, "%s completed and notified", id)
	}
	require.Eventually(t, func() bool {
		lag, pending, err := protocol.Lag(ctx, rdb, keys.Completed(), protocol.AgentGroup)
		return err == nil && lag == 0 && pending == 0
	}, 10*time.Second, 10*time.Millisecond)
	for _, id := range ids {
		require.Equal(t, 1, notes(id), "%s notified once", id)
	}
}

// count is how many of m's values are p.
func count(m map[string]int, p int) int {
	k := 0
	for _, v := range m {
		if v == p {
			k++
		}
	}
	return k
}

// TestBatchAnnouncesFreedPlaces: a batch of completions frees its
// attempts' in-flight places in its apply_batch.lua call and announces
// it once per type's set on dispatch.FreedChannel (a dispatcher waiting
// for a place asks again at once), not once per task.
func TestBatchAnnouncesFreedPlaces(t *testing.T) {
	t.Parallel()
	const n = 8
	b := externaltest.Setup(t, externaltest.Options{NoOrchestrator: true, SkipArchive: true,
		Handlers: map[string]extsvc.HandlerFunc{"freed.run": externaltest.Echo}})
	ctx := context.Background()
	ids := make([]string, n)
	for i := range ids {
		ids[i] = b.Enqueue(t, "freed.run", "s1", `{"word":"x"}`, time.Minute).ID
	}
	require.Eventually(t, func() bool { return len(b.Entries(t, b.Streams.Completed())) == n },
		10*time.Second, 5*time.Millisecond, "every outcome published before the consumer reads")
	set, _ := dispatch.Place(b.Namespace, "freed.run", ids[0], "")
	inflight := func() int64 {
		c, err := b.Redis.ZCard(ctx, set).Result()
		require.NoError(t, err)
		return c
	}
	require.EqualValues(t, n, inflight())
	freed := b.Redis.Subscribe(ctx, dispatch.FreedChannel(b.Namespace))
	defer freed.Close()
	_, err := freed.Receive(ctx) // subscribed
	require.NoError(t, err)

	b.StartConsumer(t, outcome.Config{Consumer: "agent-1"})
	for _, id := range ids {
		b.WaitState(t, id, task.StateCompleted)
	}
	b.Drained(t, b.Streams.Completed())
	require.Zero(t, inflight(), "every place freed")
	// "<set> <count>" per call: all n places, in fewer messages than n
	msgs, freedN := freedAnnounced(t, freed, set, n)
	require.Equal(t, n, freedN)
	require.Less(t, msgs, n, "announced per batch, not per task")
}

// freedAnnounced reads the freed channel (subscribed as freed) until n
// places of set are announced (10 s at most), each message "<set>
// <count>", and returns how many messages and places it read.
func freedAnnounced(t *testing.T, freed *redis.PubSub, set string, n int) (msgs, places int) {
	t.Helper()
	for wait := time.After(10 * time.Second); places < n; {
		select {
		case m := <-freed.Channel():
			s, c, _ := strings.Cut(m.Payload, " ")
			require.Equal(t, set, s)
			k, err := strconv.Atoi(c)
			require.NoError(t, err, m.Payload)
			msgs, places = msgs+1, places+k
		case <-wait:
			t.Fatalf("%d freed places announced of %d", places, n)
		}
	}
	return msgs, places
}
