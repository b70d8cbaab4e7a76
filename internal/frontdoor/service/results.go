package service

import (
	"context"
	"errors"
	"fmt"

	"github.com/taskflow/taskflow/internal/external/protocol"
	"github.com/taskflow/taskflow/internal/external/resultview"
	"github.com/taskflow/taskflow/internal/frontdoor/auth"
	"github.com/taskflow/taskflow/task"
)

// ResultView is get_task_result's answer for one task (per status: the
// result, the error, progress and ETA, the queue position, ...).
type ResultView = resultview.View

// ResultItem is one line of list_user_tasks.
type ResultItem = resultview.Item

// Result limits of ListResults.
const (
	DefaultResultLimit = 100
	MaxResultLimit     = 1000
)

// Result is get_task_result: per status the result, the error details,
// progress and ETA, the queue position or the timeout message. A task that
// has left Redis is read back from the archive; one that waits on other
// tasks is answered as pending with what it waits on. The ownership rule
// is the tasks' (authorize): another session's task is not found.
func (s *Service) Result(ctx context.Context, p auth.Principal, id string) (ResultView, error) {
	if err := requirePrincipal(p); err != nil {
		return resultview.View{}, err
	}
	if err := validTaskID(id); err != nil {
		return resultview.View{}, err
	}
	res, err := s.results()
	if err != nil {
		return resultview.View{}, err
	}
	t, source, err := res.Lookup(ctx, id)
	if errors.Is(err, task.ErrNotFound) {
		// not created yet: it may wait on other tasks
		tv, gerr := s.Get(ctx, p, id)
		if gerr != nil {
			return resultview.View{}, gerr
		}
		if len(tv.WaitingOn) > 0 {
			return resultview.WaitingView(tv.Task, tv.WaitingOn), nil
		}
		// released between the two reads: it is in the store now
		t, source, err = res.Lookup(ctx, id)
	}
	if err != nil {
		return resultview.View{}, storeErr(id, err)
	}
	if err := authorize(p, t); err != nil {
		return resultview.View{}, err
	}
	v := res.View(ctx, t, source)
	if w := s.waitingFor(ctx, t); w != nil {
		// the reason it is not picked up, in the answer's own words
		v.Status, v.Message = resultview.StatusWaitingForService, w.Message
	}
	return v, nil
}

// StatusWaitingForService is a result's status while no live service
// takes its external type (resultview.StatusWaitingForService).
const StatusWaitingForService = resultview.StatusWaitingForService

// ResultFile is a task's result file (its file_url) for its session: the
// same ownership rule as Result (another session's task is not found).
func (s *Service) ResultFile(ctx context.Context, p auth.Principal, id, name string) (resultview.File, error) {
	if err := requirePrincipal(p); err != nil {
		return resultview.File{}, err
	}
	if err := validTaskID(id); err != nil {
		return resultview.File{}, err
	}
	if err := protocol.CheckArtifactName(name); err != nil {
		return resultview.File{}, Invalid("invalid_parameter", "name", "%v", err)
	}
	res, err := s.results()
	if err != nil {
		return resultview.File{}, err
	}
	t, _, err := res.Lookup(ctx, id)
	if err != nil {
		return resultview.File{}, storeErr(id, err)
	}
	if err := authorize(p, t); err != nil {
		return resultview.File{}, err
	}
	f, err := res.File(ctx, id, name)
	if errors.Is(err, resultview.ErrNoArtifactDir) {
		return resultview.File{}, &Error{Kind: KindConflict, Code: "artifact_dir_unavailable", Field: "name", Message: err.Error(), Err: err}
	}
	if errors.Is(err, resultview.ErrNoFile) {
		return resultview.File{}, &Error{Kind: KindNotFound, Code: "file_not_found", Field: "name",
			Message: fmt.Sprintf("task %s has no file %q (files are kept %s)", id, name, protocol.ArtifactTTL)}
	}
	if err != nil {
		return resultview.File{}, storeErr("", err)
	}
	return f, nil
}

// ResultListInput is list_user_tasks's query.
type ResultListInput struct {
	// StatusFilter is all (""), pending, processing, completed, failed or
	// timeout.
	StatusFilter string
	// Limit is the most tasks listed, 1..MaxResultLimit; 0 =
	// DefaultResultLimit.
	Limit int
}

// ResultList is list_user_tasks's answer.
type ResultList struct {
	SessionID    string            `json:"session_id"`
	StatusFilter resultview.Filter `json:"status_filter" openapi:"enum=all|pending|processing|completed|failed|timeout"`
	Tasks        []ResultItem      `json:"tasks"`
}

// ListResults is list_user_tasks: the caller's session's tasks, newest
// first, live ones from Redis then older ones from the archive. It lists a
// session's tasks: the admin (who has no session) is refused.
func (s *Service) ListResults(ctx context.Context, p auth.Principal, in ResultListInput) (ResultList, error) {
	if err := requirePrincipal(p); err != nil {
		return ResultList{}, err
	}
	if p.SessionID == "" {
		return ResultList{}, Invalid("invalid_request", "", "list_user_tasks lists a session's tasks: call it with a session token")
	}
	f, err := resultview.ParseFilter(in.StatusFilter)
	if err != nil {
		return ResultList{}, Invalid("invalid_parameter", "status_filter", "%v", err)
	}
	limit, err := checkLimit(in.Limit, DefaultResultLimit, MaxResultLimit)
	if err != nil {
		return ResultList{}, err
	}
	res, err := s.results()
	if err != nil {
		return ResultList{}, err
	}
	out := ResultList{SessionID: p.SessionID, StatusFilter: f, Tasks: []resultview.Item{}}
	seen := map[string]bool{}
	add := func(ts TaskSummary, archived bool) {
		if seen[ts.ID] || len(out.Tasks) >= limit {
			return
		}
		seen[ts.ID] = true
		out.Tasks = append(out.Tasks, resultview.ItemOf(resultview.Summary{ID: ts.ID, Type: ts.Type, State: ts.State, ErrorType: ts.ErrorType,
			LastError: ts.LastError, WaitingOn: ts.WaitingOn, CreatedAt: ts.CreatedAt, UpdatedAt: ts.UpdatedAt}, archived))
	}
	states := f.States()
	lists := []string{""}
	if len(states) > 0 {
		lists = lists[:0]
		for _, st := range states {
			lists = append(lists, string(st))
		}
	}
	for _, st := range lists {
		tl, err := s.List(ctx, p, ListInput{Status: st, PageSize: limit, Summary: true})
		if err != nil {
			return ResultList{}, err
		}
		for _, x := range tl.Tasks {
			if ts, ok := x.(TaskSummary); ok {
				add(ts, false)
			}
		}
	}
	if len(out.Tasks) < limit {
		ts, err := res.Archived(ctx, p.SessionID, states, limit)
		if err != nil {
			return ResultList{}, storeErr("", err)
		}
		for _, t := range ts {
			add(SummaryOf(t), true)
		}
	}
	return out, nil
}

// checkLimit is the one rule of a listing's limit: 0 is def, otherwise
// 1..max; anything else is a 400 invalid_parameter naming "limit".
func checkLimit(n, def, max int) (int, error) {
	switch {
	case n == 0:
		return def, nil
	case n < 1 || n > max:
		return 0, Invalid("invalid_parameter", "limit", "limit must be an integer 1–%d", max)
	}
	return n, nil
}

func (s *Service) results() (*resultview.Results, error) {
	if s.cfg.Results == nil {
		return nil, Conflict("results_unavailable", "this server does not serve results")
	}
	return s.cfg.Results, nil
}
