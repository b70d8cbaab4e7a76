package outcome

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/taskflow/taskflow/internal/engine/redisconn"
	"github.com/taskflow/taskflow/internal/engine/store"
	"github.com/taskflow/taskflow/internal/external/dispatch"
	"github.com/taskflow/taskflow/internal/external/notify"
	"github.com/taskflow/taskflow/internal/external/protocol"
	"github.com/taskflow/taskflow/task"
)

// Applying a batch of completions together. Most of what the consumer
// reads is task.completed, one per task, each applied now for the first
// time: for those the steps of once and completed run for the whole batch
// at a time, each step one round trip, in the same order as for one
// outcome:
//
//	claim_batch.lua        the attempts' markers (claim.lua's verdicts, one
//	                       look at the entries other consumers hold)
//	store.CompleteNotices  the transitions, answering what the cache and
//	                       the notification take (one partition, no
//	                       archive); else store.CompleteBatch (one call
//	                       per partition) then store.GetNotices (GetMany
//	                       with an archive)
//	archive                per task (PostgreSQL), when configured
//	apply_batch.lua        per stream, atomically: the in-flight places
//	                       freed, the results cached, the notifications
//	                       written (notify.Prepare), the markers done and
//	                       one XACK of the entries
//
// So an entry of the batch stops where a crash stops it exactly as an
// entry applied alone would: its marker says how far its outcome got, and
// a redelivery finishes it (claim answers "mine"). Whatever leaves the
// common case — another verdict than new or mine, a transition that does
// not apply, a failed step — leaves the batch and is applied alone by the
// general path (handle), which redoes the idempotent steps already done
// and takes every decision the single path takes (a duplicate, a stale
// outcome, a redelivery of the entry that finished the task). An entry
// whose task is in a partition that is down fails its transition
// (store.ErrUnapplied) and goes the same way: it stays pending, and the
// rest of the batch completes.

// batchItem is one completion of the batch path.
type batchItem struct {
	m  protocol.Message
	d  *protocol.CompletedData
	oc outcome
	t  *task.Task
}

