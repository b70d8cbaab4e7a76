"""The asyncio REST client: the same calls as client.Client, awaited."""

from __future__ import annotations

import asyncio
import time
from typing import Any, AsyncIterator, Mapping, Optional, Sequence

import httpx

from . import _core, models as m
from ._sse import SSEParser
from .errors import APIError, WaitTimeout


class AsyncClient(_core.Endpoints):
    """An asyncio client of taskflow's REST API (/api/v1); see Client.

    ``url`` defaults to ``TASKFLOW_URL`` (else http://127.0.0.1:8080), the
    bearer ``token`` to ``TASKFLOW_TOKEN`` (else ``TASKFLOW_ADMIN_KEY``).
    Every failed call raises a typed :class:`taskflow_sdk.APIError`.
    Use it as a context manager, or call :meth:`close`.
    """

    def __init__(self, url: Optional[str] = None, token: Optional[str] = None, *, timeout: float = 10.0,
                 http: Optional[httpx.AsyncClient] = None) -> None:
        self.url = _core.env_url(url)
        self.token = _core.env_token(token)
        self._own = http is None
        self._http = http or httpx.AsyncClient(timeout=timeout)

    async def __aenter__(self) -> "AsyncClient":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    async def close(self) -> None:
        if self._own:
            await self._http.aclose()

    def with_token(self, token: Optional[str]) -> "AsyncClient":
        """A client of the same server with another token (sharing connections)."""
        c = AsyncClient(self.url, token, http=self._http)
        c.token = token
        return c

    async def _send(self, req: _core.Req) -> Any:
        kw = _core.build(self._http.request, req)
        kw["headers"] = {**_core.headers(self.token), **(kw["headers"] or {})}
        resp = await self._http.request(req.method, self.url + req.path, **kw)
        _core.check(resp)
        return req.decode(resp)

    # --- tasks ---

    async def submit(self, task_type: str, params: Optional[Mapping[str, Any]] = None, *, content: Optional[str] = None,
               priority: Optional[m.Priority] = None, timeout: Optional[float] = None,
               max_retries: Optional[int] = None, run_at: Any = None, delay: Optional[float] = None,
               depends_on: Optional[Sequence[str]] = None, partition_key: Optional[str] = None,
               queue: Optional[str] = None, limit_key: Optional[str] = None, unique_key: Optional[str] = None,
               unique_for: Optional[float] = None, idempotency_key: Optional[str] = None) -> m.Submitted:
        """Submits a task (POST /api/v1/tasks). With ``unique_key`` a live
        task with that key is answered instead (``duplicate`` True); with
        ``idempotency_key`` a repeated call answers the first call's answer
        (``replayed`` True)."""
        return await self._send(self._r_submit(task_type, params, idempotency_key, content=content, priority=priority,
                                         timeout=timeout, max_retries=max_retries, run_at=run_at, delay=delay,
                                         depends_on=list(depends_on) if depends_on is not None else None,
                                         partition_key=partition_key, queue=queue, limit_key=limit_key,
                                         unique_key=unique_key, unique_for=unique_for))

    async def summarize(self, content: str, *, idempotency_key: Optional[str] = None) -> m.Submitted:
        return await self._send(self._r_summarize(content, idempotency_key))

    async def submit_batch(self, tasks: Sequence[_core.SubmitLike], *, idempotency_key: Optional[str] = None) -> list[m.BatchItem]:
        """Submits up to 1000 tasks in one call; one result per task, in order."""
        return await self._send(self._r_submit_batch(tasks, idempotency_key))

    async def get(self, task_id: str) -> m.Task:
        return await self._send(self._r_get(task_id))

    async def list(self, *, status: Optional[str] = None, task_type: Optional[str] = None, priority: Optional[str] = None,
             session_id: Optional[str] = None, sort_by: Optional[str] = None, sort_order: Optional[str] = None,
             page: Optional[int] = None, page_size: Optional[int] = None, summary: bool = False) -> m.TaskList:
        return await self._send(self._r_list(status=status, task_type=task_type, priority=priority, session_id=session_id,
                                       sort_by=sort_by, sort_order=sort_order, page=page, page_size=page_size,
                                       summary=summary))

    async def cancel(self, task_id: str) -> m.Cancelled:
        return await self._send(self._r_cancel(task_id))

    async def retry(self, task_id: str) -> m.Submitted:
        return await self._send(self._r_retry(task_id))

    async def delete(self, task_id: str) -> m.Deleted:
        return await self._send(self._r_delete(task_id))

    async def wait(self, task_id: str, timeout: float = 60.0, *, poll_interval: float = 0.1,
             max_interval: float = 1.0) -> m.Task:
        """Polls the task until it is COMPLETED, in the DLQ or CANCELLED and
        returns it; raises WaitTimeout after ``timeout`` seconds."""
        start = time.monotonic()
        interval = poll_interval
        while True:
            t = await self.get(task_id)
            if t.done:
                return t
            waited = time.monotonic() - start
            if waited >= timeout:
                raise WaitTimeout(task_id, t.state, waited)
            await asyncio.sleep(min(interval, max(0.0, timeout - waited)))
            interval = min(interval * 1.5, max_interval)

    # --- results ---

    async def result(self, task_id: str) -> m.Result:
        return await self._send(self._r_result(task_id))

    async def results(self, *, status_filter: Optional[str] = None, limit: Optional[int] = None) -> m.ResultList:
        return await self._send(self._r_results(status_filter, limit))

    async def result_file(self, task_id: str, name: Optional[str] = None) -> m.ResultFile:
        """A result file a service stored: ``result_file(task_id, name)``, or
        ``result_file(file_url)`` with the result's file_url."""
        return await self._send(self._r_result_file(*_core.split_file_url(task_id, name)))

    # --- sessions and notifications ---

    async def open_session(self) -> m.Session:
        """Opens a session; use ``with_token(session.token)`` to act as it."""
        return await self._send(self._r_open_session())

    async def notifications(self, *, after: Optional[str] = None, limit: Optional[int] = None,
                      mark_read: Optional[bool] = None, session_id: Optional[str] = None) -> m.NotificationPage:
        return await self._send(self._r_notifications(after, limit, mark_read, session_id))

    async def notification_stream(self, *, after: Optional[str] = None, reconnect: bool = True) -> AsyncIterator[m.Notification]:
        """The session's notifications as they come (the SSE feed), the
        unread ones first (or those after ``after``; "0": from the oldest
        kept). A session's other answers deliver its unread notifications
        too (and mark them read), so a client that also polls passes
        ``after``. It reconnects with
        Last-Event-ID when the connection drops, so nothing is missed or
        repeated; stop iterating (or ``aclose()`` the iterator) to end."""
        last: Optional[str] = None
        backoff = 0.2
        while True:
            h = {**_core.headers(self.token), "Accept": "text/event-stream"}
            q = {}
            if last is not None:
                h["Last-Event-ID"] = last
            elif after is not None:
                q["after"] = after
            try:
                async with self._http.stream("GET", self.url + "/api/v1/notifications/stream", headers=h, params=q,
                                       timeout=httpx.Timeout(10.0, read=None)) as resp:
                    if resp.status_code >= 400:
                        await resp.aread()
                        _core.check(resp)
                    backoff = 0.2
                    p = SSEParser()
                    async for line in resp.aiter_lines():
                        ev = p.feed(line.rstrip("\r\n"))
                        if ev is None:
                            continue
                        if ev.event == "notification":
                            n = _core.notification_from_event(ev.data)
                            last = ev.id or n.id
                            yield n
                        elif ev.event == "shutdown":
                            break
            except APIError:
                raise
            except httpx.TransportError:
                if not reconnect:
                    raise
            if not reconnect:
                return
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, 5.0)

    # --- task types and plans ---

    async def task_types(self) -> list[m.TaskType]:
        return await self._send(self._r_task_types())

    async def plans(self) -> list[m.PlanSummary]:
        return await self._send(self._r_plans())

    async def plan(self, name: str) -> m.PlanGraph:
        return await self._send(self._r_plan(name))

    async def execute_plan(self, name: str, user_id: Any, *, request_id: Optional[str] = None,
                     param_overrides: Optional[Mapping[str, Any]] = None, deadline_ms: Optional[float] = None,
                     node_timeout_ms: Optional[float] = None, trace: bool = False) -> m.PlanRun:
        return await self._send(self._r_execute_plan(name, user_id, request_id=request_id,
                                               param_overrides=dict(param_overrides) if param_overrides else None,
                                               deadline_ms=deadline_ms, node_timeout_ms=node_timeout_ms, trace=trace))

    # --- queues, pause, limits (operator) ---

    async def queues(self) -> list[m.Queue]:
        return await self._send(self._r_queues())

    async def queue(self, name: str) -> m.Queue:
        return await self._send(self._r_queue(name))

    async def pause_queue(self, name: str) -> Any:
        return await self._send(self._r_pause_queue(name, True))

    async def resume_queue(self, name: str) -> Any:
        return await self._send(self._r_pause_queue(name, False))

    async def pause_task_type(self, task_type: str) -> Any:
        return await self._send(self._r_pause_task_type(task_type, True))

    async def resume_task_type(self, task_type: str) -> Any:
        return await self._send(self._r_pause_task_type(task_type, False))

    async def limits(self) -> list[m.Limit]:
        return await self._send(self._r_limits())

    async def set_limit(self, scope: str, name: str, *, rate: Optional[tuple[int, float]] = None,
                  concurrency: Optional[int] = None) -> Any:
        """Sets a limit: ``rate=(limit, per_seconds)`` and/or ``concurrency``."""
        return await self._send(self._r_set_limit(scope, name, rate, concurrency))

    async def delete_limit(self, scope: str, name: str) -> Any:
        return await self._send(self._r_delete_limit(scope, name))

    async def server_version(self) -> str:
        """The API's version (/openapi.json's info.version)."""
        resp = await self._http.get(self.url + "/openapi.json", headers=_core.headers(self.token))
        _core.check(resp)
        return resp.json()["info"]["version"]
