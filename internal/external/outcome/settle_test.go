package outcome_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/taskflow/taskflow/extsvc"
	"github.com/taskflow/taskflow/internal/external/dispatch"
	"github.com/taskflow/taskflow/internal/external/notify"
	"github.com/taskflow/taskflow/internal/external/outcome"
	"github.com/taskflow/taskflow/internal/external/protocol"
	"github.com/taskflow/taskflow/internal/tasktypes"
	"github.com/taskflow/taskflow/internal/testrig/externaltest"
	"github.com/taskflow/taskflow/task"
)

// echoID is a service's handler answering {"task": <its id>}.
func echoID(_ context.Context, tk *extsvc.Task) (json.RawMessage, error) {
	return json.RawMessage(fmt.Sprintf(`{"task":%q}`, tk.ID)), nil
}

// rawNotes are the bodies of a session's notification stream, oldest
// first, as written.
func rawNotes(t *testing.T, b *externaltest.Bundle, session string) []string {
	t.Helper()
	xs, err := b.Redis.XRange(context.Background(), b.Notifier.StreamPrefix()+session, "-", "+").Result()
	require.NoError(t, err)
	out := make([]string, 0, len(xs))
	for _, x := range xs {
		s, _ := x.Values["n"].(string)
		out = append(out, s)
	}
	return out
}

// TestSettleAppliesEachCompletionInOneCall: once a completion of a type
// has been applied (the first of a type goes the single or batch path,
// which teach the consumer the type), the next completions of it are
// applied by settle.lua, one call per read, with every effect of the
// other paths: each task COMPLETED with its result, its result cached,
// its notification written once and byte for byte as
// notify.Notification's own encoding, its marker done, its in-flight
// place and handoff entry gone, its entry acknowledged.
func TestSettleAppliesEachCompletionInOneCall(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := externaltest.Setup(t, externaltest.Options{SkipArchive: true, Handlers: map[string]extsvc.HandlerFunc{"settle.run": echoID}})
	b.Enqueue(t, "settle.run", "s-first", `{}`, time.Minute)
	b.WaitNotes(t, "s-first", 1)
	require.Zero(t, outcome.Settled(b.Consumer), "the first completion of a type is not settled")

	// the places freed are announced, for the dispatches waiting for one
	freed := b.Redis.Subscribe(ctx, dispatch.FreedChannel(b.Namespace))
	defer freed.Close()
	_, err := freed.Receive(ctx) // subscribed
	require.NoError(t, err)
	set := dispatch.InFlightSet(b.Namespace, "settle.run")

	const n, sessions = 30, 3
	ids := make([]string, n)
	for i := range ids {
		ids[i] = b.Enqueue(t, "settle.run", fmt.Sprintf("s%d", i%sessions), fmt.Sprintf(`{"i":%d}`, i), time.Minute).ID
	}
	for i, id := range ids {
		got := b.WaitState(t, id, task.StateCompleted)
		require.JSONEq(t, fmt.Sprintf(`{"task":%q}`, id), string(got.Result), "task %d", i)
	}
	for s := range sessions {
		b.WaitNotes(t, fmt.Sprintf("s%d", s), n/sessions)
	}
	b.Drained(t, b.Streams.Completed())
	require.EqualValues(t, n, outcome.Settled(b.Consumer), "every later completion settled")
	_, freedN := freedAnnounced(t, freed, set, n)
	require.Equal(t, n, freedN, "each place freed announced once")

	bodies := map[string]string{} // task id → its notification as written
	for s := range sessions {
		raw := rawNotes(t, b, fmt.Sprintf("s%d", s))
		require.Len(t, raw, n/sessions, "session s%d: one notification per task", s)
		for _, body := range raw {
			var nt notify.Notification
			require.NoError(t, json.Unmarshal([]byte(body), &nt))
			again, err := nt.MarshalJSON()
			require.NoError(t, err)
			require.Equal(t, string(again), body, "written as notify.Notification encodes it")
			bodies[nt.TaskID] = body
		}
	}
	for i, id := range ids {
		tok := b.LastToken(t, id)
		var nt notify.Notification
		require.NoError(t, json.Unmarshal([]byte(bodies[id]), &nt), "task %d notified", i)
		require.Equal(t, notify.StableID(notify.KindCompleted, id, tok), nt.NotificationID)
		require.Equal(t, notify.KindCompleted, nt.Type)
		require.Equal(t, "settle.run", nt.TaskType)
		require.Equal(t, "Your settle.run task is ready!", nt.Message)
		require.Equal(t, "retrieve_result", nt.Action)
		require.Equal(t, "normal", nt.Priority)
		require.WithinDuration(t, time.Now(), nt.Timestamp, time.Minute)

		cached, err := b.Redis.Get(ctx, b.Results.Cache(id)).Result()
		require.NoError(t, err, "task %d: its result cached", i)
		var c struct {
			Result   json.RawMessage `json:"result"`
			CachedAt time.Time       `json:"cached_at"`
		}
		require.NoError(t, json.Unmarshal([]byte(cached), &c))
		require.JSONEq(t, fmt.Sprintf(`{"task":%q}`, id), string(c.Result))
		require.WithinDuration(t, time.Now(), c.CachedAt, time.Minute)
		ttl, err := b.Redis.TTL(ctx, b.Results.Cache(id)).Result()
		require.NoError(t, err)
		require.Positive(t, ttl, "the cache expires")

		require.Equal(t, "1", marker(t, b, id), "task %d: its outcome is marked done", i)
	}
	inflight, err := dispatch.InFlight(ctx, b.Redis, b.Namespace, "settle.run", time.Now())
	require.NoError(t, err)
	require.Zero(t, inflight, "every place freed")
	handed, err := b.Redis.ZCard(ctx, b.Store.CompletionKeys()[9]).Result()
	require.NoError(t, err)
	require.Zero(t, handed, "no handoff entry left for the watcher")
	active, err := b.Redis.ZCard(ctx, b.Store.CompletionKeys()[0]).Result()
	require.NoError(t, err)
	require.Zero(t, active, "no lease left")
}

