package outcome

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"time"

	"github.com/taskflow/taskflow/internal/engine/redisconn"
	"github.com/taskflow/taskflow/internal/external/dispatch"
	"github.com/taskflow/taskflow/internal/external/notify"
	"github.com/taskflow/taskflow/internal/external/protocol"
	"github.com/taskflow/taskflow/internal/platform/tracing"
	"github.com/taskflow/taskflow/task"
)

// Settling a batch of completions in one call. In a deployment of one
// partition without archive, with notifications, the first outcomes of
// attempts whose task type is known here go through settle.lua: the look
// at the entries other consumers hold, the marker, the completion, the
// place freed, the cache, the notification, the marker done and the XACK,
// atomically, in one round trip (where the batch path of batch.go takes
// three: claim_batch.lua, store.CompleteNotices, apply_batch.lua). The
// marker goes from absent to done at once, so there is no state between
// the steps for a crash to leave: an entry is settled whole or not at all,
// and one not settled (answered "alone") is applied by the batch path and
// the single path as before, from the start.
//
// A type is known once a completion of it was applied by those paths (the
// first of each type in a process), and only while its notification's
// text does not depend on a task's params (the registry's Notify without
// placeholders: settle.lua writes one message per type). The script
// checks the rest per entry (see its header).

// settledTypes is the set of task types settle.lua may apply.
type settledTypes struct {
	mu    sync.Mutex
	names []string
	known map[string]bool
}

// learn records that a completion of typ was applied by the other paths.
func (s *settledTypes) learn(typ string) {
	if !plainJSON(typ) {
		return // its name would need escaping in the notification
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.known[typ] {
		return
	}
	if s.known == nil {
		s.known = map[string]bool{}
	}
	s.known[typ] = true
	s.names = append(s.names, typ)
}

func (s *settledTypes) list() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.names
}

// plainJSON reports whether s is written in JSON as it is (no escape:
// printable ASCII without space, quote, backslash or the characters
// encoding/json escapes for HTML), within an identifier's 128 bytes:
// settle.lua's plain.
func plainJSON(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

// canSettle reports whether this consumer settles batches (settle.lua).
func (o *Consumer) canSettle() bool {
	return o.st.CanDispatch() && o.arc == nil && o.note != nil && o.crashAfterClaim == nil && o.crashAfterApply == nil &&
		!tracing.Active() // (the apply spans are the single path's)
}

// settle applies what it can of items (task.completed entries, each the
// first event of its task in the read, one stream's or several's) with
// settle.lua, one call per stream, and returns the entries it finished
// (applied and acknowledged) and the items left to the other paths.
func (o *Consumer) settle(ctx context.Context, items []batchItem) (done map[string]bool, rest []batchItem) {
	done = map[string]bool{}
	names := o.settled.list()
	if len(names) == 0 {
		return done, items
	}
	type kind struct{ name, msg, set string }
	kinds := make([]kind, 0, len(names))
	for _, name := range names {
		if o.cfg.Types != nil {
			if t, ok := o.cfg.Types.Lookup(ctx, name); ok && strings.Contains(t.Notify, "{") {
				continue // its message depends on the task's params
			}
		}
		msg, err := json.Marshal(o.cfg.Types.ReadyMessage(ctx, name, nil))
		if err != nil {
			continue
		}
		set := dispatch.InFlightSet(o.ns, name)
		kinds = append(kinds, kind{name: name, msg: string(msg), set: set})
	}
	if len(kinds) == 0 {
		return done, items
	}
	plain := make([]batchItem, 0, len(items))
	for _, it := range items {
		if it.d.Token == "" || !plainJSON(it.d.TaskID) || !plainJSON(it.d.Token) {
			rest = append(rest, it) // the recorded token, or escaping: the other paths
			continue
		}
		plain = append(plain, it)
	}
	streams, byStream := perStream(plain)
	now := o.cfg.Now()
	stamp := protocol.FormatTime(now)
	ckeys := o.st.CompletionKeys()
	for _, stream := range streams {
		its := byStream[stream]
		last := lastEntry(its)
		nkeys := 1 + len(ckeys) + 3*len(its) + len(kinds)
		cmd := redisconn.EvalHead(settleScript, nkeys, nkeys+17+5*len(its)+2*len(kinds))
		cmd = append(cmd, stream)
		for _, k := range ckeys {
			cmd = append(cmd, k)
		}
		for _, it := range its {
			cmd = append(cmd, o.st.TaskKey(it.d.TaskID), o.k.applied(it.d.TaskID, it.d.Token), o.rk.Cache(it.d.TaskID))
		}
		for _, k := range kinds {
			cmd = append(cmd, k.set)
		}
		cmd = append(cmd, protocol.AgentGroup, o.cfg.Consumer, int64(markerTTL/time.Second), last, o.st.NowMS(),
			o.st.EventStreamMaxLen(), int64(o.cfg.ResultTTL/time.Second), stamp, len(its), len(kinds))
		cmd = append(cmd, o.note.WriteArgs()...)
		cmd = append(cmd, o.note.StreamPrefix(), dispatch.FreedChannel(o.ns))
		for _, it := range its {
			result := it.d.Result
			if len(result) == 0 || string(result) == "null" {
				result = []byte(`{}`)
			}
			cmd = append(cmd, it.m.ID, it.d.TaskID, it.d.Token, string(result),
				notify.StableID(notify.KindCompleted, it.d.TaskID, it.d.Token))
		}
		for _, k := range kinds {
			cmd = append(cmd, k.name, k.msg)
		}
		res, err := redisconn.EvalStrings(ctx, o.rdb, settleScript, cmd)
		if err != nil || len(res) != len(its) {
			if err != nil {
				o.cfg.Logger.Warn("settle failed; the completions go the batch path", "stream", stream, "entries", len(its), "err", err)
			}
			rest = append(rest, its...) // nothing of the call was written
			continue
		}
		for i, r := range res {
			typ, ok := strings.CutPrefix(r, "ok ")
			if !ok {
				rest = append(rest, its[i])
				continue
			}
			it := its[i]
			o.cfg.Logger.Info("Task completed", "task_id", it.d.TaskID, "duration", it.d.DurationMS, "service", it.d.CompletedBy)
			o.observe("completed", &task.Task{ID: it.d.TaskID, Type: typ, State: task.StateCompleted}, time.Duration(it.d.DurationMS)*time.Millisecond)
			done[it.m.ID+" "+it.m.Stream] = true
			o.nsettled.Add(1)
		}
	}
	return done, rest
}