// completeBatch applies the completions ms (one per task, each the first
// event of its task in the read) and returns the entries it finished
// (applied and acknowledged); the others are left to handle. crashed
// reports a simulated crash (tests).
func (o *Consumer) completeBatch(ctx context.Context, items []batchItem) (done map[string]bool, crashed bool) {
	ctx = context.WithoutCancel(ctx)
	done = map[string]bool{}

	// tokens, then the claims: one claim_batch.lua per stream
	tokened := make([]batchItem, 0, len(items))
	for _, it := range items {
		tok, err := o.token(ctx, it.d.TaskID, it.d.Token)
		if err != nil || tok == "" {
			continue // the general path says why
		}
		it.oc = outcome{tok: tok, marker: o.k.applied(it.d.TaskID, tok), entry: entryName(it.m)}
		tokened = append(tokened, it)
	}
	streams, byStream := perStream(tokened)
	items = items[:0:0]
	for _, stream := range streams {
		its := byStream[stream]
		last := lastEntry(its)
		cmd := redisconn.EvalHead(claimBatchScript, 1+len(its), 1+len(its)+4+2*len(its))
		cmd = append(cmd, stream)
		for _, it := range its {
			cmd = append(cmd, it.oc.marker)
		}
		cmd = append(cmd, protocol.AgentGroup, o.cfg.Consumer, int64(markerTTL/time.Second), last)
		for _, it := range its {
			cmd = append(cmd, it.m.ID, it.oc.entry)
		}
		res, err := redisconn.EvalStrings(ctx, o.rdb, claimBatchScript, cmd)
		if err != nil || len(res) != len(its) {
			continue // alone, each
		}
		for i, r := range res {
			switch r {
			case claimNew:
			case claimMine:
				its[i].oc.redelivered = true
			default:
				continue // a duplicate, or earlier entries to look at: alone
			}
			items = append(items, its[i])
		}
	}
	for _, it := range items {
		if o.crashAfterClaim != nil && o.crashAfterClaim(it.m) {
			return done, true
		}
	}
	if len(items) == 0 {
		return done, false
	}

	// the transitions
	cs := make([]store.Completion, len(items))
	for i, it := range items {
		result := it.d.Result
		if len(result) == 0 || string(result) == "null" {
			result = []byte(`{}`)
		}
		cs[i] = store.Completion{ID: it.d.TaskID, Token: it.oc.tok, Result: result}
	}
	// one partition and no archive: the transitions answer what the
	// cache and the notifications take (store.CompleteNotices); else a
	// read follows them
	var errs []error
	var ts []*task.Task
	var err error
	fused := o.st.CanDispatch() && o.arc == nil
	if fused {
		errs, ts, err = o.st.CompleteNotices(ctx, cs)
	} else {
		errs, err = o.st.CompleteBatch(ctx, cs)
	}
	if err != nil {
		return done, false
	}
	for _, it := range items {
		if o.crashAfterApply != nil && o.crashAfterApply(it.m) {
			return done, true
		}
	}
	applied := make([]batchItem, 0, len(items))
	for i, it := range items {
		if errs[i] == nil { // else stale, a redelivery, a partition down: alone
			if fused {
				it.t = ts[i]
			}
			applied = append(applied, it)
		}
	}
	if len(applied) == 0 {
		return done, false
	}
	if !fused {
		ids := make([]string, len(applied))
		for i, it := range applied {
			ids[i] = it.d.TaskID
		}
		get := o.st.GetNotices // what the cache and the notification take
		if o.arc != nil {
			get = o.st.GetMany // the archive keeps the whole task
		}
		ts, err := get(ctx, ids)
		if err != nil {
			return done, false
		}
		byID := make(map[string]*task.Task, len(ts))
		for _, t := range ts {
			byID[t.ID] = t
		}
		for i := range applied {
			applied[i].t = byID[applied[i].d.TaskID]
		}
	}
	items = make([]batchItem, 0, len(applied))
	for _, it := range applied {
		if it.t == nil {
			continue // gone meanwhile: alone
		}
		if err := o.archive(ctx, it.t); err != nil {
			continue
		}
		items = append(items, it)
	}

	// the effects and the end, per stream in one call (apply_batch.lua):
	// places, caches, notifications, markers done, one XACK
	streams, byStream = perStream(items)
	for _, stream := range streams {
		its := byStream[stream]
		if !o.applyEffects(ctx, stream, its) {
			continue
		}
		for _, it := range its {
			o.cfg.Logger.Info("Task completed", "task_id", it.t.ID, "duration", it.d.DurationMS, "service", it.d.CompletedBy)
			o.settled.learn(it.t.Type)
			o.observe("completed", it.t, time.Duration(it.d.DurationMS)*time.Millisecond)
			done[it.m.ID+" "+it.m.Stream] = true
		}
	}
	return done, false
}

