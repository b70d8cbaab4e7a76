"""The protocol checks a service must pass (docs/protocol.md), run with
the Python SDK against a real taskflow dev: duplicate outcomes, a timeout
then a late completion, recovery of a dead consumer's entries, entries
that are not the service's, a graceful stop, many tasks at once (the fast
form), and the fencing token echoed."""

from __future__ import annotations

import asyncio
import json
import threading
import time
import uuid

from taskflow_sdk.protocol import Event, Keys, decode
from tests.conftest import new_service


def _entries_for(r, stream: str, task_id: str) -> list:
    out = []
    for entry_id, fields in r.xrange(stream, "-", "+"):
        ev = decode(entry_id, fields)
        if ev.data.get("task_id") == task_id:
            out.append(ev)
    return out


def key(i: str) -> tuple:
    a, b = i.split("-")
    return int(a), int(b)


def _wait_applied(r, stream: str, entry_id: str, timeout: float = 10) -> None:
    """Waits until the agent's group has read and acknowledged entry_id."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for g in r.xinfo_groups(stream):
            if g["name"] == "agent-group" and key(g["last-delivered-id"]) >= key(entry_id) and g["pending"] == 0:
                return
        time.sleep(0.05)
    raise AssertionError(f"the agent did not apply {entry_id} on {stream} within {timeout}s")


def test_duplicate_outcomes_first_wins_and_token_is_echoed(server, client, serve):
    svc = new_service(server)

    @svc.task("py.dup")
    async def first(task):
        return {"summary": "first"}

    serve(svc)
    sub = client.submit("py.dup", {})
    t = client.wait(sub.task_id, 20)
    assert t.state == "COMPLETED" and t.result["summary"] == "first"
    r = server.redis()
    k = Keys(server.namespace)
    creates = _entries_for(r, k.create, sub.task_id)
    done = _entries_for(r, k.completed, sub.task_id)
    assert len(creates) == 1 and len(done) == 1
    token = creates[0].data["token"]
    assert token and done[0].data["token"] == token, "the outcome echoes the attempt's fencing token"
    assert done[0].data["completed_by"] == svc.name and done[0].data["status"] == "success"
    # the same attempt's outcome again, another result, then a failure: both changes nothing
    dup = Event("task.completed", {**done[0].data, "result": {"summary": "second"}})
    dup_id = r.xadd(k.completed, dup.fields())
    fail = Event("task.failed", {"task_id": sub.task_id, "status": "failed", "token": token, "failed_by": svc.name,
                                 "error": {"code": "LATE", "message": "late", "details": {}, "retryable": False}})
    fail_id = r.xadd(k.failed, fail.fields())
    _wait_applied(r, k.completed, dup_id)
    _wait_applied(r, k.failed, fail_id)
    t2 = client.get(sub.task_id)
    assert t2.state == "COMPLETED" and t2.result["summary"] == "first"
    assert t2.updated_at == t.updated_at


def test_timeout_then_late_completion(server, session_client, serve):
    svc = new_service(server)
    overdue = threading.Event()  # set once the test has seen the task TIMEOUT

    @svc.task("py.timeout")
    async def late(task):
        assert task.timeout == 1
        for _ in range(400):
            if overdue.is_set():
                break
            await asyncio.sleep(0.05)
        return {"summary": "late but done"}

    serve(svc)
    sub = session_client.submit("py.timeout", {}, timeout=1, max_retries=0)
    states = []
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        t = session_client.get(sub.task_id)
        if not states or states[-1] != t.state:
            states.append(t.state)
        if t.state == "TIMEOUT":
            overdue.set()
        if t.state == "COMPLETED":
            break
        time.sleep(0.05)
    assert "TIMEOUT" in states and states[-1] == "COMPLETED", states
    assert t.result["summary"] == "late but done"
    # the session was told both: overdue, then done (after="0": the polls
    # above delivered them already, marking them read)
    got: list = []

    def follow() -> None:
        for n in session_client.notification_stream(after="0"):
            if n.task_id == sub.task_id:
                got.append(n.type)
            if "task_completed" in got:
                return
    th = threading.Thread(target=follow, daemon=True)
    th.start()
    th.join(15)
    assert got == ["task_timeout", "task_completed"], got


def test_dead_consumers_entries_are_claimed(server, client, serve):
    r = server.redis()
    k = Keys(server.namespace)
    name = "py-claim-" + uuid.uuid4().hex[:6]
    group = name + "-group"
    # a "dead" instance: registered, read the task, never finished it
    now = int(time.time() * 1000)
    r.sadd(k.services, name)
    r.hset(k.service(name), mapping={"types": "py.claim", "consumer": "dead", "heartbeat_ms": now,
                                     "concurrency:dead": f"5 {now + 60000}"})
    r.pexpire(k.service(name), 60000)
    try:
        r.xgroup_create(k.create, group, id="0", mkstream=True)
    except Exception:
        pass
    sub = client.submit("py.claim", {})
    held = None
    deadline = time.monotonic() + 15
    while held is None and time.monotonic() < deadline:
        for _s, items in r.xreadgroup(group, "dead", {k.create: ">"}, count=50, block=500) or []:
            for entry_id, fields in items:
                if decode(entry_id, fields).data.get("task_id") == sub.task_id:
                    held = entry_id
    assert held, "the task was never published"
    ran = []
    svc = new_service(server, name, claim_idle=1.5, heartbeat_interval=0.5)

    @svc.task("py.claim")
    async def claim(task):
        ran.append(task.entry_id)
        return {"summary": "recovered"}

    serve(svc)
    t = client.wait(sub.task_id, 20)
    assert t.state == "COMPLETED" and t.result["summary"] == "recovered"
    assert ran == [held]
    p = r.xpending(k.create, group)
    assert p["pending"] == 0, p


def test_entries_not_for_the_service_are_acknowledged(server, serve):
    r = server.redis()
    k = Keys(server.namespace)
    svc = new_service(server)

    @svc.task("py.other")
    async def other(task):
        raise AssertionError("must not run")

    serve(svc)
    ids = [
        r.xadd(k.create, {"event_id": "x", "event_type": "task.create", "timestamp": "not a time", "data": "{}"}),
        r.xadd(k.create, {"nothing": "here"}),
        r.xadd(k.create, Event("task.create", {"task_id": "t-" + uuid.uuid4().hex, "task_type": "py.nobody",
                                               "token": "w:1:0", "attempt": 1}).fields()),
        r.xadd(k.create, Event("task.create", {"task_id": "t-" + uuid.uuid4().hex, "task_type": "py.other",
                                               "params": "not an object", "token": "w:1:0"}).fields()),
    ]
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        info = {g["name"]: g for g in r.xinfo_groups(k.create)}[svc.group]
        if key(info["last-delivered-id"]) >= key(ids[-1]) and info["pending"] == 0:
            break
        time.sleep(0.05)
    assert info["pending"] == 0 and info["last-delivered-id"] == ids[-1], info


def test_graceful_stop_leaves_unfinished_work_for_another_instance(server, client, serve):
    name = "py-stop-" + uuid.uuid4().hex[:6]
    started = threading.Event()
    first = new_service(server, name, grace=0.3)

    @first.task("py.slow")
    async def never(task):
        started.set()
        await asyncio.sleep(60)
        return {}

    run1 = serve(first)
    sub = client.submit("py.slow", {})
    assert started.wait(15)
    run1.stop()
    r = server.redis()
    k = Keys(server.namespace)
    assert _entries_for(r, k.completed, sub.task_id) == [] and _entries_for(r, k.failed, sub.task_id) == []
    assert r.xpending(k.create, first.group)["pending"] == 1
    second = new_service(server, name, claim_idle=1.5)

    @second.task("py.slow")
    async def done(task):
        return {"summary": "finished by the second instance"}

    serve(second)
    t = client.wait(sub.task_id, 20)
    assert t.state == "COMPLETED" and t.result["summary"] == "finished by the second instance"


def test_many_tasks_at_once_each_outcome_once(server, client, serve):
    svc = new_service(server, concurrency=32)
    seen: dict[str, int] = {}
    in_flight = 0
    peak = 0

    @svc.task("py.bulk")
    async def bulk(task):
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        seen[task.id] = seen.get(task.id, 0) + 1
        await asyncio.sleep(0.02)
        in_flight -= 1
        return {"summary": task.params["i"]}

    serve(svc)
    subs = [client.submit("py.bulk", {"i": i}) for i in range(200)]
    for s in subs:
        assert client.wait(s.task_id, 60).state == "COMPLETED"
    assert len(seen) == 200 and set(seen.values()) == {1}
    assert 1 < peak <= 32
    r = server.redis()
    k = Keys(server.namespace)
    by_task: dict[str, int] = {}
    for entry_id, fields in r.xrange(k.completed, "-", "+"):
        d = json.loads(fields["data"])
        if d.get("completed_by") == svc.name:
            by_task[d["task_id"]] = by_task.get(d["task_id"], 0) + 1
    assert len(by_task) == 200 and set(by_task.values()) == {1}
    assert r.xpending(k.create, svc.group)["pending"] == 0


def test_heartbeat_touches_the_entries_it_holds(server, client, serve):
    """While a task runs, its entry's idle time stays under a couple of
    heartbeats (XCLAIM JUSTID), so no other instance claims it. claim_idle
    is long here so that the instance's own claim scans (which also reset
    the idle time) do not run meanwhile."""
    svc = new_service(server, claim_idle=60, heartbeat_interval=0.3)
    started = threading.Event()
    release = threading.Event()

    @svc.task("py.echo")
    async def long(task):
        started.set()
        while not release.is_set():
            await asyncio.sleep(0.05)
        return {"summary": "once"}

    serve(svc)
    sub = client.submit("py.echo", {})
    assert started.wait(15)
    r = server.redis()
    k = Keys(server.namespace)
    idles = []
    t0 = time.monotonic()
    while time.monotonic() - t0 < 3:
        p = r.xpending_range(k.create, svc.group, min="-", max="+", count=10, consumername=svc.consumer)
        idles += [e["time_since_delivered"] for e in p]
        time.sleep(0.1)
    release.set()
    assert client.wait(sub.task_id, 15).state == "COMPLETED"
    assert len(idles) > 20 and max(idles) < 1000, idles
