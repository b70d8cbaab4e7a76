package store

import (
	"cmp"
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/taskflow/taskflow/task"
)

// Task hash fields. Times are unix milliseconds; error_history holds one
// JSON record per line; state_history holds compact "ms,FROM,TO,cause"
// entries separated by ";" (cheap to append inside a script; see
// decodeStateHistory for the encoding).
const (
	fID         = "task_id"
	fType       = "task_type"
	fState      = "state"
	fContent    = "content"
	fParams     = "params"
	fSession    = "session_id"
	fPriority   = "priority"
	fTimeout    = "timeout_ms"
	fRetryCount = "retry_count"
	fMaxRetries = "max_retries"
	fLastError  = "last_error"
	fErrorType  = "error_type"
	fRetryAfter = "retry_after"
	fCreated    = "created_at"
	fUpdated    = "updated_at"
	fStarted    = "started_at"
	fCompleted  = "completed_at"
	fResult     = "result"
	fWorker     = "worker"
	fLease      = "lease"
	fErrHist    = "error_history"
	fStateHist  = "state_history"
	// fHistFetch and fHistDone hold the history entries of the fetch
	// (PENDING → ACTIVE) and of the completion, which write them there
	// instead of reading and rewriting state_history (the two transitions
	// of every task; see taken in lib.lua). The history is
	// state_history;ha;hc. started_at and completed_at of a COMPLETED task
	// are those entries' times.
	fHistFetch = "ha"
	fHistDone  = "hc"
	fNotBefore = "not_before"
	fCancelReq = "cancel_requested"
	fHandoff   = "handoff"
	// fEnqueueCall is the id of the enqueue call that created the task: a
	// resend of that call (the client library retrying after a read
	// timeout, while Redis stalled) finds its own tasks and succeeds
	// instead of reporting them as duplicates.
	fEnqueueCall = "enq"
	// fTraceparent is the W3C traceparent of the task's submit (absent
	// when the submit was not traced), written by enqueue and returned by
	// fetch.
	fTraceparent = "tp"
	// fQueue is the task's named queue (absent for the default queue;
	// not "queue", which says primary or retry list).
	fQueue = "qname"
	// fLimitKey is the key per-key limits count the task against.
	fLimitKey = "lk"
	// fHeld lists the scopes whose concurrency slots the current attempt
	// holds ("\n"-separated), given back when the attempt ends.
	fHeld = "lh"
	// fParked is the scope whose parking list holds the task.
	fParked = "pk"
)

// errorRecord is an error_history line as stored.
type errorRecord struct {
	AtMS      int64  `json:"at_ms"`
	Attempt   int    `json:"attempt"`
	ErrorType string `json:"error_type"`
	Message   string `json:"message"`
	Worker    string `json:"worker,omitempty"`
	// Details: an object, absent when empty
	Details json.RawMessage `json:"details,omitempty"`
}

func encodeErrorRecord(r task.ErrorRecord) string {
	b, _ := json.Marshal(errorRecord{AtMS: ms(r.At), Attempt: r.Attempt, ErrorType: r.ErrorType, Message: r.Message, Worker: r.Worker,
		Details: r.Details})
	return string(b)
}

func msTime(v string) time.Time {
	n, _ := strconv.ParseInt(v, 10, 64)
	return time.UnixMilli(n).UTC()
}

func optTime(v string) *time.Time {
	if v == "" {
		return nil
	}
	t := msTime(v)
	return &t
}

func atoi(v string) int { n, _ := strconv.Atoi(v); return n }

// atoiOr is v as an int, or def when it is not one.
func atoiOr(v string, def int) int {
	n, err := strconv.Atoi(v)
	if err != nil {
		return def
	}
	return n
}

