"""The sync REST client against a real taskflow dev (built-in task types)."""

from __future__ import annotations

import datetime as dt
import threading
import time
import uuid

import httpx
import pytest

from taskflow_sdk import (AuthenticationError, BadRequestError, Client, ConflictError, NotFoundError, SubmitInput,
                          ValidationError, WaitTimeout)
from taskflow_sdk.models import Task, TaskSummary


def test_submit_get_wait(client):
    sub = client.submit("sleep", {"duration_ms": 10}, priority="high", max_retries=1, timeout=30)
    assert sub.state == "PENDING" and sub.status_code == 201 and not sub.replayed
    t = client.wait(sub.task_id, 20)
    assert isinstance(t, Task) and t.state == "COMPLETED" and t.done
    assert t.priority == "high" and t.max_retries == 1 and t.timeout == 30
    assert isinstance(t.created_at, dt.datetime) and t.created_at.tzinfo is not None
    assert [c.to for c in t.state_history][-1] == "COMPLETED"
    assert t.state_history[0].from_ in (None, "")


def test_wait_gives_up(client):
    sub = client.submit("sleep", {"duration_ms": 5000})
    with pytest.raises(WaitTimeout) as e:
        client.wait(sub.task_id, 0.3)
    assert e.value.task_id == sub.task_id and e.value.state in ("PENDING", "ACTIVE")
    client.cancel(sub.task_id)


def test_list_full_and_summaries(client):
    ids = {client.submit("noop").task_id for _ in range(3)}
    for i in ids:
        client.wait(i, 20)
    full = client.list(task_type="noop", page_size=50)
    assert all(isinstance(t, Task) for t in full.tasks) and full.total >= 3
    assert ids <= {t.task_id for t in full.tasks}
    summ = client.list(task_type="noop", summary=True, sort_by="created_at", sort_order="asc", page=1, page_size=2)
    assert all(isinstance(t, TaskSummary) for t in summ.tasks) and summ.page_size == 2 and len(summ.tasks) == 2


def test_cancel_retry_delete(client):
    sub = client.submit("noop", delay=3600)
    c = client.cancel(sub.task_id)
    assert c.outcome == "cancelled" and c.state == "CANCELLED"
    with pytest.raises(ConflictError) as e:
        client.cancel(sub.task_id)
    assert e.value.code == "task_not_cancellable" and e.value.status == 409
    d = client.delete(sub.task_id)
    assert d.deleted and d.task_id == sub.task_id
    with pytest.raises(NotFoundError) as e:
        client.get(sub.task_id)
    assert e.value.code == "task_not_found"
    dead = client.submit("sleep", {"duration_ms": 1, "fail": "permanent"}, max_retries=0)
    assert client.wait(dead.task_id, 20).state == "DLQ"
    again = client.retry(dead.task_id)
    assert again.task_id == dead.task_id and again.state == "PENDING"


def test_errors_name_the_field(client):
    with pytest.raises(ValidationError) as e:
        client.submit("noop", priority="urgent")
    assert e.value.field == "priority" and e.value.code == "validation_failed" and e.value.status == 422
    with pytest.raises(ValidationError) as e:
        client.submit("sleep", {"duration_ms": -1})
    assert e.value.field == "params.duration_ms"
    with pytest.raises(ValidationError) as e:
        client.submit("no.such.type")
    assert e.value.code == "unknown_task_type"
    with pytest.raises(BadRequestError) as e:
        client.list(page_size=0)
    assert e.value.field in ("page_size", "limit")
    with pytest.raises(ValueError):
        client.submit("noop", idempotency_key="has space")
    with pytest.raises(ValueError):
        client.get("")


def test_bad_token_is_an_authentication_error(server):
    with Client(server.url, "not-a-token") as c:
        with pytest.raises(AuthenticationError) as e:
            c.list()
    assert e.value.status == 401 and e.value.code == "unauthenticated"


