"""Typed models of the API's answers (the components of /openapi.json).

Each model names the schema it mirrors in ``SCHEMA`` (a component, or a
path into one: ``Task.error_history[]`` is the items of Task's
error_history); ``tests/test_models.py`` compares every model's fields with
the live document, so a field the API adds or drops fails the SDK's tests
instead of drifting. A field without a default is one the schema requires.
Models whose schema is not in the document yet (the issue-26 controls:
batch results, queues, limits) are marked ``SCHEMA = ""`` and checked by
``tests/test_controls.py``.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, Optional

State = Literal["PENDING", "ACTIVE", "COMPLETED", "FAILED", "DLQ", "TIMEOUT", "CANCELLED"]
Priority = Literal["high", "normal", "low"]

#: States a task does not leave by itself: wait() returns on these.
FINAL_STATES = frozenset({"COMPLETED", "DLQ", "CANCELLED"})

_model = dict(kw_only=True)


@dataclass(**_model)
class Submitted:
    """The answer to a submit or a retry."""

    SCHEMA: ClassVar[str] = "Submitted"
    task_id: str
    state: State
    #: unique_key matched a live task: this is that task (HTTP 200, not 201).
    duplicate: Optional[bool] = field(default=None, metadata={"since": "issue26"})
    #: Not from the body: the answer was replayed for a repeated
    #: Idempotency-Key (header Idempotent-Replayed: true).
    replayed: bool = field(default=False, metadata={"local": True})
    #: Not from the body: the HTTP status (201 created, 200 duplicate).
    status_code: int = field(default=0, metadata={"local": True})


@dataclass(**_model)
class ErrorRecord:
    SCHEMA: ClassVar[str] = "Task.error_history[]"
    at: dt.datetime
    attempt: int
    error_type: str
    message: str
    details: Optional[dict[str, Any]] = None
    worker: Optional[str] = None


@dataclass(**_model)
class StateChange:
    SCHEMA: ClassVar[str] = "Task.state_history[]"
    at: dt.datetime
    to: State
    from_: Optional[State] = field(default=None, metadata={"json": "from"})
    cause: Optional[str] = None


@dataclass(**_model)
class WaitingFor:
    SCHEMA: ClassVar[str] = "Task.waiting_for"
    reason: str
    message: str


@dataclass(**_model)
class Task:
    """A task with its result and histories (GET /api/v1/tasks/{id})."""

    SCHEMA: ClassVar[str] = "Task"
    task_id: str
    task_type: str
    state: State
    priority: Priority
    created_at: dt.datetime
    updated_at: dt.datetime
    completed_at: Optional[dt.datetime]
    retry_after: Optional[dt.datetime]
    retry_count: int
    max_retries: int
    last_error: Optional[str]
    error_type: Optional[str]
    result: Optional[dict[str, Any]]
    error_history: list[ErrorRecord]
    state_history: list[StateChange]
    content: Optional[str] = None
    params: Optional[dict[str, Any]] = None
    session_id: Optional[str] = None
    started_at: Optional[dt.datetime] = None
    timeout: Optional[float] = None
    worker: Optional[str] = None
    waiting_for: Optional[WaitingFor] = None
    waiting_on: Optional[list[str]] = None
    queue: Optional[str] = None
    limit_key: Optional[str] = None

    @property
    def done(self) -> bool:
        """The task is in a state it does not leave by itself."""
        return self.state in FINAL_STATES


@dataclass(**_model)
class TaskSummary:
    """A task without content and result (listings with summary=True)."""

    SCHEMA: ClassVar[str] = "TaskSummary"
    task_id: str
    task_type: str
    state: State
    priority: Priority
    created_at: dt.datetime
    updated_at: dt.datetime
    retry_count: int
    max_retries: int
    completed_at: Optional[dt.datetime] = None
    error_type: Optional[str] = None
    last_error: Optional[str] = None
    session_id: Optional[str] = None
    started_at: Optional[dt.datetime] = None
    waiting_for: Optional[WaitingFor] = None
    waiting_on: Optional[list[str]] = None
    queue: Optional[str] = None
    limit_key: Optional[str] = None


@dataclass(**_model)
class TaskList:
    """A page of tasks: Task values, or TaskSummary values with summary=True."""

    SCHEMA: ClassVar[str] = "TaskList"
    tasks: list[Any]
    total: int
    page: int
    page_size: int
    partial: Optional[bool] = None


@dataclass(**_model)
class Cancelled:
    SCHEMA: ClassVar[str] = "Cancelled"
    task_id: str
    state: State
    #: "cancelled": done (it was PENDING or TIMEOUT); "requested": its worker was told.
    outcome: Literal["cancelled", "requested"]


@dataclass(**_model)
class Deleted:
    SCHEMA: ClassVar[str] = "Deleted"
    task_id: str
    deleted: bool


@dataclass(**_model)
class Progress:
    SCHEMA: ClassVar[str] = "Result.progress"
    at: dt.datetime
    percent: float
    message: Optional[str] = None
    eta_seconds: Optional[float] = None
    reported_by: Optional[str] = None


@dataclass(**_model)
class ResultError:
    SCHEMA: ClassVar[str] = "Result.error"
    code: str
    message: str
    retry_count: int
    max_retries: int
    will_retry: bool
    history: list[ErrorRecord]
    retry_at: Optional[dt.datetime] = None
    details: Optional[dict[str, Any]] = None


@dataclass(**_model)
class Result:
    """get_task_result's answer (GET /api/v1/results/{id})."""

    SCHEMA: ClassVar[str] = "Result"
    task_id: str
    task_type: str
    #: pending, processing, waiting_for_service, completed, failed, timeout, cancelled
    status: str
    state: State
    message: str
    source: str
    created_at: dt.datetime
    updated_at: dt.datetime
    completed_at: Optional[dt.datetime] = None
    result: Any = None
    error: Optional[ResultError] = None
    progress: Optional[Progress] = None
    eta_seconds: Optional[float] = None
    queue_position: Optional[int] = None
    waiting_on: Optional[list[str]] = None


