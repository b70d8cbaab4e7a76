package httpapi

// apiSchemas are the OpenAPI component schemas of the bodies the API sends
// and accepts. Tests check that every schema a route names exists and that
// real responses carry the required fields.

func obj(required []string, props map[string]any) map[string]any {
	m := map[string]any{"type": "object", "properties": props}
	if len(required) > 0 {
		m["required"] = required
	}
	return m
}

func str(desc string) map[string]any { return map[string]any{"type": "string", "description": desc} }
func integer(desc string) map[string]any {
	return map[string]any{"type": "integer", "description": desc}
}
func num(desc string) map[string]any { return map[string]any{"type": "number", "description": desc} }
func boolean(desc string) map[string]any {
	return map[string]any{"type": "boolean", "description": desc}
}
func ts(desc string) map[string]any {
	return map[string]any{"type": "string", "format": "date-time", "description": desc}
}

// nullable marks a schema's value as possibly null (task
// metadata sends last_error, error_type, retry_after, completed_at and
// result as null until known).
func nullable(m map[string]any) map[string]any { m["nullable"] = true; return m }
func arr(items any) map[string]any             { return map[string]any{"type": "array", "items": items} }
func mapOf(v any) map[string]any {
	return map[string]any{"type": "object", "additionalProperties": v}
}

var stateEnum = map[string]any{"type": "string", "enum": []string{"PENDING", "ACTIVE", "COMPLETED", "FAILED", "DLQ", "TIMEOUT", "CANCELLED"}}

