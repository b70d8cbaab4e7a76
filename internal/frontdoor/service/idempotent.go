package service

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/taskflow/taskflow/internal/engine/store"
	"github.com/taskflow/taskflow/internal/frontdoor/auth"
	"github.com/taskflow/taskflow/internal/platform/tracing"
	"github.com/taskflow/taskflow/task"
)

// MaxIdempotencyKey is the longest Idempotency-Key, in characters.
const MaxIdempotencyKey = 255

// IdempotencyField is the name errors about the key give as their field:
// the HTTP header that carries it.
const IdempotencyField = "Idempotency-Key"

// Idempotency is a request's idempotency key and what identifies the
// request: a repeat with the key and the same fingerprint answers the first
// call again; with another fingerprint it is refused (422
// idempotency_key_reused). Keys belong to the caller (a session, or a
// deployment-wide key by its name) and are kept Config.IdempotencyTTL.
type Idempotency struct {
	// Key is the caller's key: 1..255 printable ASCII characters
	// (ValidIdempotencyKey). Empty: the call is not idempotent.
	Key string
	// Fingerprint identifies the request: the front end's hash of what was
	// asked (the HTTP API hashes the method, path and body).
	Fingerprint string
}

// ValidIdempotencyKey checks an Idempotency-Key: 1 to 255 printable ASCII
// characters (space to tilde).
func ValidIdempotencyKey(k string) error {
	if k == "" || len(k) > MaxIdempotencyKey {
		return &Error{Kind: KindInvalid, Code: "invalid_idempotency_key", Field: IdempotencyField,
			Message: fmt.Sprintf("Idempotency-Key must be 1 to %d printable ASCII characters (got %d)", MaxIdempotencyKey, len(k))}
	}
	for i := 0; i < len(k); i++ {
		if k[i] < 0x20 || k[i] > 0x7e {
			return &Error{Kind: KindInvalid, Code: "invalid_idempotency_key", Field: IdempotencyField,
				Message: fmt.Sprintf("Idempotency-Key must be printable ASCII characters (byte %d is 0x%02x)", i, k[i])}
		}
	}
	return nil
}

// idemScope is whose keys p's are: its session's, or a deployment-wide
// caller's by name.
func idemScope(p auth.Principal) string {
	if p.SessionID != "" {
		return "s:" + p.SessionID
	}
	return "k:" + p.Name
}

// inflight is the idempotency keys this process is answering right now: a
// second request with one of them while the first is in hand is refused
// (409 idempotency_key_in_use). Across processes the store serializes the
// two: the second finds the first's record and is answered it.
type inflight struct {
	mu   sync.Mutex
	keys map[string]struct{}
}

func (f *inflight) enter(scope, key string) (leave func(), err error) {
	k := scope + "\x00" + key
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.keys == nil {
		f.keys = map[string]struct{}{}
	}
	if _, busy := f.keys[k]; busy {
		return nil, &Error{Kind: KindConflict, Code: "idempotency_key_in_use", Field: IdempotencyField,
			Message: "a request with this Idempotency-Key is still being processed; retry once it has been answered"}
	}
	f.keys[k] = struct{}{}
	return func() {
		f.mu.Lock()
		delete(f.keys, k)
		f.mu.Unlock()
	}, nil
}

// idemErr maps the store's refusal of a reused key.
func idemErr(err error) error {
	if errors.Is(err, store.ErrIdempotencyMismatch) {
		return &Error{Kind: KindUnprocessable, Code: "idempotency_key_reused", Field: IdempotencyField, Err: err,
			Message: "this Idempotency-Key was used with another request (another body or endpoint); use a new key for a new request"}
	}
	if errors.Is(err, store.ErrIdempotencyQueues) {
		return &Error{Kind: KindUnprocessable, Code: "idempotency_key_queues", Field: "tasks", Err: err,
			Message: "a batch under one Idempotency-Key must put all its tasks in one queue; send one batch per queue, each with its own key"}
	}
	return storeErr("", err)
}

func (s *Service) idemRecord(p auth.Principal, idem Idempotency, extra string) store.Idempotency {
	return store.Idempotency{Scope: idemScope(p), Key: idem.Key, Fingerprint: idem.Fingerprint, TTL: s.cfg.IdempotencyTTL, Extra: extra}
}

