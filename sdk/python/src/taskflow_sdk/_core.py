"""What the sync and asyncio clients share: each API call as a request
(method, path, query, body, headers) and the function that decodes its
answer. client.Client and aio.AsyncClient only send them."""

from __future__ import annotations

import datetime as dt
import json
import os
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Optional, Sequence, Union
from urllib.parse import quote

import httpx

from . import models as m
from ._decode import from_json, to_json
from ._version import __version__
from .errors import APIError, TaskflowError, from_response

DEFAULT_URL = "http://127.0.0.1:8080"
USER_AGENT = f"taskflow-sdk-python/{__version__}"

SubmitLike = Union[m.SubmitInput, Mapping[str, Any]]


def seg(s: str) -> str:
    """One path segment, escaped."""
    if not isinstance(s, str) or s == "":
        raise ValueError("an id or name must be a non-empty string")
    return quote(s, safe="")


@dataclass
class Req:
    method: str
    path: str
    decode: Callable[[httpx.Response], Any]
    params: Optional[dict] = None
    body: Any = None
    headers: Optional[dict] = None


def check(resp: httpx.Response) -> None:
    """Raises the typed APIError of a failed answer."""
    if resp.status_code < 400:
        return
    try:
        body = resp.json()
    except ValueError:
        body = resp.text
    raise from_response(resp.status_code, body, resp.headers)


def _json(resp: httpx.Response) -> Any:
    try:
        return resp.json()
    except ValueError as e:
        raise TaskflowError(f"{resp.request.method} {resp.request.url.path}: answer is not JSON: {e}") from e


def model(cls):
    return lambda resp: from_json(cls, _json(resp))


def _submitted(resp: httpx.Response) -> m.Submitted:
    s = from_json(m.Submitted, _json(resp))
    s.replayed = resp.headers.get("idempotent-replayed", "").lower() == "true"
    s.status_code = resp.status_code
    return s


def _task_list(summary: bool):
    def dec(resp: httpx.Response) -> m.TaskList:
        d = _json(resp)
        tl = from_json(m.TaskList, d)
        cls = m.TaskSummary if summary else m.Task
        tl.tasks = [from_json(cls, t) for t in d.get("tasks") or []]
        return tl
    return dec


def _file(name: str):
    def dec(resp: httpx.Response) -> m.ResultFile:
        return m.ResultFile(name=name, content_type=resp.headers.get("content-type", "application/octet-stream"),
                            data=resp.content, sha256=resp.headers.get("etag", "").strip('"'))
    return dec


def _list_of(cls, key: str):
    return lambda resp: [from_json(cls, x) for x in (_json(resp).get(key) or [])]


def _raw(resp: httpx.Response) -> Any:
    return _json(resp) if resp.content else None


def check_idempotency_key(key: Optional[str]) -> Optional[dict]:
    if key is None:
        return None
    if not (1 <= len(key) <= 255) or any(not (0x20 < ord(c) < 0x7F) for c in key):
        raise ValueError("idempotency_key: want 1 to 255 printable ASCII characters without spaces")
    return {"Idempotency-Key": key}


def split_file_url(task_id_or_url: str, name: Optional[str]) -> tuple[str, str]:
    """(task id, name) of result_file's arguments: both, or a file_url."""
    if name is not None:
        return task_id_or_url, name
    prefix = "/api/v1/results/"
    path = task_id_or_url.split("://", 1)[-1]
    path = path[path.find("/"):] if "://" in task_id_or_url else path
    if path.startswith(prefix) and path[len(prefix):].count("/files/") == 1:
        tid, fname = path[len(prefix):].split("/files/")
        if tid and fname and "/" not in tid + fname:
            return tid, fname
    raise ValueError(f"{task_id_or_url!r}: give a task id and a file name, or a file_url /api/v1/results/<id>/files/<name>")


def _opt(d: dict, **kw: Any) -> dict:
    for k, v in kw.items():
        if v is not None:
            d[k] = v
    return d


def submit_body(task_type: str, params: Optional[Mapping[str, Any]], **fields: Any) -> dict:
    if not task_type:
        raise ValueError("task_type is required")
    body: dict = {"task_type": task_type}
    if params is not None:
        body["params"] = dict(params)
    run_at = fields.pop("run_at", None)
    if isinstance(run_at, dt.datetime):
        run_at = to_json(run_at)
    return _opt(body, run_at=run_at, **fields)


def batch_item(t: SubmitLike) -> dict:
    if isinstance(t, m.SubmitInput):
        return to_json(t)
    if isinstance(t, Mapping):
        return to_json(dict(t))
    raise TypeError(f"a batch item is a SubmitInput or a mapping, not {type(t).__name__}")


