"""taskflow's Python SDK: a typed REST client (sync and asyncio) and the
library for writing an external service (docs/python.md)."""

from ._version import __version__
from .aio import AsyncClient
from .client import Client
from .errors import (APIError, AuthenticationError, BadRequestError, ConflictError, NotFoundError,
                     PayloadTooLargeError, PermissionDeniedError, RateLimitedError, ServerError, TaskflowError,
                     ValidationError, WaitTimeout)
from .models import (BatchItem, Cancelled as CancelOutcome, Notification, NotificationPage, PlanGraph, PlanRun,
                     PlanSummary, Result, ResultFile, Session, Submitted, SubmitInput, Task, TaskList, TaskSummary,
                     TaskType)
from .service import Cancelled, Fail, FileTooLarge, Service, TypeInfo
from .service import Task as ServiceTask

__all__ = [
    "__version__", "AsyncClient", "Client", "APIError", "AuthenticationError", "BadRequestError", "ConflictError",
    "NotFoundError", "PayloadTooLargeError", "PermissionDeniedError", "RateLimitedError", "ServerError",
    "TaskflowError", "ValidationError", "WaitTimeout", "BatchItem", "CancelOutcome", "Notification",
    "NotificationPage", "PlanGraph", "PlanRun", "PlanSummary", "Result", "ResultFile", "Session", "Submitted",
    "SubmitInput", "Task", "TaskList", "TaskSummary", "TaskType", "Cancelled", "Fail", "FileTooLarge", "Service",
    "ServiceTask", "TypeInfo",
]