// TestSettleLeavesWhatItCannotWrite: a completion whose notification
// settle.lua would not write as the other paths do is left to them, whole:
// a type whose notification text takes the task's params, a session whose
// id JSON escapes. Those tasks are completed and notified as before; the
// only one settled is the plain one.
func TestSettleLeavesWhatItCannotWrite(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := externaltest.Setup(t, externaltest.Options{SkipArchive: true, NoOrchestrator: true,
		Handlers: map[string]extsvc.HandlerFunc{"settle.run": echoID, "settle.tmpl": echoID}})
	spec, err := json.Marshal(protocol.TypeSpec{Service: "test-service", Notify: "Report {name} is ready"})
	require.NoError(t, err)
	require.NoError(t, b.Redis.HSet(ctx, b.Streams.TaskTypes(), "settle.tmpl", spec).Err())
	reg, err := tasktypes.New(tasktypes.Config{External: []string{"settle.run", "settle.tmpl"}, Redis: b.Redis, Keys: b.Streams})
	require.NoError(t, err)
	c := b.StartConsumer(t, outcome.Config{Types: reg})

	one := func(typ, session, params string) notify.Notification {
		t.Helper()
		tk := b.Enqueue(t, typ, session, params, time.Minute)
		b.WaitState(t, tk.ID, task.StateCompleted)
		ns := b.WaitNotes(t, session, 1)
		require.Len(t, ns, 1)
		require.Equal(t, tk.ID, ns[0].TaskID)
		return ns[0]
	}
	one("settle.run", "s-learn", `{}`)
	one("settle.tmpl", "s-learn-tmpl", `{"name":"first"}`)
	require.Zero(t, outcome.Settled(c))

	require.Equal(t, "Report q4 is ready", one("settle.tmpl", "s-tmpl", `{"name":"q4"}`).Message,
		"a message of the params: the other paths")
	require.Equal(t, "Your settle.run task is ready!", one("settle.run", `s<&>1`, `{}`).Message,
		"a session id that JSON escapes: the other paths")
	require.Zero(t, outcome.Settled(c))

	require.Equal(t, "Your settle.run task is ready!", one("settle.run", "s-plain", `{}`).Message)
	require.EqualValues(t, 1, outcome.Settled(c), "the plain one settled")
	b.Drained(t, b.Streams.Completed())
}

