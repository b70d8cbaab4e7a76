package outcome

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/taskflow/taskflow/internal/external/dispatch"
	"github.com/taskflow/taskflow/internal/external/protocol"
	"github.com/taskflow/taskflow/task"
)

// Applying an outcome once. Delivery is at least once: an entry comes
// again after a crash between its transition and its acknowledgement, and
// a service may report one attempt twice (it published, died before
// acknowledging task.create, and ran the task again). The store's
// transitions are guarded by state and token, so a repeated transition
// changes nothing; what needs a guard of ours is the rest, which a
// transition script cannot do: the result cache, the archive (another
// database), the notification. One marker per attempt (keys.applied) is
// that guard, moved by one script per step:
//
//	claim.lua       no marker → this entry's name: the entry holds the
//	                attempt's outcome; a redelivery of it may finish what
//	                a crash left undone, any other entry is a duplicate
//	publish_dlq.lua → "dlq <name>", with task.dlq's XADD (dead-lettered)
//	finish.lua      → "1", with the entry's XACK: every effect is done
//
// So the first outcome of an attempt wins (its entry claims the marker
// first: entries are claimed in stream order, see awaitEarlierOutcome),
// each effect that is not idempotent by itself happens once (task.dlq; the
// notification is by its id), and a process killed between any two steps
// leaves the entry pending with the marker saying where it stopped.

// outcome is what once tells apply about the event being applied.
type outcome struct {
	// tok is the attempt's fencing token (the event's, else the recorded
	// dispatch token).
	tok string
	// redelivered: this very stream entry claimed the outcome in an
	// earlier delivery (a consumer died or failed before finishing it).
	redelivered bool
	// marker and entry are the attempt's applied marker and the entry's
	// name in it.
	marker, entry string
}

// markerTTL is how long an attempt's marker lives: the retention of the
// response streams, beyond which no entry is redelivered.
const markerTTL = 7 * 24 * time.Hour

// The verdicts of claim.lua.
const (
	claimNew   = "new"   // claimed now: apply
	claimMine  = "mine"  // claimed by an earlier delivery of this entry: apply (finish)
	claimOther = "other" // another entry holds the outcome: a duplicate
	claimDone  = "done"  // the outcome is fully applied: a duplicate
	claimWait  = "wait"  // other consumers hold earlier entries: look at them first
)

// once runs apply for the outcome of one attempt (task id + token) that
// the entry m carries, unless another entry holds that outcome or it is
// fully applied (then m is a duplicate: acknowledged and counted as
// stale), then marks it done and acknowledges m in one step.
func (o *Consumer) once(ctx context.Context, m protocol.Message, taskID, eventToken string, apply func(outcome) error) error {
	tok, err := o.token(ctx, taskID, eventToken)
	if err != nil {
		return err
	}
	oc := outcome{tok: tok, marker: o.k.applied(taskID, tok), entry: entryName(m)}
	verdict, earlier, err := o.claim(ctx, m, oc, true)
	if err != nil {
		return err
	}
	if verdict == claimWait {
		// possibly an earlier outcome of this attempt: it goes first
		if err := o.awaitEarlierOutcome(ctx, m, taskID, tok, earlier); err != nil {
			return err
		}
		if verdict, _, err = o.claim(ctx, m, oc, false); err != nil {
			return err
		}
	}
	switch verdict {
	case claimNew, claimMine:
	default:
		// a second outcome of the attempt: ignored and, like every
		// ignored outcome, counted as stale
		o.cfg.Logger.Info("duplicate outcome ignored", "task_id", taskID, "stream", m.Stream, "entry", m.ID)
		t, err := o.st.Get(ctx, taskID)
		if err != nil {
			t = &task.Task{ID: taskID, Type: "unknown"} // gone since (purged): still counted
		}
		o.observe("stale", t, NoDuration)
		return o.ack(ctx, m)
	}
	if o.crashAfterClaim != nil && o.crashAfterClaim(m) {
		return errCrash
	}
	oc.redelivered = verdict == claimMine
	if err := apply(oc); err != nil {
		return err
	}
	return o.finish(ctx, m, oc)
}

// claim runs claim.lua for m: its verdict, and with claimWait the ids of
// the earlier entries of m's stream other consumers hold (lookEarlier:
// look for those; without it the outcome is claimed whatever they are).
func (o *Consumer) claim(ctx context.Context, m protocol.Message, oc outcome, lookEarlier bool) (verdict string, earlier []string, err error) {
	look := "0"
	if lookEarlier {
		look = "1"
	}
	res, err := claimScript.Run(ctx, o.rdb, []string{oc.marker, m.Stream},
		protocol.AgentGroup, o.cfg.Consumer, m.ID, oc.entry, int64(markerTTL/time.Second), look).StringSlice()
	if err == nil && len(res) == 0 {
		err = fmt.Errorf("claim.lua answered nothing")
	}
	if err != nil {
		return "", nil, fmt.Errorf("outcome: claim %s %s: %w", m.Stream, m.ID, err)
	}
	return res[0], res[1:], nil
}