var apiSchemas = map[string]any{
	"Error": obj([]string{"error"}, map[string]any{
		"error": obj([]string{"code", "message"}, map[string]any{
			"code":    str("stable machine code, e.g. validation_failed, unknown_field, task_not_found, task_not_retryable, task_active"),
			"message": str("what is wrong, in words"),
			"field":   str("the request field or parameter concerned, when there is one"),
		}),
	}),
	"Session": obj([]string{"session_id", "token"}, map[string]any{
		"session_id": str("the session's id"),
		"token":      str("bearer token of the session; shown once, stored only as a hash"),
		"created_at": ts(""), "expires_at": ts(""),
	}),
	"SessionEnded": obj([]string{"session_id", "ended"}, map[string]any{"session_id": str(""), "ended": boolean("")}),
	"SummarizeRequest": obj([]string{"content"}, map[string]any{
		"content":     map[string]any{"type": "string", "description": "text to summarize", "example": "Redis is an in-memory data store. It is used as a cache and a message broker."},
		"priority":    map[string]any{"type": "string", "enum": []string{"high", "normal", "low"}},
		"timeout":     num("seconds one attempt may run"),
		"max_retries": integer("0..100; default 3"),
		"run_at":      ts("delay the first run until this time"),
		"delay":       num("seconds from now to the first run (instead of run_at)"),
		"depends_on":  map[string]any{"type": "array", "items": str("task id"), "maxItems": 100, "description": "the caller's own tasks that must complete first; until then the task is PENDING with waiting_on. If one ends in the DLQ or CANCELLED, this task is cancelled"},
	}),
	"SubmitRequest": obj([]string{"task_type"}, map[string]any{
		"task_type":     map[string]any{"type": "string", "description": "a registered task type", "example": "summarize"},
		"content":       str("input text (required for summarize)"),
		"params":        map[string]any{"type": "object", "description": "handler parameters"},
		"priority":      map[string]any{"type": "string", "enum": []string{"high", "normal", "low"}},
		"timeout":       num("seconds one attempt may run"),
		"max_retries":   integer("0..100; default 3"),
		"run_at":        ts("delay the first run until this time"),
		"delay":         num("seconds from now to the first run (instead of run_at)"),
		"depends_on":    map[string]any{"type": "array", "items": str("task id"), "maxItems": 100, "description": "the caller's own tasks that must complete first; until then the task is PENDING with waiting_on. If one ends in the DLQ or CANCELLED, this task is cancelled"},
		"partition_key": map[string]any{"type": "string", "maxLength": 200, "description": "tasks giving the same key share a partition of a deployment split into several (TASKFLOW_PARTITIONS), so they are queued first in, first out together; without it a task's partition follows from its id. No effect with one partition"},
	}),
	"Submitted": obj([]string{"task_id", "state"}, map[string]any{"task_id": str(""), "state": stateEnum}),
	"Task": obj([]string{"task_id", "task_type", "state", "retry_count", "max_retries", "created_at", "updated_at"}, map[string]any{
		"task_id": str(""), "task_type": str(""), "state": stateEnum, "content": str(""),
		"params": map[string]any{"type": "object"}, "session_id": str(""),
		"priority": str(""), "timeout": num("seconds"), "retry_count": integer(""), "max_retries": integer(""),
		"last_error": nullable(str("null until a failure")), "error_type": nullable(str("null until a failure")),
		"retry_after": nullable(ts("null unless a retry is scheduled")), "created_at": ts(""), "updated_at": ts(""),
		"started_at": ts(""), "completed_at": nullable(ts("null until the task is COMPLETED")),
		"result":        nullable(map[string]any{"type": "object", "description": "the handler's result (null until COMPLETED); summarize: {summary, summarizer, model}"}),
		"worker":        str(""),
		"error_history": arr(obj(nil, map[string]any{"at": ts(""), "attempt": integer(""), "error_type": str(""), "message": str(""), "worker": str("")})),
		"state_history": arr(obj(nil, map[string]any{"at": ts(""), "from": str(""), "to": str(""), "cause": str("")})),
		"waiting_on":    map[string]any{"type": "array", "items": str("task id"), "description": "submitted with depends_on and not released yet: the tasks it waits for"},
		"waiting_for": obj([]string{"reason", "message"}, map[string]any{
			"reason":  map[string]any{"type": "string", "enum": []string{"no_service"}},
			"message": str("e.g. no service for data.export is running: the task has waited 4m0s and runs when one registers"),
		}),
	}),
	"TaskTypes": obj([]string{"task_types", "count"}, map[string]any{
		"count": integer(""),
		"task_types": arr(obj([]string{"name", "params_schema", "handled_by"}, map[string]any{
			"name": str(""), "description": str(""),
			"params_schema": map[string]any{"type": "object", "description": "a JSON Schema of the task's params"},
			"handled_by":    map[string]any{"type": "string", "enum": []string{"worker", "service"}},
			"services":      arr(str("live services taking the type")),
			"online":        boolean("external types: a live service takes it"),
			"published_by":  str("external types: the service that published the description and schema"),
		})),
	}),
	"Services": obj([]string{"services", "external_types", "groups"}, map[string]any{
		"services": arr(obj([]string{"name", "task_types", "online"}, map[string]any{
			"name": str(""), "task_types": arr(str("")), "online": boolean("an instance heartbeated within three heartbeats"),
			"consumer": str("the instance that registered last"), "last_heartbeat": ts(""),
		})),
		"external_types": arr(obj([]string{"task_type", "online", "in_flight", "in_flight_bound"}, map[string]any{
			"task_type": str(""), "online": boolean("a live service takes this type"), "services": arr(str("")),
			"in_flight":       integer("attempts dispatched and not finished, within their deadline"),
			"in_flight_bound": integer("the most the dispatchers admit at once (TASKFLOW_EXTERNAL_INFLIGHT); -1: no bound"),
		})),
		"groups": arr(obj([]string{"group", "consumers", "pending", "lag"}, map[string]any{
			"group": str("a consumer group of the task.create stream (one per service)"), "consumers": integer(""),
			"pending": integer("delivered to a consumer and not acknowledged"), "lag": integer("entries not read yet"),
		})),
	}),
	"ScheduleRequest": obj([]string{"cron", "task_type"}, map[string]any{
		"id":        map[string]any{"type": "string", "pattern": "^[A-Za-z0-9_-]{1,64}$", "description": "schedule id; absent = a new UUID"},
		"cron":      map[string]any{"type": "string", "description": "5-field cron expression (UTC) or @hourly, @daily, @every 30s", "example": "*/5 * * * *"},
		"task_type": map[string]any{"type": "string", "description": "a registered task type", "example": "report.generate"},
		"params":    map[string]any{"type": "object", "description": "handler parameters of every task created"},
		"content":   str("input text of every task created (required for summarize)"),
		"priority":  map[string]any{"type": "string", "enum": []string{"high", "normal", "low"}},
		"timeout":   integer("seconds each run may take, 1..86400"),
	}),
	"Schedule": obj([]string{"schedule_id", "cron", "task_type", "priority", "created_at"}, map[string]any{
		"schedule_id": str(""), "cron": str(""), "task_type": str(""), "params": map[string]any{"type": "object"}, "content": str(""),
		"priority": str(""), "timeout": integer("seconds"), "session_id": str("the owning session"), "created_at": ts(""),
		"next_run_at": ts("the next due time (absent: never due again)"),
		"last_run_at": ts("the latest due time it fired for (absent: not yet)"),
	}),
	"ScheduleList":    obj([]string{"schedules", "count"}, map[string]any{"schedules": arr(ref("Schedule")), "count": integer("")}),
	"ScheduleDeleted": obj([]string{"schedule_id", "deleted"}, map[string]any{"schedule_id": str(""), "deleted": boolean("")}),
	"TaskList": obj([]string{"tasks", "total", "page", "page_size"}, map[string]any{
		"tasks": arr(ref("Task")), "total": integer("matching tasks"), "page": integer(""), "page_size": integer(""),
		"partial": boolean("a filtered listing stopped scanning at 10000 entries"),
	}),
	"Deleted":   obj([]string{"task_id", "deleted"}, map[string]any{"task_id": str(""), "deleted": boolean("")}),
	"Cancelled": obj([]string{"task_id", "outcome", "state"}, map[string]any{"task_id": str(""), "outcome": map[string]any{"type": "string", "enum": []string{"cancelled", "requested"}}, "state": stateEnum}),
	"Requeued":  obj([]string{"requeued", "task_ids"}, map[string]any{"requeued": integer(""), "task_ids": arr(str(""))}),
	"QueueStatus": obj([]string{"queues", "states", "retry_ratio"}, map[string]any{
		"queues":              obj([]string{"primary", "retry", "scheduled", "dlq"}, map[string]any{"primary": integer(""), "retry": integer(""), "scheduled": integer(""), "dlq": integer("")}),
		"primary_by_priority": mapOf(integer("")),
		"states":              mapOf(integer("")),
		"retry_ratio":         num("share of fetches served retry-first now"),
		"pressure":            map[string]any{"type": "string", "enum": []string{"normal", "warning", "critical"}},
	}),
	"Series": obj([]string{"step_seconds", "at", "enqueued", "completed", "failed", "dead_lettered", "start_p50_ms", "start_p99_ms", "depth", "window"}, map[string]any{
		"step_seconds":  num("width of one step"),
		"at":            arr(integer("the step's start, unix seconds")),
		"enqueued":      arr(integer("tasks created in the step")),
		"completed":     arr(integer("")),
		"failed":        arr(integer("attempts that ended FAILED or TIMEOUT")),
		"dead_lettered": arr(integer("")),
		"start_p50_ms":  arr(nullable(num("null: no task started in the step"))),
		"start_p99_ms":  arr(nullable(num(""))),
		"depth":         mapOf(arr(nullable(integer("null: no sample in the step")))),
		"window": obj([]string{"enqueued", "completed", "failed", "dead_lettered", "starts", "start_p50_ms", "start_p99_ms"}, map[string]any{
			"enqueued": integer(""), "completed": integer(""), "failed": integer(""), "dead_lettered": integer(""),
			"starts": integer("tasks started"), "start_p50_ms": nullable(num("")), "start_p99_ms": nullable(num("")),
		}),
	}),
	"TaskEvent": obj([]string{"id", "task_id", "to", "at"}, map[string]any{
		"id": str("event id (resume with Last-Event-ID)"), "task_id": str(""), "from": str(""), "to": stateEnum,
		"at": ts(""), "task_type": str(""), "session_id": str(""),
	}),
	"BulkRequest": obj(nil, map[string]any{
		"task_ids": map[string]any{"type": "array", "items": str("task id"), "maxItems": 10000, "description": "the dead letters to act on"},
		"all":      boolean("act on every dead letter matching filter (instead of task_ids)"),
		"filter":   obj(nil, map[string]any{"task_type": str("only this task type"), "error_type": str("only this error type")}),
	}),
	"BulkResult": obj([]string{"action", "matched", "done", "failed"}, map[string]any{
		"action": map[string]any{"type": "string", "enum": []string{"retry", "delete"}}, "matched": integer("tasks named or matched"),
		"done": integer("tasks retried or deleted"), "partial": boolean("all: more than 10000 matched; run it again for the rest"),
		"failed": arr(obj([]string{"task_id", "code", "message"}, map[string]any{"task_id": str(""), "code": str("not_in_dlq, task_not_found, store_error"), "message": str("")})),
	}),
	"DLQPage": obj([]string{"tasks", "total"}, map[string]any{
		"tasks": arr(map[string]any{"allOf": []any{ref("Task"), obj(nil, map[string]any{"dlq": obj(nil, map[string]any{
			"task_id": str(""), "task_type": str(""), "error_type": str(""), "last_error": str(""),
			"retry_count": integer("retries spent when it was dead-lettered"), "from_state": str("the state it left for the DLQ"),
			"dlq_at": ts("when it was dead-lettered"),
		})})}}),
		"total": integer(""), "offset": integer(""), "limit": integer(""),
	}),
	"TaskSummary": obj([]string{"task_id", "task_type", "state"}, map[string]any{
		"task_id": str(""), "task_type": str(""), "state": stateEnum, "session_id": str(""), "priority": str(""),
		"retry_count": integer(""), "max_retries": integer(""), "error_type": str(""), "last_error": str(""),
		"created_at": ts(""), "updated_at": ts(""), "completed_at": ts(""),
		"waiting_on": map[string]any{"type": "array", "items": str("task id"), "description": "submitted with depends_on and not released yet: the tasks it waits for"},
	}),
	"QueuePage": obj([]string{"queue", "tasks", "total"}, map[string]any{
		"queue": str(""), "tasks": arr(ref("TaskSummary")), "total": integer(""), "offset": integer(""), "limit": integer(""),
	}),
	"Workers": obj([]string{"workers", "count"}, map[string]any{
		"count": integer(""),
		"workers": arr(obj([]string{"worker_id"}, map[string]any{
			"worker_id": str(""), "host": str(""), "started_at": ts(""), "last_heartbeat": ts(""),
			"heartbeat_age_seconds": num(""), "concurrency": integer(""), "in_flight": integer(""),
			"task_types": arr(str("")), "circuit_breakers": mapOf(map[string]any{"type": "string", "enum": []string{"CLOSED", "HALF_OPEN", "OPEN"}}),
		})),
	}),
	"BreakerRequest": obj(nil, map[string]any{
		"dependency":       map[string]any{"type": "string", "description": "e.g. openrouter; empty = every dependency", "example": "openrouter"},
		"duration_seconds": num("open-circuit-breaker only: how long to hold it open; absent = until a reset"),
	}),
	"BreakerResult": obj([]string{"dependency", "state", "workers"}, map[string]any{
		"dependency": map[string]any{"type": "string", "description": "the breaker moved; empty = every breaker"},
		"state":      map[string]any{"type": "string", "enum": []string{"CLOSED", "OPEN"}},
		"until":      map[string]any{"type": "string", "format": "date-time", "description": "open: when the forced open ends; absent = until a reset"},
		"workers":    map[string]any{"type": "integer", "description": "worker processes that received the command (each applies it on receipt)"},
	}),
	"Health": obj([]string{"status", "components", "timestamp"}, map[string]any{
		"status": map[string]any{"type": "string", "enum": []string{"healthy", "unhealthy"}},
		"components": obj([]string{"redis", "workers", "circuit_breaker"}, map[string]any{
			"redis": boolean(""), "workers": boolean("at least one live worker"), "worker_count": integer(""),
			"circuit_breaker": mapOf(str("worst state per dependency")),
		}),
		"timestamp": ts(""),
	}),
	"Probe": obj([]string{"status"}, map[string]any{"status": str("")}),
	"Result": obj([]string{"task_id", "task_type", "status", "state", "message", "source"}, map[string]any{
		"task_id": str(""), "task_type": str(""),
		"status":      map[string]any{"type": "string", "enum": []string{"pending", "processing", "completed", "failed", "timeout", "cancelled"}},
		"state":       stateEnum,
		"result":      map[string]any{"description": "completed: the task's result"},
		"error":       obj([]string{"code", "message"}, map[string]any{"code": str(""), "message": str(""), "retry_count": integer(""), "max_retries": integer(""), "will_retry": boolean(""), "retry_at": ts(""), "history": arr(map[string]any{"type": "object"}), "details": map[string]any{"type": "object"}}),
		"progress":    obj(nil, map[string]any{"percent": num(""), "message": str(""), "eta_seconds": num(""), "reported_by": str(""), "at": ts("")}),
		"eta_seconds": num("processing: seconds left, by the last estimate"), "queue_position": integer("pending: 1 = next"),
		"waiting_on": arr(str("task id")), "message": str("what the status means, in words"),
		"created_at": ts(""), "updated_at": ts(""), "completed_at": ts(""),
		"source": map[string]any{"type": "string", "enum": []string{"redis", "cache", "archive"}},
	}),
	"ResultList": obj([]string{"session_id", "status_filter", "tasks"}, map[string]any{
		"session_id": str(""), "status_filter": str(""),
		"tasks": arr(obj([]string{"task_id", "task_type", "status", "state", "summary"}, map[string]any{
			"task_id": str(""), "task_type": str(""), "status": str(""), "state": stateEnum, "summary": str("one line, in words"),
			"created_at": ts(""), "updated_at": ts(""), "archived": boolean("read from the archive"), "waiting_on": arr(str("task id")),
		})),
	}),
	"PlanRequest": obj([]string{"user_id"}, map[string]any{
		"user_id":         map[string]any{"oneOf": []any{map[string]any{"type": "integer", "minimum": 1}, map[string]any{"type": "string"}}, "description": "the user the plan ranks for (a positive integer, or its decimal string)", "example": 1},
		"request_id":      str("echoed in the answer; absent = a new UUID"),
		"param_overrides": map[string]any{"type": "object", "description": "plan params by name (registry/params.toml)"},
		"deadline_ms":     num("the whole run's deadline in ms (default 1000, at most 30000)"),
		"node_timeout_ms": num("each node's timeout in ms"),
	}),
	"PlanList": obj([]string{"plans"}, map[string]any{"plans": arr(ref("PlanSummary"))}),
	"PlanSummary": obj([]string{"name"}, map[string]any{
		"name":    str("the plan's name, as in /api/v1/plans/{name}"),
		"nodes":   integer("its nodes (absent when error is set)"),
		"outputs": integer("its output nodes (absent when error is set)"),
		"error":   str("the plan does not compile: why (a run of it is 500 plan_invalid)"),
	}),
	"PlanGraph": obj([]string{"name", "nodes", "outputs", "endpoints"}, map[string]any{
		"name":      str(""),
		"nodes":     map[string]any{"type": "array", "items": ref("PlanNode"), "description": "each node after the nodes it reads (ties in the plan file's order)"},
		"outputs":   arr(str("node id: the nodes whose rows are the answer, in its order")),
		"endpoints": arr(str("endpoint id the IO nodes read (registry/endpoints.*.toml)")),
	}),
	"PlanNode": obj([]string{"id", "op", "kind", "deps", "output"}, map[string]any{
		"id":     str("the node's id"),
		"op":     str("the op, e.g. core::viewer"),
		"kind":   map[string]any{"type": "string", "enum": []string{"IO", "CPU"}, "description": "IO: reads Redis or waits; CPU: computes"},
		"deps":   arr(str("node id: the nodes it reads, inputs first, then node references (concat's rhs)")),
		"output": boolean("one of the plan's outputs"),
	}),
	"PlanRun": obj([]string{"request_id", "engine_request_id", "candidates"}, map[string]any{
		"request_id":        str("the request's request_id (or the one made for it)"),
		"engine_request_id": str("this run's own id"),
		"candidates": arr(obj([]string{"id", "fields"}, map[string]any{
			"id":     map[string]any{"type": "integer", "format": "int64"},
			"fields": mapOf(map[string]any{"oneOf": []any{map[string]any{"type": "number"}, map[string]any{"type": "string"}}, "description": "non-null columns by key name"}),
		})),
		"trace":      map[string]any{"type": "array", "items": ref("PlanTraceLine"), "description": "?trace=1 only: one line per node that ran, in the plan's order"},
		"elapsed_us": integer("?trace=1 only: the run's wall time in microseconds"),
	}),
	"PlanTraceLine": obj([]string{"node_id", "op", "kind", "place", "start_us", "end_us", "rows_in", "rows_out", "redis_round_trips"}, map[string]any{
		"node_id":           str(""),
		"op":                str(""),
		"kind":              map[string]any{"type": "string", "enum": []string{"IO", "CPU"}},
		"place":             map[string]any{"type": "string", "enum": []string{"io", "pool", "inline", "fused"}, "description": "where it ran: its own goroutine, the CPU pool, inline on the goroutine that readied it, or the pool slot of the CPU node before it"},
		"start_us":          integer("microseconds from the run's start to the node's"),
		"end_us":            integer("microseconds from the run's start to the node's end"),
		"rows_in":           integer("rows of the nodes it read"),
		"rows_out":          integer(""),
		"redis_round_trips": integer(""),
		"error":             str("the node failed: why"),
	}),
	"NotificationPage": obj([]string{"session_id", "notifications", "cursor", "unread"}, map[string]any{
		"session_id":    str(""),
		"notifications": arr(map[string]any{"type": "object", "description": "a notification (docs/notifications.md)"}),
		"cursor":        str("pass as ?after= next time"),
		"unread":        integer("still unread after this call (counted up to 1000)"),
	}),
}