// SubmitOnce is Submit under an idempotency key (idem.Key "" is Submit):
// the task and the key's record are written in one atomic step, so a
// caller that resends the request with the key (after a lost answer, or
// an API process that died mid-call) gets the first answer again
// (replayed true) and never a second task. A request refused before
// anything is written (422, 503) records nothing: it may be sent again
// with the same key.
func (s *Service) SubmitOnce(ctx context.Context, p auth.Principal, in SubmitInput, idem Idempotency) (sub Submitted, replayed bool, err error) {
	if idem.Key == "" {
		sub, err = s.Submit(ctx, p, in)
		return sub, false, err
	}
	if err := requirePrincipal(p); err != nil {
		return Submitted{}, false, err
	}
	if err := ValidIdempotencyKey(idem.Key); err != nil {
		return Submitted{}, false, err
	}
	leave, err := s.idem.enter(idemScope(p), idem.Key)
	if err != nil {
		return Submitted{}, false, err
	}
	defer leave()
	if len(in.DependsOn) > 0 {
		return Submitted{}, false, Unprocessable("depends_on", "depends_on cannot be combined with an Idempotency-Key")
	}
	req, err := s.validate(ctx, in)
	if err != nil {
		return Submitted{}, false, err
	}
	req.SessionID = p.SessionID
	ctx, span := startSubmit(ctx, req.Type, string(req.Priority), 1)
	defer span.End()
	req.Traceparent = tracing.Traceparent(ctx)
	out, err := s.st.EnqueueIdempotent(ctx, []store.EnqueueRequest{req}, s.idemRecord(p, idem, ""))
	if err == nil && len(out.Results) != 1 {
		err = fmt.Errorf("service: idempotency record of %q holds %d tasks, not 1", idem.Key, len(out.Results))
	}
	if err != nil {
		err = idemErr(err)
		endSubmit(span, "", err)
		return Submitted{}, false, err
	}
	endSubmit(span, out.Results[0].Task.ID, nil)
	return submitted(out.Results[0]), out.Replayed, nil
}

// MaxBatch is the most tasks one SubmitBatch call takes.
const MaxBatch = 1000

// BatchStatus is what became of one item of a batch.
type BatchStatus string

// The statuses of a batch item.
const (
	BatchCreated   BatchStatus = "created"
	BatchDuplicate BatchStatus = "duplicate"
	BatchInvalid   BatchStatus = "invalid"
)

// BatchItem is the answer for one item of a batch, at its index.
type BatchItem struct {
	Index  int         `json:"index"`
	Status BatchStatus `json:"status" openapi:"enum=created|duplicate|invalid"`
	TaskID string      `json:"task_id,omitempty"`
	State  task.State  `json:"state,omitempty"`
	// Error says why an invalid item was refused (its field is
	// "tasks[i].<field>").
	Error *ItemError `json:"error,omitempty"`
}

// ItemError is the error of one refused item, as the API's error envelope
// words it.
type ItemError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Field   string `json:"field,omitempty"`
}

// BatchResult is the answer to SubmitBatch: one item per input, in order.
type BatchResult struct {
	Results []BatchItem `json:"results"`
}

// itemRefusal turns a validation error of item i into its answer; other
// errors (Redis down) are not the item's and fail the call.
func itemRefusal(i int, err error) (*ItemError, bool) {
	var e *Error
	if !errors.As(err, &e) {
		return nil, false
	}
	switch e.Kind {
	case KindInvalid, KindUnprocessable, KindTooLarge, KindNotFound, KindForbidden, KindConflict:
	default:
		return nil, false
	}
	f := fmt.Sprintf("tasks[%d]", i)
	if e.Field != "" {
		f += "." + e.Field
	}
	return &ItemError{Code: e.Code, Message: e.Message, Field: f}, true
}