@dataclass(**_model)
class ResultListItem:
    SCHEMA: ClassVar[str] = "ResultList.tasks[]"
    task_id: str
    task_type: str
    status: str
    state: State
    summary: str
    created_at: dt.datetime
    updated_at: dt.datetime
    archived: Optional[bool] = None
    waiting_on: Optional[list[str]] = None


@dataclass(**_model)
class ResultList:
    SCHEMA: ClassVar[str] = "ResultList"
    session_id: str
    status_filter: str
    tasks: list[ResultListItem]


@dataclass(**_model)
class ResultFile:
    """A result file (GET /api/v1/results/{id}/files/{name})."""

    SCHEMA: ClassVar[str] = ""
    name: str
    content_type: str
    data: bytes
    #: the file's SHA-256 (hex), from its ETag
    sha256: str


@dataclass(**_model)
class Session:
    SCHEMA: ClassVar[str] = "Session"
    session_id: str
    token: str
    created_at: dt.datetime
    expires_at: dt.datetime


@dataclass(**_model)
class Notification:
    """A session's notification: from the poll, the SSE feed or the WebSocket."""

    SCHEMA: ClassVar[str] = "Notification"
    id: str
    notification_id: str
    type: Literal["task_completed", "task_failed", "task_timeout", "task_cancelled"]
    task_id: str
    task_type: str
    message: str
    action: str
    priority: Priority
    timestamp: dt.datetime


@dataclass(**_model)
class NotificationPage:
    SCHEMA: ClassVar[str] = "NotificationPage"
    session_id: str
    notifications: list[Notification]
    cursor: str
    unread: int


@dataclass(**_model)
class TaskType:
    SCHEMA: ClassVar[str] = "TaskTypes.task_types[]"
    name: str
    handled_by: Literal["worker", "service"]
    params_schema: dict[str, Any]
    description: Optional[str] = None
    online: Optional[bool] = None
    published_by: Optional[str] = None
    services: Optional[list[str]] = None


@dataclass(**_model)
class PlanSummary:
    SCHEMA: ClassVar[str] = "PlanSummary"
    name: str
    nodes: Optional[int] = None
    outputs: Optional[int] = None
    error: Optional[str] = None


@dataclass(**_model)
class PlanNode:
    SCHEMA: ClassVar[str] = "PlanNode"
    id: str
    op: str
    kind: Literal["IO", "CPU"]
    deps: list[str]
    output: bool


@dataclass(**_model)
class PlanGraph:
    SCHEMA: ClassVar[str] = "PlanGraph"
    name: str
    nodes: list[PlanNode]
    outputs: list[str]
    endpoints: list[str]


@dataclass(**_model)
class PlanTraceLine:
    SCHEMA: ClassVar[str] = "PlanTraceLine"
    node_id: str
    op: str
    kind: Literal["IO", "CPU"]
    place: str
    start_us: int
    end_us: int
    rows_in: int
    rows_out: int
    redis_round_trips: int
    error: Optional[str] = None


@dataclass(**_model)
class Candidate:
    SCHEMA: ClassVar[str] = "PlanRun.candidates[]"
    id: int
    fields: dict[str, Any]


@dataclass(**_model)
class PlanRun:
    SCHEMA: ClassVar[str] = "PlanRun"
    request_id: str
    engine_request_id: str
    candidates: list[Candidate]
    trace: Optional[list[PlanTraceLine]] = None
    elapsed_us: Optional[int] = None


# --- issue 26's controls (not in /openapi.json until that work is merged) ---


@dataclass(**_model)
class SubmitInput:
    """One task of a batch (POST /api/v1/tasks/batch); the fields of a submit."""

    SCHEMA: ClassVar[str] = "SubmitRequest"
    task_type: str
    params: Optional[dict[str, Any]] = None
    content: Optional[str] = None
    priority: Optional[Priority] = None
    timeout: Optional[float] = None
    max_retries: Optional[int] = None
    run_at: Optional[dt.datetime] = None
    delay: Optional[float] = None
    depends_on: Optional[list[str]] = None
    partition_key: Optional[str] = None
    queue: Optional[str] = field(default=None, metadata={"since": "issue26"})
    limit_key: Optional[str] = field(default=None, metadata={"since": "issue26"})
    unique_key: Optional[str] = field(default=None, metadata={"since": "issue26"})
    unique_for: Optional[float] = field(default=None, metadata={"since": "issue26"})


@dataclass(**_model)
class ItemError:
    SCHEMA: ClassVar[str] = ""
    code: str
    message: str
    field: Optional[str] = None


@dataclass(**_model)
class BatchItem:
    """One task's outcome in a batch submit, in the order sent."""

    SCHEMA: ClassVar[str] = ""
    index: int
    #: created, duplicate or invalid
    status: str
    task_id: Optional[str] = None
    state: Optional[State] = None
    error: Optional[ItemError] = None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(**_model)
class Limit:
    """A rate and/or concurrency limit on a task type, a queue or a key."""

    SCHEMA: ClassVar[str] = ""
    scope: str
    name: str
    rate: Optional[dict[str, Any]] = None
    concurrency: Optional[int] = None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(**_model)
class Queue:
    """A named queue's figures (GET /api/v1/queues); fields beyond these
    are kept in ``extra``."""

    SCHEMA: ClassVar[str] = ""
    name: str
    paused: bool = False
    extra: dict[str, Any] = field(default_factory=dict)