// applyEffects writes the effects of the applied completions its (whose
// entries are all in stream) and ends them, in one apply_batch.lua call.
// It reports whether it did; if not, they are applied again alone.
func (o *Consumer) applyEffects(ctx context.Context, stream string, its []batchItem) bool {
	now := o.cfg.Now()
	var notes notify.Prepared
	if o.note != nil {
		ds := make([]notify.Delivery, 0, len(its))
		once := make([]bool, 0, len(its))
		for _, it := range its {
			ds = append(ds, notify.Delivery{SessionID: it.t.SessionID, Notification: notify.Notification{
				NotificationID: notify.StableID(notify.KindCompleted, it.t.ID, it.oc.tok), Type: notify.KindCompleted,
				TaskID: it.t.ID, TaskType: it.t.Type, Message: o.cfg.Types.ReadyMessage(ctx, it.t.Type, it.t.Params),
				Action: "retrieve_result", Priority: string(it.t.Priority)}})
			// a first claim's notification is written with its marker
			// done, in one call: no write-once marker needed
			once = append(once, it.oc.redelivered)
		}
		notes = o.note.Prepare(ds, once)
		for _, err := range notes.Errs {
			if err != nil && !errors.Is(err, notify.ErrNoSession) {
				return false // cannot encode it: alone, where the error is logged
			}
		}
	}
	// the call: EVALSHA, the keys (the stream, per item its in-flight set,
	// result cache and marker, per notification its stream and marker),
	// then the arguments; the values that repeat from one item to the next
	// (a type's in-flight set, a session's stream) are boxed once per run
	nkeys := 1 + 3*len(its) + 2*len(notes.At)
	cmd := redisconn.EvalHead(applyBatchScript, nkeys, nkeys+9+3*len(its)+3*len(notes.At)+1)
	cmd = append(cmd, stream)
	members := make([]string, len(its))
	var set redisconn.Boxed[string]
	for i, it := range its {
		s, member := dispatch.Place(o.ns, it.t.Type, it.t.ID, it.oc.tok)
		members[i] = member
		cmd = append(cmd, set.Of(s), o.rk.Cache(it.t.ID), it.oc.marker)
	}
	var nstream redisconn.Boxed[string]
	for j := range notes.At {
		cmd = append(cmd, nstream.Of(notes.Streams[j]), notes.Markers[j])
	}
	cmd = append(cmd, protocol.AgentGroup, int64(markerTTL/time.Second), int64(o.cfg.ResultTTL/time.Second), len(its))
	if o.note != nil {
		cmd = append(cmd, o.note.WriteArgs()...)
	} else {
		cmd = append(cmd, 1, 1, 1, "", "")
	}
	stamp := protocol.FormatTime(now)
	for i, it := range its {
		cmd = append(cmd, it.m.ID, members[i], cacheBody(it.t.Result, stamp))
	}
	var session, marked redisconn.Boxed[string]
	for j := range notes.At {
		cmd = append(cmd, notes.Bodies[j], session.Of(notes.Sessions[j]), marked.Of(notes.Marked[j]))
	}
	cmd = append(cmd, dispatch.FreedChannel(o.ns))
	if _, err := redisconn.EvalInt(ctx, o.rdb, applyBatchScript, cmd); err != nil {
		o.cfg.Logger.Warn("outcomes applied but their effects not written; applied again alone", "stream", stream,
			"entries", len(its), "err", fmt.Errorf("outcome: apply_batch: %w", err))
		return false
	}
	return true
}

// perStream groups items by their entries' stream, the streams in the
// order they first come.
func perStream(items []batchItem) (streams []string, by map[string][]batchItem) {
	by = map[string][]batchItem{}
	for _, it := range items {
		if _, ok := by[it.m.Stream]; !ok {
			streams = append(streams, it.m.Stream)
		}
		by[it.m.Stream] = append(by[it.m.Stream], it)
	}
	return streams, by
}

// lastEntry is the greatest entry id of its (not empty).
func lastEntry(its []batchItem) string {
	last := its[0].m.ID
	for _, it := range its[1:] {
		if idBefore(last, it.m.ID) {
			last = it.m.ID
		}
	}
	return last
}

// cacheBody is the result cache's value of a task whose result is result
// (valid JSON: a decoded event's), cached at stamp (resultview reads it).
func cacheBody(result json.RawMessage, stamp string) string {
	b := make([]byte, 0, len(`{"result":,"cached_at":""}`)+len(result)+len(stamp))
	b = append(b, `{"result":`...)
	b = append(b, result...)
	b = append(b, `,"cached_at":"`...)
	b = append(b, stamp...)
	b = append(b, `"}`...)
	return string(b)
}

// idBefore reports whether stream id a ("ms-seq") comes before b.
func idBefore(a, b string) bool {
	am, as := splitID(a)
	bm, bs := splitID(b)
	return am < bm || (am == bm && as < bs)
}

func splitID(id string) (ms, seq uint64) {
	m, s, _ := strings.Cut(id, "-")
	ms, _ = strconv.ParseUint(m, 10, 64)
	seq, _ = strconv.ParseUint(s, 10, 64)
	return ms, seq
}
