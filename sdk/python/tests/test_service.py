"""The service SDK end to end: a Python service serving tasks submitted
over HTTP to a real taskflow dev."""

from __future__ import annotations

import asyncio
import hashlib
import threading
import time

from taskflow_sdk import Fail
from tests.conftest import new_service, wait_published


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


def test_sync_handler_runs_in_a_thread_with_progress_and_file(server, client, serve):
    svc = new_service(server)
    seen = {}

    @svc.task("py.sync")
    def work(task):
        seen["thread"] = threading.current_thread().name
        task.progress(50, "half way", 1)
        url = task.put_file(f"{task.id}.txt", "text/plain", b"hello from a thread\n")
        return {"file_url": url, "summary": "done"}

    serve(svc)
    sub = client.submit("py.sync", {})
    t = client.wait(sub.task_id, 20)
    assert t.state == "COMPLETED", t
    assert seen["thread"] != threading.main_thread().name
    f = client.result_file(sub.task_id, f"{sub.task_id}.txt")
    assert f.data == b"hello from a thread\n"
    assert f.content_type.startswith("text/plain")
    assert f.sha256 == hashlib.sha256(f.data).hexdigest()
    assert t.result["file_url"] == f"/api/v1/results/{sub.task_id}/files/{sub.task_id}.txt"


def test_permanent_failure_goes_to_the_dlq_with_code_and_details(server, client, serve):
    svc = new_service(server)

    @svc.task("py.fail")
    async def fail(task):
        raise Fail("INSUFFICIENT_DATA", "not enough data", details={"have": 1, "need": 3})

    serve(svc)
    sub = client.submit("py.fail", {}, max_retries=3)
    t = client.wait(sub.task_id, 20)
    assert t.state == "DLQ", t
    assert t.retry_count == 0  # permanent: no retry spent
    assert t.error_type == "INSUFFICIENT_DATA"
    r = client.result(sub.task_id)
    assert r.status == "failed" and r.error is not None
    assert r.error.code == "INSUFFICIENT_DATA" and r.error.details == {"have": 1, "need": 3}


def test_an_exception_is_an_internal_error_not_retried(server, client, serve):
    svc = new_service(server)

    @svc.task("py.bad")
    async def bad(task):
        return ["not", "an", "object"]

    serve(svc)
    sub = client.submit("py.bad", {}, max_retries=2)
    t = client.wait(sub.task_id, 20)
    assert t.state == "DLQ" and t.error_type == "INTERNAL_ERROR", t
    assert "not a JSON object" in (t.last_error or "")


def test_retryable_failure_is_retried_with_a_new_attempt_and_token(server, client, serve):
    svc = new_service(server)
    attempts = []

    @svc.task("py.retry")
    async def flaky(task):
        attempts.append((task.attempt, task._token))
        if task.attempt == 1:
            raise Fail("SERVICE_UNAVAILABLE", "try again", retryable=True)
        return {"summary": f"attempt {task.attempt}"}

    serve(svc)
    sub = client.submit("py.retry", {}, max_retries=2)
    t = client.wait(sub.task_id, 30)
    assert t.state == "COMPLETED", t
    assert [a for a, _ in attempts] == [1, 2]
    assert attempts[0][1] != attempts[1][1], "each attempt has its own fencing token"
    assert t.result["summary"] == "attempt 2"


def test_progress_is_shown_while_the_task_runs(server, client, serve):
    svc = new_service(server)
    release = threading.Event()

    @svc.task("py.progress")
    async def slow(task):
        await task.progress(40, "rendering charts", 12)
        while not release.is_set():
            await asyncio.sleep(0.05)
        return {"summary": "rendered"}

    serve(svc)
    sub = client.submit("py.progress", {})
    deadline = time.monotonic() + 15
    r = client.result(sub.task_id)
    while (r.progress is None) and time.monotonic() < deadline:
        time.sleep(0.1)
        r = client.result(sub.task_id)
    release.set()
    assert r.progress is not None, r
    assert r.status == "processing"
    assert r.progress.percent == 40 and r.progress.message == "rendering charts"
    assert r.progress.reported_by == svc.name
    assert client.wait(sub.task_id, 15).state == "COMPLETED"


