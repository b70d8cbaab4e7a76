"""The client's issue-26 calls (unique keys, Idempotency-Key, batch submit,
queues, pause, limits) against a server that has them. They fail on a
server built before that work: run them after merging it."""

from __future__ import annotations

import dataclasses
import uuid

import httpx
import pytest

from taskflow_sdk import SubmitInput, ValidationError, models
from tests.conftest import CONTROLS_QUEUE
from tests.test_models import _resolve


def test_unique_key_answers_the_live_task(client):
    key = "u-" + uuid.uuid4().hex
    a = client.submit("sleep", {"duration_ms": 3000}, unique_key=key)
    b = client.submit("sleep", {"duration_ms": 3000}, unique_key=key)
    assert a.status_code == 201 and not a.duplicate
    assert b.status_code == 200 and b.duplicate is True and b.task_id == a.task_id
    client.cancel(a.task_id)


def test_unique_for_holds_after_the_task_finished(client):
    key = "u-" + uuid.uuid4().hex
    a = client.submit("noop", unique_key=key, unique_for=60)
    client.wait(a.task_id, 20)
    b = client.submit("noop", unique_key=key, unique_for=60)
    assert b.duplicate and b.task_id == a.task_id and b.state == "COMPLETED"


def test_idempotency_key_replays_and_refuses_another_body(client):
    key = "idem-" + uuid.uuid4().hex
    a = client.submit("noop", {"n": 1}, idempotency_key=key)
    b = client.submit("noop", {"n": 1}, idempotency_key=key)
    assert b.replayed and not a.replayed
    assert (b.task_id, b.status_code) == (a.task_id, a.status_code)
    with pytest.raises(ValidationError) as e:
        client.submit("noop", {"n": 2}, idempotency_key=key)
    assert e.value.code == "idempotency_key_reused" and e.value.field == "Idempotency-Key"


def test_batch_one_result_per_item_in_order(client):
    key = "u-" + uuid.uuid4().hex
    first = client.submit("sleep", {"duration_ms": 3000}, unique_key=key)
    res = client.submit_batch([
        SubmitInput(task_type="noop"),
        {"task_type": "sleep", "params": {"duration_ms": 3000}, "unique_key": key},
        SubmitInput(task_type="noop", priority="urgent"),  # type: ignore[arg-type]
    ])
    assert [r.index for r in res] == [0, 1, 2]
    assert [r.status for r in res] == ["created", "duplicate", "invalid"]
    assert res[0].task_id and res[0].state == "PENDING"
    assert res[1].task_id == first.task_id
    assert res[2].error is not None and res[2].error.field == "tasks[2].priority"
    client.cancel(first.task_id)


def test_batch_with_idempotency_key_is_replayed(client):
    key = "idem-" + uuid.uuid4().hex
    a = client.submit_batch([SubmitInput(task_type="noop")], idempotency_key=key)
    b = client.submit_batch([SubmitInput(task_type="noop")], idempotency_key=key)
    assert [r.task_id for r in a] == [r.task_id for r in b]


def test_queues_pause_resume_and_limits(client):
    q = CONTROLS_QUEUE  # a queue the test deployment's worker serves (conftest)
    sub = client.submit("noop", queue=q, limit_key="tenant-1")
    client.wait(sub.task_id, 20)
    assert q in {x.name for x in client.queues()}
    client.pause_queue(q)
    assert client.queue(q).paused is True
    paused = client.submit("noop", queue=q)
    assert client.get(paused.task_id).state == "PENDING"
    client.resume_queue(q)
    assert client.wait(paused.task_id, 20).state == "COMPLETED"
    client.pause_task_type("noop")
    client.resume_task_type("noop")
    client.set_limit("queue", q, rate=(10, 1), concurrency=2)
    lims = {(x.scope, x.name): x for x in client.limits()}
    assert lims[("queue", q)].concurrency == 2
    client.delete_limit("queue", q)
    assert ("queue", q) not in {(x.scope, x.name) for x in client.limits()}
    with pytest.raises(ValidationError) as e:
        client.submit("noop", queue="Not A Queue")
    assert e.value.field == "queue"


def test_issue26_fields_are_in_the_document(server):
    doc = httpx.get(server.url + "/openapi.json").json()
    for cls in (models.Submitted, models.SubmitInput):
        props = set(_resolve(doc, cls.SCHEMA).get("properties", {}))
        for f in dataclasses.fields(cls):
            if f.metadata.get("since") == "issue26":
                assert f.name in props, (cls.__name__, f.name)
