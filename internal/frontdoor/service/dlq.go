package service

import (
	"context"
	"errors"
	"fmt"

	"github.com/taskflow/taskflow/internal/engine/store"
	"github.com/taskflow/taskflow/internal/frontdoor/auth"
	"github.com/taskflow/taskflow/task"
)

// DLQItem is a dead-lettered task with the failure snapshot taken when it
// entered the DLQ.
type DLQItem struct {
	TaskView
	DLQ map[string]string `json:"dlq"`
}

// DLQ pages the dead-letter queue, newest first (operator).
func (s *Service) DLQ(ctx context.Context, p auth.Principal, offset, limit int) (Page[DLQItem], error) {
	if err := requireAdmin(p); err != nil {
		return Page[DLQItem]{}, err
	}
	if err := checkWindow(offset, &limit); err != nil {
		return Page[DLQItem]{}, err
	}
	es, total, err := s.st.ListDLQ(ctx, store.ListOptions{Offset: offset, Limit: limit})
	if err != nil {
		return Page[DLQItem]{}, storeErr("", err)
	}
	out := Page[DLQItem]{Items: make([]DLQItem, 0, len(es)), Total: total, Offset: offset, Limit: limit}
	for _, e := range es {
		out.Items = append(out.Items, DLQItem{TaskView: ViewOf(e.Task), DLQ: e.Snapshot})
	}
	return out, nil
}

// MaxBulk bounds the tasks one bulk DLQ action names or matches.
const MaxBulk = 10000

// DLQFilter selects dead letters: by task type and by error type (the
// failure snapshot's, else the task's); empty fields match any.
type DLQFilter struct {
	TaskType  string `json:"task_type,omitempty" jsonschema:"only this task type"`
	ErrorType string `json:"error_type,omitempty" jsonschema:"only this error type"`
}

func (f DLQFilter) empty() bool { return f.TaskType == "" && f.ErrorType == "" }

func (f DLQFilter) match(e store.DLQEntry) bool {
	if f.TaskType != "" && e.Task.Type != f.TaskType {
		return false
	}
	if f.ErrorType != "" {
		et := e.Snapshot["error_type"]
		if et == "" {
			et = string(e.Task.ErrorType)
		}
		if et != f.ErrorType {
			return false
		}
	}
	return true
}

// BulkInput names the dead letters a bulk action applies to: TaskIDs, or
// All of them matching Filter.
type BulkInput struct {
	TaskIDs []string  `json:"task_ids,omitempty" openapi:"maxItems=10000" jsonschema:"the dead letters to act on"`
	All     bool      `json:"all,omitempty" jsonschema:"act on every dead letter matching filter (instead of task_ids)"`
	Filter  DLQFilter `json:"filter"`
}

// BulkResult says what a bulk action did: how many it was asked for, how
// many it did, and why each other one was not.
type BulkResult struct {
	Action  string       `json:"action" openapi:"enum=retry|delete"`
	Matched int          `json:"matched" jsonschema:"tasks named or matched"`
	Done    int          `json:"done" jsonschema:"tasks retried or deleted"`
	Failed  []BulkFailed `json:"failed"`
	// Partial: All matched more than MaxBulk dead letters; run it again
	// for the rest.
	Partial bool `json:"partial,omitempty" jsonschema:"all: more than 10000 matched; run it again for the rest"`
}

// BulkFailed is one task a bulk action left as it was.
type BulkFailed struct {
	TaskID  string `json:"task_id"`
	Code    string `json:"code" jsonschema:"not_in_dlq, task_not_found, store_error"`
	Message string `json:"message"`
}

// Bulk actions on dead letters.
const (
	BulkRetry  = "retry"
	BulkDelete = "delete"
)

