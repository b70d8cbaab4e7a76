"""The errors the SDK raises.

Every answer of the API that is not a success is an :class:`APIError`
carrying the API's envelope ``{"error": {"code", "message", "field"}}``:
``code`` is stable and machine-readable, ``field`` names the request field,
query parameter or header at fault (``params.quarter``, ``limit``,
``Idempotency-Key``) when there is one. A subclass per kind of failure
lets a caller catch what it can act on::

    try:
        client.submit("report.generate", {"quarter": "Q5"})
    except ValidationError as e:
        print(e.field, e.message)   # params.quarter ...
"""

from __future__ import annotations

from typing import Any, Optional


class TaskflowError(Exception):
    """The base of every error the SDK raises."""


class APIError(TaskflowError):
    """A non-success answer of the API."""

    def __init__(self, status: int, code: str, message: str, field: Optional[str] = None,
                 *, retry_after: Optional[float] = None, body: Any = None) -> None:
        super().__init__(f"{status} {code}: {message}" + (f" (field {field})" if field else ""))
        self.status = status
        self.code = code
        self.message = message
        self.field = field
        #: seconds, from Retry-After (429)
        self.retry_after = retry_after
        self.body = body


class BadRequestError(APIError):
    """400: the request could not be read (bad JSON, unknown field or parameter)."""


class AuthenticationError(APIError):
    """401: no credentials, or a token that is neither a key nor a live session's."""


class PermissionDeniedError(APIError):
    """403: the credentials may not do this (a viewer key changing something)."""


class NotFoundError(APIError):
    """404: no such task, file, queue, plan (or another session's task)."""


class ConflictError(APIError):
    """409: the task's state forbids the action, or an Idempotency-Key is in use."""


class PayloadTooLargeError(APIError):
    """413: the body or its content is over the server's limit."""


class ValidationError(APIError):
    """422: well-formed but a value is not acceptable; ``field`` names it."""


class RateLimitedError(APIError):
    """429: too many requests; ``retry_after`` says when to try again."""


class ServerError(APIError):
    """5xx: the server failed (503 unavailable: Redis does not answer)."""


class WaitTimeout(TaskflowError):
    """wait() gave up before the task reached a final state."""

    def __init__(self, task_id: str, state: str, waited: float) -> None:
        super().__init__(f"task {task_id} is still {state} after {waited:.1f}s")
        self.task_id = task_id
        self.state = state
        self.waited = waited


_BY_STATUS = {400: BadRequestError, 401: AuthenticationError, 403: PermissionDeniedError,
              404: NotFoundError, 409: ConflictError, 413: PayloadTooLargeError,
              422: ValidationError, 429: RateLimitedError}


def from_response(status: int, body: Any, headers: Any = None) -> APIError:
    """The typed error of an answer with this status and decoded body."""
    code, message, fld = "http_%d" % status, "", None
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        e = body["error"]
        code = str(e.get("code") or code)
        message = str(e.get("message") or "")
        fld = e.get("field") or None
    elif isinstance(body, str):
        message = body[:500]
    retry_after = None
    if headers is not None:
        ra = headers.get("retry-after")
        if ra:
            try:
                retry_after = float(ra)
            except ValueError:
                retry_after = None
    cls = _BY_STATUS.get(status, ServerError if status >= 500 else APIError)
    return cls(status, code, message or f"HTTP {status}", fld, retry_after=retry_after, body=body)
