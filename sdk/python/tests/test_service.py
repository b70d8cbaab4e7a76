"""The service SDK end to end: a Python service serving tasks submitted
over HTTP to a real taskflow dev."""

from __future__ import annotations

import asyncio
import hashlib
import threading
import time

from taskflow_sdk import Fail
from tests.conftest import new_service


def test_async_handler_completes(server, client, serve):
    svc = new_service(server)

    @svc.task("py.echo", description="Echoes its params.")
    async def echo(task):
        return {"summary": "echoed", "metadata": {"params": task.params, "attempt": task.attempt}}

    serve(svc)
    sub = client.submit("py.echo", {"x": 1})
    assert sub.state == "PENDING" and sub.status_code == 201
    t = client.wait(sub.task_id, 20)
    assert t.state == "COMPLETED", t
    assert t.result["summary"] == "echoed"
    assert t.result["metadata"] == {"params": {"x": 1}, "attempt": 1}