// DLQBulk retries (back to the retry queue, retry count 0) or deletes many
// dead letters at once (operator). Each task is moved by its own
// transition, as a single retry or delete is; a task that left the DLQ
// meanwhile is reported in Failed, not touched.
func (s *Service) DLQBulk(ctx context.Context, p auth.Principal, action string, in BulkInput) (BulkResult, error) {
	if err := requireAdmin(p); err != nil {
		return BulkResult{}, err
	}
	if action != BulkRetry && action != BulkDelete {
		return BulkResult{}, Invalid("invalid_parameter", "action", "action must be retry or delete")
	}
	out := BulkResult{Action: action, Failed: []BulkFailed{}}
	var ids []string
	switch {
	case in.All && len(in.TaskIDs) > 0:
		return out, Unprocessable("task_ids", "give task_ids or all, not both")
	case in.All:
		var err error
		if ids, out.Partial, err = s.matchDLQ(ctx, in.Filter); err != nil {
			return out, err
		}
	case len(in.TaskIDs) == 0:
		return out, Unprocessable("task_ids", "task_ids is required (the dead letters to %s), or all: true with an optional filter", action)
	case len(in.TaskIDs) > MaxBulk:
		return out, Unprocessable("task_ids", "at most %d task_ids at once (got %d)", MaxBulk, len(in.TaskIDs))
	case !in.Filter.empty():
		return out, Unprocessable("filter", "filter applies to all: true only")
	default:
		seen := map[string]bool{}
		for i, id := range in.TaskIDs {
			if err := validTaskID(id); err != nil {
				return out, Unprocessable(fmt.Sprintf("task_ids[%d]", i), "%v", err)
			}
			if !seen[id] {
				seen[id] = true
				ids = append(ids, id)
			}
		}
	}
	out.Matched = len(ids)
	for _, id := range ids {
		var err error
		if action == BulkRetry {
			err = s.st.Retry(ctx, id)
		} else {
			err = s.deleteDead(ctx, id)
		}
		if err == nil {
			out.Done++
			continue
		}
		f := BulkFailed{TaskID: id, Code: "store_error", Message: err.Error()}
		var se *task.StateError
		switch {
		case errors.As(err, &se):
			f.Code, f.Message = "not_in_dlq", fmt.Sprintf("task %s is %s, no longer a dead letter", id, se.Have)
		case errors.Is(err, task.ErrNotFound):
			f.Code, f.Message = "task_not_found", fmt.Sprintf("no task %s", id)
		case ctx.Err() != nil:
			return out, Unavailable(ctx.Err())
		}
		out.Failed = append(out.Failed, f)
	}
	return out, nil
}

// deleteDead deletes a task that is a dead letter, and nothing else: the
// state is checked in the same script that deletes, so a task retried
// meanwhile stays.
func (s *Service) deleteDead(ctx context.Context, id string) error {
	t, err := s.st.Get(ctx, id)
	if err != nil {
		return err
	}
	if err := s.st.DeleteIf(ctx, id, task.StateDLQ); err != nil {
		return err
	}
	if t.SessionID != "" {
		_ = s.st.UnindexSessionTasks(ctx, t.SessionID, id)
	}
	return nil
}

// matchDLQ lists the ids of the dead letters f matches, newest first, at
// most MaxBulk (partial: there were more).
func (s *Service) matchDLQ(ctx context.Context, f DLQFilter) (ids []string, partial bool, err error) {
	const page = 500
	for off := 0; ; off += page {
		es, total, err := s.st.ListDLQ(ctx, store.ListOptions{Offset: off, Limit: page})
		if err != nil {
			return nil, false, storeErr("", err)
		}
		for _, e := range es {
			if f.match(e) {
				if len(ids) == MaxBulk {
					return ids, true, nil
				}
				ids = append(ids, e.Task.ID)
			}
		}
		if len(es) < page || int64(off+page) >= total {
			return ids, false, nil
		}
	}
}

// DLQMatching pages the dead letters f matches (the DLQ page's filtered
// view), newest first, looking at most MaxBulk entries deep.
func (s *Service) DLQMatching(ctx context.Context, p auth.Principal, f DLQFilter, offset, limit int) (Page[DLQItem], error) {
	if f.empty() {
		return s.DLQ(ctx, p, offset, limit)
	}
	if err := requireAdmin(p); err != nil {
		return Page[DLQItem]{}, err
	}
	if err := checkWindow(offset, &limit); err != nil {
		return Page[DLQItem]{}, err
	}
	out := Page[DLQItem]{Items: []DLQItem{}, Offset: offset, Limit: limit}
	const page = 500
	for off := 0; off < MaxBulk; off += page {
		es, total, err := s.st.ListDLQ(ctx, store.ListOptions{Offset: off, Limit: page})
		if err != nil {
			return out, storeErr("", err)
		}
		for _, e := range es {
			if !f.match(e) {
				continue
			}
			if out.Total >= int64(offset) && len(out.Items) < limit {
				out.Items = append(out.Items, DLQItem{TaskView: ViewOf(e.Task), DLQ: e.Snapshot})
			}
			out.Total++
		}
		if len(es) < page || int64(off+page) >= total {
			break
		}
	}
	return out, nil
}