// TestSettleKeepsTheFirstOutcome: the rules of the other paths hold for
// settled entries. A consumer (agent-slow) has read the first outcome of
// each of n attempts and not applied them yet; a duplicate of each is
// published after them. The live consumer reads the duplicates: settle.lua
// leaves them alone, since an earlier entry another consumer holds may be
// the same attempt's outcome, and they wait for it. The slow consumer then
// settles its own entries (each first outcome applied once, the earlier
// entries of its own not in the way), and the live one counts every
// duplicate as stale. Each task is notified once, with the first result.
func TestSettleKeepsTheFirstOutcome(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	release := make(chan struct{})
	hold := func(ctx context.Context, tk *extsvc.Task) (json.RawMessage, error) {
		<-release
		return nil, extsvc.Fail("GONE", "the test publishes the outcomes", true)
	}
	stale, observe := staleCounter()
	b := externaltest.Setup(t, externaltest.Options{NoOrchestrator: true, SkipArchive: true,
		Handlers: map[string]extsvc.HandlerFunc{"settle.hold": hold}})
	defer close(release)
	consumer := func(name string, claimIdle time.Duration) *outcome.Consumer {
		c, err := outcome.New(b.Store, b.Notifier, nil, outcome.Config{Consumer: name, Block: 50 * time.Millisecond,
			ClaimIdle: claimIdle, Observe: observe})
		require.NoError(t, err)
		outcome.Learn(c, "settle.hold") // as a first completion of the type would
		return c
	}
	live, slow := consumer("agent-live", 20*time.Second), consumer("agent-slow", time.Second)

	const n = 12
	ids := make([]string, n)
	toks := make([]string, n)
	for i := range ids {
		ids[i] = b.Enqueue(t, "settle.hold", fmt.Sprintf("s%d", i), `{}`, time.Minute).ID
	}
	for i, id := range ids {
		require.Eventually(t, func() bool {
			tok, err := dispatch.LastToken(ctx, b.Store, id)
			toks[i] = tok
			return err == nil && tok != ""
		}, 10*time.Second, 5*time.Millisecond)
	}
	publish := func(i, n int) {
		b.Publish(t, b.Streams.Completed(), protocol.TypeCompleted, protocol.CompletedData{TaskID: ids[i], Status: "success",
			Result: json.RawMessage(fmt.Sprintf(`{"n":%d}`, n)), CompletedBy: "test", Token: toks[i]})
	}
	require.NoError(t, protocol.EnsureGroup(ctx, b.Redis, b.Streams.Completed(), protocol.AgentGroup, "0"))
	for i := range ids {
		publish(i, 1)
	}
	// agent-slow reads the first outcomes (its loop, started later, claims
	// them back from itself once they are a ClaimIdle old)
	read, err := b.Redis.XReadGroup(ctx, &redis.XReadGroupArgs{Group: protocol.AgentGroup, Consumer: "agent-slow",
		Streams: []string{b.Streams.Completed(), ">"}, Count: 1000, Block: -1}).Result()
	require.NoError(t, err)
	require.Len(t, read[0].Messages, n)
	time.Sleep(1100 * time.Millisecond)
	for i := range ids {
		publish(i, 2)
	}
	b.Run(t, "live", live.Run)
	require.Eventually(t, func() bool {
		_, pending, err := protocol.Lag(ctx, b.Redis, b.Streams.Completed(), protocol.AgentGroup)
		return err == nil && pending == 2*n
	}, 5*time.Second, 5*time.Millisecond, "the live consumer holds the duplicates")
	for _, id := range ids {
		got, err := b.Store.Get(ctx, id)
		require.NoError(t, err)
		require.Equal(t, task.StateActive, got.State, "no duplicate applied before the earlier entries")
	}
	b.Run(t, "slow", slow.Run)
	for i, id := range ids {
		got := b.WaitState(t, id, task.StateCompleted)
		require.JSONEq(t, `{"n":1}`, string(got.Result), "task %d: the first outcome wins", i)
	}
	b.Drained(t, b.Streams.Completed())
	for i, id := range ids {
		ns := b.WaitNotes(t, fmt.Sprintf("s%d", i), 1)
		require.Len(t, ns, 1, "task %d notified once", i)
		require.Equal(t, "1", marker(t, b, id))
	}
	require.EqualValues(t, n, stale.Load(), "every duplicate counted as stale")
	require.EqualValues(t, n, outcome.Settled(slow), "every first outcome settled")
	require.Zero(t, outcome.Settled(live))
	inflight, err := dispatch.InFlight(ctx, b.Redis, b.Namespace, "settle.hold", time.Now())
	require.NoError(t, err)
	require.Zero(t, inflight, "every place freed")
}