def test_cancel_stops_a_running_coroutine_handler(server, client, serve):
    svc = new_service(server)
    started = threading.Event()
    stopped = threading.Event()

    @svc.task("py.cancel")
    async def forever(task):
        started.set()
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            stopped.set()
            raise
        return {}

    serve(svc)
    sub = client.submit("py.cancel", {})
    assert started.wait(15)
    c = client.cancel(sub.task_id)
    assert c.outcome == "requested"
    t = client.wait(sub.task_id, 15)
    assert t.state == "CANCELLED", t
    assert stopped.is_set()


def test_cancel_is_seen_by_a_thread_handler(server, client, serve):
    svc = new_service(server)
    started = threading.Event()

    @svc.task("py.stop")
    def poll(task):
        started.set()
        deadline = time.monotonic() + 30
        while not task.cancelled and time.monotonic() < deadline:
            time.sleep(0.02)
        raise RuntimeError("stopped")

    serve(svc)
    sub = client.submit("py.stop", {})
    assert started.wait(15)
    client.cancel(sub.task_id)
    t = client.wait(sub.task_id, 15)
    assert t.state == "CANCELLED", t


def test_registration_publishes_types_concurrency_and_spec(server, client, serve):
    svc = new_service(server, concurrency=7)
    schema = {"type": "object", "properties": {"n": {"type": "integer", "minimum": 1}}, "required": ["n"],
              "additionalProperties": False}

    @svc.task("py.spec", description="Counts to n.", params_schema=schema, notify="Counted to {n}")
    async def count(task):
        return {"summary": str(task.params["n"])}

    serve(svc)
    r = server.redis()
    h = r.hgetall("{" + server.namespace + "}:agent:service:" + svc.name)
    assert h["types"] == "py.spec" and h["consumer"] == svc.consumer
    n, until = h["concurrency:" + svc.consumer].split()
    assert n == "7" and int(until) > time.time() * 1000
    assert 0 < r.pttl("{" + server.namespace + "}:agent:service:" + svc.name) <= 1500
    assert svc.name in r.smembers("{" + server.namespace + "}:agent:services")
    # the API reads the published spec (at most every 2 s) and checks params against it
    wait_published(client, "py.spec", svc.name)
    tt = {t.name: t for t in client.task_types()}["py.spec"]
    assert tt.published_by == svc.name and tt.description == "Counts to n." and tt.online
    from taskflow_sdk import ValidationError
    try:
        client.submit("py.spec", {"n": 0})
    except ValidationError as e:
        assert e.field == "params.n" and e.status == 422
    else:
        raise AssertionError("a param breaking the published schema was accepted")
    assert client.wait(client.submit("py.spec", {"n": 3}).task_id, 15).result["summary"] == "3"


def test_large_files_go_to_the_artifact_directory(server, client, serve):
    svc = new_service(server, artifact_dir=server.artifact_dir)
    small = new_service(server)  # no directory: a large file is refused
    big = bytes(range(256)) * (9 * 4096)  # 9 MiB

    @svc.task("py.files")
    async def write(task):
        return {"file_url": await task.put_file("big.bin", "application/octet-stream", big)}

    @small.task("py.sync")
    async def refuse(task):
        from taskflow_sdk import FileTooLarge
        try:
            await task.put_file("big.bin", "application/octet-stream", big)
        except FileTooLarge as e:
            raise Fail("TOO_LARGE", str(e))
        return {}

    serve(svc)
    serve(small)
    sub = client.submit("py.files", {})
    t = client.wait(sub.task_id, 30)
    assert t.state == "COMPLETED", t
    f = client.result_file(t.result["file_url"])
    assert len(f.data) == len(big) and f.data == big and f.sha256 == hashlib.sha256(big).hexdigest()
    h = server.redis().hgetall("{" + server.namespace + "}:agent:artifact:" + sub.task_id + ":big.bin")
    assert h["location"] == "dir" and "data" not in h and h["size"] == str(len(big))
    refused = client.wait(client.submit("py.sync", {}).task_id, 30)
    assert refused.state == "DLQ" and refused.error_type == "TOO_LARGE", refused
