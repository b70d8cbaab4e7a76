package service

import (
	"context"

	"github.com/taskflow/taskflow/internal/engine/store"
	"github.com/taskflow/taskflow/internal/frontdoor/auth"
	"github.com/taskflow/taskflow/task"
)

// QueueStatus is GET /api/v1/queues/status answer.
type QueueStatus struct {
	Queues            QueueDepths             `json:"queues"`
	PrimaryByPriority map[task.Priority]int64 `json:"primary_by_priority"`
	States            map[task.State]int64    `json:"states"`
	RetryRatio        float64                 `json:"retry_ratio" jsonschema:"share of fetches served retry-first now"`
	Pressure          string                  `json:"pressure" openapi:"enum=normal|warning|critical"`
}

// QueueDepths are the tasks waiting in each queue.
type QueueDepths struct {
	Primary   int64 `json:"primary"`
	Retry     int64 `json:"retry"`
	Scheduled int64 `json:"scheduled"`
	DLQ       int64 `json:"dlq"`
}

// ByName is the depths by queue name (primary, retry, scheduled, dlq).
func (d QueueDepths) ByName() map[string]int64 {
	return map[string]int64{"primary": d.Primary, "retry": d.Retry, "scheduled": d.Scheduled, "dlq": d.DLQ}
}

// QueueStatus returns queue depths and per-state counts (operator).
func (s *Service) QueueStatus(ctx context.Context, p auth.Principal) (QueueStatus, error) {
	if err := requireAdmin(p); err != nil {
		return QueueStatus{}, err
	}
	return s.queueStatus(ctx)
}

func (s *Service) queueStatus(ctx context.Context) (QueueStatus, error) {
	qs, err := s.st.QueueStatus(ctx)
	if err != nil {
		return QueueStatus{}, storeErr("", err)
	}
	states := make(map[task.State]int64, len(task.States))
	for _, st := range task.States {
		states[st] = qs.States[st]
	}
	return QueueStatus{
		Queues:            QueueDepths{Primary: qs.Primary, Retry: qs.Retry, Scheduled: qs.Scheduled, DLQ: qs.DLQ},
		PrimaryByPriority: qs.PrimaryByPriority,
		States:            states,
		RetryRatio:        qs.RetryRatio,
		Pressure:          qs.Pressure,
	}, nil
}

// QueueTasks pages the tasks waiting in one queue in the order they will
// be taken (operator). queue is primary, primary:high, primary:low, retry,
// scheduled or dlq.
func (s *Service) QueueTasks(ctx context.Context, p auth.Principal, queue string, offset, limit int) (Page[TaskSummary], error) {
	if err := requireAdmin(p); err != nil {
		return Page[TaskSummary]{}, err
	}
	q, err := store.ParseQueue(queue)
	if err != nil {
		return Page[TaskSummary]{}, NotFound("queue_not_found", "no queue %q (primary, primary:high, primary:low, retry, scheduled, dlq)", truncate(queue, 40))
	}
	if err := checkWindow(offset, &limit); err != nil {
		return Page[TaskSummary]{}, err
	}
	ids, total, err := s.st.QueueContents(ctx, q, store.ListOptions{Offset: offset, Limit: limit})
	if err != nil {
		return Page[TaskSummary]{}, storeErr("", err)
	}
	ts, err := s.st.GetMany(ctx, ids)
	if err != nil {
		return Page[TaskSummary]{}, storeErr("", err)
	}
	out := Page[TaskSummary]{Items: make([]TaskSummary, 0, len(ts)), Total: total, Offset: offset, Limit: limit}
	for _, t := range ts {
		out.Items = append(out.Items, SummaryOf(t))
	}
	return out, nil
}
