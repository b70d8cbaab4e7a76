package httpapi

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sync"
	"time"

	"github.com/taskflow/taskflow/internal/frontdoor/identity"
	"github.com/taskflow/taskflow/internal/frontdoor/service"
	"github.com/taskflow/taskflow/internal/frontend/stats"
	"github.com/taskflow/taskflow/task"
)

// component is one schema of /openapi.json's components: the Go type of
// the body it describes. Its schema is derived from the type (schemagen.go).
type component struct {
	name string
	typ  reflect.Type
	mode schemaMode
	doc  string
}

func response[T any](name, doc string) component {
	return component{name: name, typ: reflect.TypeFor[T](), mode: responseBody, doc: doc}
}

func request[T any](name, doc string) component {
	return component{name: name, typ: reflect.TypeFor[T](), mode: requestBody, doc: doc}
}

// components are the bodies the API writes and reads, each named as the
// route table names it (opDoc.request, opDoc.responses).
var components = []component{
	response[errorBody]("Error", "The one error envelope of the API."),
	response[service.Session]("Session", ""),
	response[sessionEnded]("SessionEnded", ""),
	response[service.SessionList]("SessionList", "The live sessions, newest first."),
	request[summarizeRequest]("SummarizeRequest", ""),
	request[service.SubmitInput]("SubmitRequest", ""),
	response[service.Submitted]("Submitted", ""),
	request[batchRequest]("BatchSubmitRequest", ""),
	response[service.BatchResult]("BatchResult", "One result per item of the batch, in order."),
	response[service.TaskView]("Task", "A task with its result and histories."),
	response[service.TaskSummary]("TaskSummary", "A task without its content and result (listings with summary=true, queue listings)."),
	response[service.TaskList]("TaskList", ""),
	response[taskTypes]("TaskTypes", ""),
	response[service.ServicesView]("Services", ""),
	request[service.ScheduleInput]("ScheduleRequest", ""),
	response[service.ScheduleView]("Schedule", ""),
	response[scheduleList]("ScheduleList", ""),
	response[scheduleDeleted]("ScheduleDeleted", ""),
	response[taskDeleted]("Deleted", ""),
	response[service.CancelResult]("Cancelled", ""),
	response[requeued]("Requeued", ""),
	response[service.QueueStatus]("QueueStatus", ""),
	response[service.QueueList]("QueueList", "The named queues, the paused task types and the parked tasks."),
	response[service.QueueView]("QueueView", ""),
	response[service.PauseState]("PauseState", ""),
	response[service.LimitList]("LimitList", ""),
	response[service.LimitView]("LimitView", "A fleet-wide limit (the body of PUT /api/v1/limits too)."),
	request[service.LimitInput]("LimitInput", "A limit to set: as LimitView."),
	response[limitDeleted]("LimitDeleted", ""),
	response[stats.Series]("Series", "The last 15 minutes in columns, oldest step first, one entry per step."),
	response[service.Event]("TaskEvent", "A task's state change: the data of the status stream's event: task."),
	request[service.BulkInput]("BulkRequest", ""),
	response[service.BulkResult]("BulkResult", ""),
	response[service.Page[service.DLQItem]]("DLQPage", ""),
	response[queuePage]("QueuePage", ""),
	response[workersView]("Workers", ""),
	request[breakerRequest]("BreakerRequest", ""),
	response[service.BreakerOutcome]("BreakerResult", ""),
	response[service.Health]("Health", ""),
	response[probe]("Probe", ""),
	response[service.ResultView]("Result", "get_task_result's answer."),
	response[service.ResultList]("ResultList", "list_user_tasks's answer."),
	request[service.PlanRequest]("PlanRequest", "rankd's request, plus the run's deadlines."),
	response[service.PlanList]("PlanList", ""),
	response[service.PlanInfo]("PlanSummary", "A plan this server runs: its size, or why it does not compile."),
	response[service.PlanGraph]("PlanGraph", ""),
	response[service.PlanNode]("PlanNode", ""),
	response[service.PlanAnswer]("PlanRun", "rankd's success line; with ?trace=1 also trace and elapsed_us."),
	response[service.PlanTraceLine]("PlanTraceLine", ""),
	response[service.Me]("Me", "Who the caller is (GET /api/v1/me)."),
	request[service.KeyRequest]("KeyRequest", ""),
	response[service.NamedKey]("NamedKey", "A named API key; key only in the answer to its creation."),
	response[service.KeyList]("KeyList", ""),
	response[service.AuditPage]("AuditPage", "A page of the audit trail, newest first."),
	response[service.AuditEntry]("AuditEntry", "One change made with the admin key or a named key."),
	response[service.NotificationPage]("NotificationPage", ""),
	response[service.Notification]("Notification", "A session's notification (docs/notifications.md): an item of the poll's page, "+
		"a message of the WebSocket feed, the data of the SSE feed's event: notification, and an item of the notifications "+
		"key a session's next JSON answer carries when some are unread."),
}