def test_results_and_session_listing(session_client):
    sub = session_client.submit("sleep", {"duration_ms": 5})
    session_client.wait(sub.task_id, 20)
    r = session_client.result(sub.task_id)
    assert r.status == "completed" and r.state == "COMPLETED" and r.task_id == sub.task_id
    lst = session_client.results(status_filter="completed", limit=10)
    assert sub.task_id in {t.task_id for t in lst.tasks}
    with pytest.raises(NotFoundError) as e:
        session_client.result_file(sub.task_id, "nothing.txt")
    assert e.value.code == "file_not_found"


def test_sessions_see_only_their_tasks(server, client, session_client):
    mine = session_client.submit("noop")
    other = client.with_token(client.open_session().token)
    with pytest.raises(NotFoundError):
        other.get(mine.task_id)


def test_notifications_poll_and_stream(session_client):
    sub = session_client.submit("noop")
    session_client.wait(sub.task_id, 20)
    # the notification is written just after the task completes: poll for it
    deadline = time.monotonic() + 10
    page = session_client.notifications(after="0", mark_read=False)
    while sub.task_id not in {n.task_id for n in page.notifications} and time.monotonic() < deadline:
        time.sleep(0.05)
        page = session_client.notifications(after="0", mark_read=False)
    assert sub.task_id in {n.task_id for n in page.notifications}
    n = [n for n in page.notifications if n.task_id == sub.task_id][0]
    assert n.type == "task_completed" and n.action == "retrieve_result" and isinstance(n.timestamp, dt.datetime)
    # the stream: the next task's notification arrives live, resumed after the last seen
    got: list = []

    def follow() -> None:
        for x in session_client.notification_stream(after=page.cursor):
            got.append(x)
            return
    th = threading.Thread(target=follow, daemon=True)
    th.start()
    nxt = session_client.submit("noop")
    th.join(15)
    assert [x.task_id for x in got] == [nxt.task_id]


def test_task_types(client):
    types = {t.name: t for t in client.task_types()}
    assert types["sleep"].handled_by == "worker"
    assert types["sleep"].params_schema["type"] == "object"
    assert types["py.echo"].handled_by == "service"


def test_plans(client):
    plans = client.plans()
    assert plans and all(p.name for p in plans)
    name = next(p.name for p in plans if p.error is None)
    g = client.plan(name)
    assert g.name == name and g.nodes and set(g.outputs) <= {n.id for n in g.nodes}
    with pytest.raises(NotFoundError) as e:
        client.plan("no_such_plan")
    assert e.value.code == "plan_not_found"
    with pytest.raises(BadRequestError) as e:
        client.execute_plan(name, 1, deadline_ms=-5)
    assert e.value.field == "deadline_ms"
    run = client.execute_plan("diamond", 1, request_id="py-req-1", deadline_ms=5000, trace=True)
    assert run.request_id == "py-req-1" and run.engine_request_id and isinstance(run.candidates, list)
    assert run.elapsed_us and {line.node_id for line in run.trace} == {n.id for n in client.plan("diamond").nodes}
    plain = client.execute_plan("simple_viewer", "1")
    assert plain.trace is None and plain.elapsed_us is None


def test_idempotency_key_is_sent(server):
    seen = {}

    def hook(request: httpx.Request) -> None:
        seen.update(request.headers)

    with httpx.Client(event_hooks={"request": [hook]}) as h:
        c = Client(server.url, server.admin_key, http=h)
        key = "k-" + uuid.uuid4().hex
        c.submit("noop", idempotency_key=key)
    assert seen["idempotency-key"] == key
    assert seen["authorization"] == "Bearer " + server.admin_key
    assert seen["user-agent"].startswith("taskflow-sdk-python/")


def test_batch_items_are_encoded(client):
    req = client._r_submit_batch([SubmitInput(task_type="noop", priority="low", unique_key="u1"),
                                  {"task_type": "sleep", "params": {"duration_ms": 1}}], None)
    assert req.body == {"tasks": [{"task_type": "noop", "priority": "low", "unique_key": "u1"},
                                  {"task_type": "sleep", "params": {"duration_ms": 1}}]}
    assert req.path == "/api/v1/tasks/batch"