// SubmitBatch creates up to MaxBatch tasks, each validated on its own: an
// item refused is answered invalid (with its error) and the others are
// created, or answered duplicate when their unique_key is held. The valid
// items are written by the store's batched enqueue (one script call per
// 500 tasks and partition; all in one call under an idempotency key, with
// the key's record). Items with depends_on follow one by one (refused under
// an idempotency key). With idem.Key set, see SubmitOnce: a resend answers
// the first call's result (replayed true).
func (s *Service) SubmitBatch(ctx context.Context, p auth.Principal, ins []SubmitInput, idem Idempotency) (res BatchResult, replayed bool, err error) {
	if err := requirePrincipal(p); err != nil {
		return res, false, err
	}
	if idem.Key != "" {
		if err := ValidIdempotencyKey(idem.Key); err != nil {
			return res, false, err
		}
		leave, err := s.idem.enter(idemScope(p), idem.Key)
		if err != nil {
			return res, false, err
		}
		defer leave()
	}
	if len(ins) == 0 || len(ins) > MaxBatch {
		return res, false, Unprocessable("tasks", "a batch holds 1 to %d tasks (got %d)", MaxBatch, len(ins))
	}
	items := make([]BatchItem, len(ins))
	reqs := make([]store.EnqueueRequest, 0, len(ins))
	at := make([]int, 0, len(ins))
	var later []int // items with depends_on
	for i, in := range ins {
		items[i].Index = i
		if idem.Key != "" && len(in.DependsOn) > 0 {
			items[i].Status, items[i].Error = BatchInvalid, &ItemError{Code: "validation_failed",
				Field: fmt.Sprintf("tasks[%d].depends_on", i), Message: "depends_on cannot be combined with an Idempotency-Key"}
			continue
		}
		req, err := s.validate(ctx, in)
		if err != nil {
			ie, ok := itemRefusal(i, err)
			if !ok {
				return res, false, err
			}
			items[i].Status, items[i].Error = BatchInvalid, ie
			continue
		}
		req.SessionID = p.SessionID
		if len(in.DependsOn) > 0 {
			later = append(later, i)
			continue
		}
		reqs = append(reqs, req)
		at = append(at, i)
	}
	typ, prio := "", ""
	if len(reqs) > 0 {
		typ, prio = reqs[0].Type, string(reqs[0].Priority)
	}
	ctx, span := startSubmit(ctx, typ, prio, len(reqs))
	defer span.End()
	if tp := tracing.Traceparent(ctx); tp != "" {
		for i := range reqs {
			reqs[i].Traceparent = tp
		}
	}
	var out []store.Enqueued
	if idem.Key != "" {
		refused, err := json.Marshal(refusedItems(items))
		if err != nil {
			return res, false, Internal(err)
		}
		r, err := s.st.EnqueueIdempotent(ctx, reqs, s.idemRecord(p, idem, string(refused)))
		if err != nil {
			err = idemErr(batchField(err, at))
			endSubmit(span, "", err)
			return res, false, err
		}
		if r.Replayed {
			res, err = replayBatch(r, len(ins))
			return res, true, err
		}
		out = r.Results
	} else if len(reqs) > 0 {
		if out, err = s.st.EnqueueResults(ctx, reqs); err != nil {
			err = storeErr("", err)
			endSubmit(span, "", err)
			return res, false, err
		}
	}
	for j, r := range out {
		items[at[j]] = batchItem(at[j], r)
	}
	for _, i := range later {
		req, _ := s.validate(ctx, ins[i]) // validated above
		req.SessionID = p.SessionID
		sub, err := s.submitAfter(ctx, p, req, ins[i].DependsOn)
		if err != nil {
			ie, ok := itemRefusal(i, err)
			if !ok {
				return res, false, err
			}
			items[i].Status, items[i].Error = BatchInvalid, ie
			continue
		}
		items[i].Status, items[i].TaskID, items[i].State = BatchCreated, sub.TaskID, sub.State
	}
	endSubmit(span, "", nil)
	return BatchResult{Results: items}, false, nil
}

// batchField names the batch item of a store refusal about request j of
// the valid ones ("[j].partition_key" → "tasks[i].partition_key").
func batchField(err error, at []int) error {
	var ve *store.ValidationError
	if !errors.As(err, &ve) || !strings.HasPrefix(ve.Field, "[") {
		return err
	}
	num, rest, ok := strings.Cut(ve.Field[1:], "]")
	j, cerr := strconv.Atoi(num)
	if !ok || cerr != nil || j < 0 || j >= len(at) {
		return err
	}
	f := fmt.Sprintf("tasks[%d]%s", at[j], rest)
	return &Error{Kind: KindUnprocessable, Code: "validation_failed", Field: f, Message: f + " " + ve.Reason, Err: err}
}

func batchItem(i int, r store.Enqueued) BatchItem {
	st := BatchCreated
	if r.Duplicate {
		st = BatchDuplicate
	}
	return BatchItem{Index: i, Status: st, TaskID: r.Task.ID, State: r.Task.State}
}

// refusedItems are the invalid items of a batch, kept with its
// idempotency record so that a replay answers them as the first call did.
func refusedItems(items []BatchItem) []BatchItem {
	out := []BatchItem{}
	for _, it := range items {
		if it.Status == BatchInvalid {
			out = append(out, it)
		}
	}
	return out
}

// replayBatch rebuilds a batch's first answer from its idempotency record:
// the refused items from the record's extra, the others in order from its
// results.
func replayBatch(r store.IdempotentResult, n int) (BatchResult, error) {
	var refused []BatchItem
	if r.Extra != "" {
		if err := json.Unmarshal([]byte(r.Extra), &refused); err != nil {
			return BatchResult{}, Internal(fmt.Errorf("service: idempotency record: %w", err))
		}
	}
	items := make([]BatchItem, n)
	taken := make([]bool, n)
	for _, it := range refused {
		if it.Index < 0 || it.Index >= n {
			return BatchResult{}, Internal(fmt.Errorf("service: idempotency record: item %d of %d", it.Index, n))
		}
		items[it.Index], taken[it.Index] = it, true
	}
	j := 0
	for i := range items {
		if taken[i] {
			continue
		}
		if j >= len(r.Results) {
			return BatchResult{}, Internal(fmt.Errorf("service: idempotency record holds %d tasks for a batch of %d", len(r.Results), n))
		}
		items[i] = batchItem(i, r.Results[j])
		j++
	}
	return BatchResult{Results: items}, nil
}