// typeSchemas are the fixed schemas of named types.
var typeSchemas = map[reflect.Type]map[string]any{
	reflect.TypeFor[time.Time]():       dateTime,
	reflect.TypeFor[json.RawMessage](): {}, // any JSON value; a field's openapi tag may say which
	reflect.TypeFor[task.State]():      enumOf(task.States...),
	reflect.TypeFor[task.Priority]():   enumOf(task.Priorities...),
	reflect.TypeFor[identity.Role]():   enumOf(identity.Roles...),
}

// apiSchemas are the component schemas, derived once from components.
var apiSchemas = sync.OnceValue(func() map[string]any {
	s, err := buildSchemas(components)
	if err != nil {
		panic(err) // a type the generator cannot describe: a programming error, caught by the tests
	}
	return s
})

func buildSchemas(cs []component) (map[string]any, error) {
	g := &schemaGen{names: map[reflect.Type]string{}, types: typeSchemas}
	for _, c := range cs {
		if other, dup := g.names[c.typ]; dup {
			return nil, fmt.Errorf("schemas %s and %s are both %s", other, c.name, c.typ)
		}
		g.names[c.typ] = c.name
		if w, ok := reflect.Zero(c.typ).Interface().(wireFormer); ok {
			g.names[reflect.TypeOf(w.WireForm())] = c.name // the same JSON: a $ref where it appears (embedded in another wire form, say)
		}
	}
	out := map[string]any{}
	for _, c := range cs {
		s, err := g.component(c.typ, c.mode)
		if err != nil {
			return nil, fmt.Errorf("schema %s: %w", c.name, err)
		}
		if c.doc != "" {
			s["description"] = c.doc
		}
		out[c.name] = s
	}
	return out, nil
}

// The answers that have no type in the service layer.

type sessionEnded struct {
	SessionID string `json:"session_id"`
	Ended     bool   `json:"ended"`
}

type taskDeleted struct {
	TaskID  string `json:"task_id"`
	Deleted bool   `json:"deleted"`
}

type requeued struct {
	Requeued int      `json:"requeued"`
	TaskIDs  []string `json:"task_ids"`
}

type taskTypes struct {
	TaskTypes []service.TaskTypeInfo `json:"task_types"`
	Count     int                    `json:"count"`
}

type scheduleList struct {
	Schedules []service.ScheduleView `json:"schedules"`
	Count     int                    `json:"count"`
}

type scheduleDeleted struct {
	ScheduleID string `json:"schedule_id"`
	Deleted    bool   `json:"deleted"`
}

type queuePage struct {
	Queue  string                `json:"queue"`
	Tasks  []service.TaskSummary `json:"tasks"`
	Total  int64                 `json:"total"`
	Offset int                   `json:"offset"`
	Limit  int                   `json:"limit"`
}

type workersView struct {
	Workers []service.WorkerInfo `json:"workers"`
	Count   int                  `json:"count"`
}

type probe struct {
	Status string `json:"status" openapi:"enum=ok|ready"`
}