// decodeTask builds a Task from its hash; ok is false for an empty hash.
func decodeTask(h map[string]string) (*task.Task, bool) {
	if len(h) == 0 || h[fState] == "" {
		return nil, false
	}
	t := &task.Task{
		ID:          h[fID],
		Type:        h[fType],
		State:       task.State(h[fState]),
		Content:     h[fContent],
		SessionID:   h[fSession],
		Priority:    task.Priority(h[fPriority]),
		Timeout:     time.Duration(atoi(h[fTimeout])) * time.Millisecond,
		RetryCount:  atoi(h[fRetryCount]),
		MaxRetries:  atoi(h[fMaxRetries]),
		LastError:   h[fLastError],
		ErrorType:   h[fErrorType],
		RetryAfter:  optTime(h[fRetryAfter]),
		CreatedAt:   msTime(h[fCreated]),
		UpdatedAt:   msTime(h[fUpdated]),
		StartedAt:   optTime(h[fStarted]),
		CompletedAt: optTime(h[fCompleted]),
		Worker:      h[fWorker],
		Lease:       h[fLease],
		Traceparent: h[fTraceparent],
		Queue:       cmp.Or(h[fQueue], DefaultQueue),
		LimitKey:    h[fLimitKey],
	}
	t.CancelRequested = h[fCancelReq] == "1"
	t.HandedOff = t.Lease != "" && h[fHandoff] == t.Lease
	if p := h[fParams]; p != "" {
		t.Params = json.RawMessage(p)
	}
	if r := h[fResult]; r != "" {
		t.Result = json.RawMessage(r)
	}
	t.ErrorHistory = decodeErrorHistory(h[fErrHist])
	sh := h[fStateHist]
	for _, tail := range [...]string{h[fHistFetch], h[fHistDone]} {
		if tail != "" {
			if sh != "" {
				sh += ";"
			}
			sh += tail
		}
	}
	t.StateHistory = decodeStateHistory(sh)
	// started_at: the last time the task went ACTIVE (fetch writes no
	// started_at); completed_at of a COMPLETED task: its completion entry
	for i := len(t.StateHistory) - 1; i >= 0; i-- {
		if c := t.StateHistory[i]; c.To == task.StateActive {
			at := c.At
			t.StartedAt = &at
			break
		}
	}
	if hc := h[fHistDone]; hc != "" && len(t.StateHistory) > 0 {
		at := t.StateHistory[len(t.StateHistory)-1].At
		t.CompletedAt = &at
	}
	return t, true
}

func decodeErrorHistory(s string) []task.ErrorRecord {
	out := []task.ErrorRecord{}
	for _, line := range strings.Split(s, "\n") {
		if line == "" {
			continue
		}
		var r errorRecord
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			out = append(out, task.ErrorRecord{Message: line})
			continue
		}
		out = append(out, task.ErrorRecord{At: time.UnixMilli(r.AtMS).UTC(), Attempt: r.Attempt, ErrorType: r.ErrorType, Message: r.Message, Worker: r.Worker,
			Details: r.Details})
	}
	return out
}

// stateCodes are the one-letter states of the compact history encoding
// (lib.lua's hist); full names, as older entries hold, decode as themselves.
var stateCodes = map[string]task.State{
	"P": task.StatePending, "A": task.StateActive, "C": task.StateCompleted, "F": task.StateFailed,
	"D": task.StateDLQ, "T": task.StateTimeout, "X": task.StateCancelled,
}

func decodeHistState(s string) task.State {
	if st, ok := stateCodes[s]; ok {
		return st
	}
	return task.State(s)
}

// decodeStateHistory reads the history lib.lua's hist writes: entries
// separated by ";", each "ms,FROM,TO[,cause]" where every entry after the
// first gives its time as "+delta" ms since the first. The creation entry
// (no FROM, no cause) reads as cause "created".
func decodeStateHistory(s string) []task.StateChange {
	out := []task.StateChange{}
	var base int64
	for i, e := range strings.Split(s, ";") {
		if e == "" {
			continue
		}
		p := strings.SplitN(e, ",", 4)
		for len(p) < 4 {
			p = append(p, "")
		}
		var ms int64
		if d, ok := strings.CutPrefix(p[0], "+"); ok {
			n, _ := strconv.ParseInt(d, 10, 64)
			ms = base + n
		} else {
			ms, _ = strconv.ParseInt(p[0], 10, 64)
			if i == 0 {
				base = ms
			}
		}
		c := task.StateChange{At: time.UnixMilli(ms).UTC(), From: decodeHistState(p[1]), To: decodeHistState(p[2]), Cause: p[3]}
		if i == 0 && c.From == "" && c.Cause == "" {
			c.Cause = "created"
		}
		out = append(out, c)
	}
	return out
}