class Endpoints:
    """The requests of every API call; the clients' public methods build
    one here and send it."""

    # tasks
    def _r_submit(self, task_type, params, idempotency_key, **fields) -> Req:
        return Req("POST", "/api/v1/tasks", _submitted, body=submit_body(task_type, params, **fields),
                   headers=check_idempotency_key(idempotency_key))

    def _r_summarize(self, content: str, idempotency_key) -> Req:
        return Req("POST", "/api/v1/tasks/summarize", _submitted, body={"content": content},
                   headers=check_idempotency_key(idempotency_key))

    def _r_submit_batch(self, tasks: Sequence[SubmitLike], idempotency_key) -> Req:
        items = [batch_item(t) for t in tasks]
        return Req("POST", "/api/v1/tasks/batch", _list_of(m.BatchItem, "results"), body={"tasks": items},
                   headers=check_idempotency_key(idempotency_key))

    def _r_get(self, task_id: str) -> Req:
        return Req("GET", f"/api/v1/tasks/{seg(task_id)}", model(m.Task))

    def _r_list(self, *, status=None, task_type=None, priority=None, session_id=None, sort_by=None,
                sort_order=None, page=None, page_size=None, summary=False) -> Req:
        q = _opt({}, status=status, task_type=task_type, priority=priority, session_id=session_id, sort_by=sort_by,
                 sort_order=sort_order, page=page, page_size=page_size)
        if summary:
            q["summary"] = "true"
        return Req("GET", "/api/v1/tasks", _task_list(summary), params=q)

    def _r_cancel(self, task_id: str) -> Req:
        return Req("POST", f"/api/v1/tasks/{seg(task_id)}/cancel", model(m.Cancelled))

    def _r_retry(self, task_id: str) -> Req:
        return Req("POST", f"/api/v1/tasks/{seg(task_id)}/retry", _submitted)

    def _r_delete(self, task_id: str) -> Req:
        return Req("DELETE", f"/api/v1/tasks/{seg(task_id)}", model(m.Deleted))

    # results
    def _r_result(self, task_id: str) -> Req:
        return Req("GET", f"/api/v1/results/{seg(task_id)}", model(m.Result))

    def _r_results(self, status_filter=None, limit=None) -> Req:
        return Req("GET", "/api/v1/results", model(m.ResultList), params=_opt({}, status_filter=status_filter, limit=limit))

    def _r_result_file(self, task_id: str, name: str) -> Req:
        return Req("GET", f"/api/v1/results/{seg(task_id)}/files/{seg(name)}", _file(name))

    # sessions, notifications
    def _r_open_session(self) -> Req:
        return Req("POST", "/api/v1/sessions", model(m.Session))

    def _r_notifications(self, after=None, limit=None, mark_read=None, session_id=None) -> Req:
        q = _opt({}, after=after, limit=limit, session_id=session_id)
        if mark_read is not None:
            q["mark_read"] = "true" if mark_read else "false"
        return Req("GET", "/api/v1/notifications", model(m.NotificationPage), params=q)

    # task types, plans
    def _r_task_types(self) -> Req:
        return Req("GET", "/api/v1/task-types", _list_of(m.TaskType, "task_types"))

    def _r_plans(self) -> Req:
        return Req("GET", "/api/v1/plans", _list_of(m.PlanSummary, "plans"))

    def _r_plan(self, name: str) -> Req:
        return Req("GET", f"/api/v1/plans/{seg(name)}", model(m.PlanGraph))

    def _r_execute_plan(self, name: str, user_id, *, request_id=None, param_overrides=None, deadline_ms=None,
                        node_timeout_ms=None, trace=False) -> Req:
        body = _opt({"user_id": user_id}, request_id=request_id, param_overrides=param_overrides,
                    deadline_ms=deadline_ms, node_timeout_ms=node_timeout_ms)
        return Req("POST", f"/api/v1/plans/{seg(name)}/execute", model(m.PlanRun), body=body,
                   params={"trace": "1"} if trace else None)

    # queues, pause, limits (issue 26)
    def _r_queues(self) -> Req:
        return Req("GET", "/api/v1/queues", _list_of(m.Queue, "queues"))

    def _r_queue(self, name: str) -> Req:
        return Req("GET", f"/api/v1/queues/{seg(name)}", model(m.Queue))

    def _r_pause_queue(self, name: str, pause: bool) -> Req:
        return Req("POST", f"/api/v1/queues/{seg(name)}/{'pause' if pause else 'resume'}", _raw)

    def _r_pause_task_type(self, task_type: str, pause: bool) -> Req:
        return Req("POST", f"/api/v1/task-types/{seg(task_type)}/{'pause' if pause else 'resume'}", _raw)

    def _r_limits(self) -> Req:
        return Req("GET", "/api/v1/limits", _list_of(m.Limit, "limits"))

    def _r_set_limit(self, scope: str, name: str, rate: Optional[tuple], concurrency: Optional[int]) -> Req:
        if scope not in ("task_type", "queue", "key"):
            raise ValueError("scope: want task_type, queue or key")
        body = {"scope": scope, "name": name,
                "rate": None if rate is None else {"limit": rate[0], "per": rate[1]},
                "concurrency": concurrency}
        return Req("PUT", "/api/v1/limits", _raw, body=body)

    def _r_delete_limit(self, scope: str, name: str) -> Req:
        return Req("DELETE", f"/api/v1/limits/{seg(scope)}/{seg(name)}", _raw)


def env_url(url: Optional[str]) -> str:
    return (url or os.environ.get("TASKFLOW_URL") or DEFAULT_URL).rstrip("/")


def env_token(token: Optional[str]) -> Optional[str]:
    if token is not None:
        return token
    return os.environ.get("TASKFLOW_TOKEN") or os.environ.get("TASKFLOW_ADMIN_KEY") or None


def headers(token: Optional[str]) -> dict:
    h = {"User-Agent": USER_AGENT, "Accept": "application/json"}
    if token:
        h["Authorization"] = f"Bearer {token}"
    return h


def build(http_request: Callable[..., Any], req: Req) -> dict:
    kw: dict = {"params": req.params or None, "headers": req.headers or None}
    if req.body is not None:
        kw["content"] = json.dumps(req.body).encode()
        kw["headers"] = {**(req.headers or {}), "Content-Type": "application/json"}
    return kw


def notification_from_event(data: str) -> m.Notification:
    return from_json(m.Notification, json.loads(data))


__all__ = ["APIError", "Endpoints", "Req"]