// finish marks the attempt's outcome done and acknowledges m, in one
// script: an acknowledged entry always has its marker, so no redelivery
// and no later duplicate applies the outcome again.
func (o *Consumer) finish(ctx context.Context, m protocol.Message, oc outcome) error {
	err := finishScript.Run(ctx, o.rdb, []string{oc.marker, m.Stream}, protocol.AgentGroup, m.ID, int64(markerTTL/time.Second)).Err()
	if err != nil {
		return fmt.Errorf("outcome: finish %s %s: %w", m.Stream, m.ID, err)
	}
	o.cfg.Logger.Debug("Event acknowledged", "stream", m.Stream, "event_id", m.Event.ID)
	return nil
}

// ack acknowledges m, an entry that needs no marker: an ignored duplicate,
// a timeout or progress report (idempotent effects), a malformed entry.
func (o *Consumer) ack(ctx context.Context, m protocol.Message) error {
	if err := protocol.Ack(ctx, o.rdb, m.Stream, protocol.AgentGroup, m.ID); err != nil {
		return err
	}
	o.cfg.Logger.Debug("Event acknowledged", "stream", m.Stream, "event_id", m.Event.ID)
	return nil
}

// entryName names m in its attempt's marker: the stream (its last part,
// task.completed or task.failed) and the entry id, since entry ids repeat
// across streams.
func entryName(m protocol.Message) string {
	s := m.Stream
	if i := strings.LastIndex(s, ":"); i >= 0 {
		s = s[i+1:]
	}
	return s + " " + m.ID
}

// earlierPending asks for the entries of m's stream up to m that are
// delivered to agent-group and not acknowledged (an inclusive end, m left
// out by othersPending: the embedded Redis of taskflow dev has no
// exclusive ranges).
func (o *Consumer) earlierPending(m protocol.Message) *redis.XPendingExtArgs {
	return &redis.XPendingExtArgs{Stream: m.Stream, Group: protocol.AgentGroup, Start: "-", End: m.ID, Count: 256}
}

// othersPending are the ids of pend held by other consumers (ours are
// applied in stream order already: handleAll), m itself left out.
func (o *Consumer) othersPending(pend []redis.XPendingExt, m protocol.Message) []string {
	var out []string
	for _, p := range pend {
		if p.ID != m.ID && p.Consumer != o.cfg.Consumer {
			out = append(out, p.ID)
		}
	}
	return out
}

// awaitEarlierOutcome waits while another consumer of agent-group holds,
// delivered and not yet acknowledged, an earlier entry of m's stream
// about the same attempt (task id and token): the stream's order decides
// which outcome is first, not which consumer is faster. Entries are
// delivered in stream order, so an earlier one is either pending — seen
// here — or acknowledged, its outcome claimed. others are the earlier
// entries other consumers held at the claim. A consumer that died holding
// one is waited for at most ClaimIdle: then this entry goes on to claim,
// finds the outcome claimed by the earlier entry if the dead consumer got
// that far, and is a duplicate; else it claims the outcome itself, and the
// earlier entry, claimed later, is the duplicate.
func (o *Consumer) awaitEarlierOutcome(ctx context.Context, m protocol.Message, taskID, tok string, others []string) error {
	deadline := time.Now().Add(o.cfg.ClaimIdle)
	for len(others) > 0 {
		cmds := make([]*redis.XMessageSliceCmd, len(others))
		if _, err := o.rdb.Pipelined(ctx, func(pl redis.Pipeliner) error {
			for i, id := range others {
				cmds[i] = pl.XRange(ctx, m.Stream, id, id)
			}
			return nil
		}); err != nil {
			return err
		}
		earlier := false
		for _, c := range cmds {
			for _, x := range c.Val() {
				e, err := protocol.Decode(x.ID, x.Values)
				if err != nil {
					continue
				}
				var d struct {
					TaskID string `json:"task_id"`
					Token  string `json:"token"`
				}
				if json.Unmarshal(e.Data, &d) == nil && d.TaskID == taskID && (d.Token == tok || d.Token == "") {
					earlier = true
				}
			}
		}
		if !earlier || time.Now().After(deadline) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
		pend, err := o.rdb.XPendingExt(ctx, o.earlierPending(m)).Result()
		if err != nil {
			return err
		}
		others = o.othersPending(pend, m)
	}
	return nil
}

// finishedBy reports whether the outcome oc is the one that finished the
// task (COMPLETED or DLQ) in an earlier delivery whose side effects may be
// incomplete: the entry that claimed the attempt's outcome, delivered
// again, carrying the token of the task's last dispatch (the only attempt
// that can finish an external task). Any other outcome about a finished
// task — another attempt's token, another entry, a task that was never
// dispatched — is not, and must change nothing.
func (o *Consumer) finishedBy(ctx context.Context, taskID string, oc outcome) (bool, error) {
	if !oc.redelivered || oc.tok == "" {
		return false, nil
	}
	last, err := dispatch.LastToken(ctx, o.st, taskID)
	if err != nil {
		return false, err
	}
	return last == oc.tok, nil
}

// token is the attempt's fencing token: the event's, else the recorded one.
func (o *Consumer) token(ctx context.Context, id, fromEvent string) (string, error) {
	if fromEvent != "" {
		return fromEvent, nil
	}
	return dispatch.LastToken(ctx, o.st, id)
}
