"""The asyncio client: the same calls as the sync one, awaited."""

from __future__ import annotations

import asyncio
import inspect

import pytest

from taskflow_sdk import AsyncClient, Client, NotFoundError, ValidationError
from taskflow_sdk.models import Task
from tests.conftest import new_service


def test_same_calls_as_the_sync_client():
    sync = {n for n, f in inspect.getmembers(Client, inspect.isfunction) if not n.startswith("_")}
    aio = {n for n, f in inspect.getmembers(AsyncClient, inspect.isfunction) if not n.startswith("_")}
    assert sync == aio
    for n in aio - {"with_token", "notification_stream"}:
        assert inspect.iscoroutinefunction(getattr(AsyncClient, n)), n
    assert inspect.isasyncgenfunction(AsyncClient.notification_stream)
    for n in sync:
        ps = list(inspect.signature(getattr(Client, n)).parameters)
        pa = list(inspect.signature(getattr(AsyncClient, n)).parameters)
        assert ps == pa, n


async def test_submit_wait_list_errors(server):
    async with AsyncClient(server.url, server.admin_key) as c:
        subs = await asyncio.gather(*(c.submit("sleep", {"duration_ms": 5}) for _ in range(5)))
        done = await asyncio.gather(*(c.wait(s.task_id, 20) for s in subs))
        assert all(isinstance(t, Task) and t.state == "COMPLETED" for t in done)
        lst = await c.list(task_type="sleep", summary=True)
        assert {s.task_id for s in subs} <= {t.task_id for t in lst.tasks}
        with pytest.raises(ValidationError) as e:
            await c.submit("noop", timeout=-1)
        assert e.value.field == "timeout"
        with pytest.raises(NotFoundError):
            await c.get("01a00000-0000-7000-8000-000000000000")


async def test_notification_stream_is_an_async_iterator_and_files(server, serve):
    svc = new_service(server)

    @svc.task("py.files")
    async def report(task):
        url = await task.put_file(f"{task.id}.csv", "text/csv", "a,b\n1,2\n")
        return {"file_url": url, "summary": "written"}

    serve(svc)
    async with AsyncClient(server.url, server.admin_key) as admin:
        s = await admin.open_session()
    async with AsyncClient(server.url, s.token) as c:
        stream = c.notification_stream()
        first = asyncio.ensure_future(stream.__anext__())
        await asyncio.sleep(0.2)
        sub = await c.submit("py.files", {})
        n = await asyncio.wait_for(first, 20)
        await stream.aclose()
        assert n.task_id == sub.task_id and n.type == "task_completed"
        t = await c.get(sub.task_id)
        f = await c.result_file(t.result["file_url"])
        assert f.data == b"a,b\n1,2\n" and f.content_type.startswith("text/csv")