// TestSettleLeavesAnOutcomeClaimedBefore: a consumer of the batch path
// killed after its claims leaves each attempt's marker naming its entry,
// the tasks ACTIVE. The consumer that takes the entries over knows the
// type, yet settle.lua writes nothing for them (the marker is there): the
// batch path finishes each as its own redelivery ("mine"), once.
func TestSettleLeavesAnOutcomeClaimedBefore(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const n = 10
	b := externaltest.Setup(t, externaltest.Options{NoOrchestrator: true, SkipArchive: true,
		Handlers: map[string]extsvc.HandlerFunc{"settle.run": echoID}})
	ids := outcomesPublished(t, b, "settle.run", n)
	dying, err := outcome.New(b.Store, b.Notifier, nil, outcome.Config{Consumer: "agent-dying", Block: 50 * time.Millisecond})
	require.NoError(t, err)
	crashed := make(chan struct{})
	var seen int
	outcome.CrashAfterClaim(dying, func(protocol.Message) bool {
		if seen++; seen == 1 { // the batch's claims are all made by then
			close(crashed)
			return true
		}
		return false
	})
	b.Run(t, "dying", dying.Run)
	<-crashed
	for _, id := range ids {
		require.NotEqual(t, "1", marker(t, b, id))
		require.NotEmpty(t, marker(t, b, id), "claimed by the dying consumer")
	}

	live, err := outcome.New(b.Store, b.Notifier, nil, outcome.Config{Consumer: "agent-live", Block: 50 * time.Millisecond,
		ClaimIdle: 200 * time.Millisecond})
	require.NoError(t, err)
	outcome.Learn(live, "settle.run")
	b.Run(t, "live", live.Run)
	for i, id := range ids {
		got := b.WaitState(t, id, task.StateCompleted)
		require.JSONEq(t, fmt.Sprintf(`{"task":%q}`, id), string(got.Result))
		ns := b.WaitNotes(t, fmt.Sprintf("s%d", i), 1)
		require.Len(t, ns, 1)
	}
	b.Drained(t, b.Streams.Completed())
	for i, id := range ids {
		ns, err := b.Notifier.List(ctx, fmt.Sprintf("s%d", i), "", 10)
		require.NoError(t, err)
		require.Len(t, ns, 1, "task %d notified once", i)
		require.Equal(t, "1", marker(t, b, id))
	}
	require.Zero(t, outcome.Settled(live), "claimed before: not settled")
}
