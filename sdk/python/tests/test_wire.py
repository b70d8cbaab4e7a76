"""The parsers of outside input (SSE lines, stream entries, API times),
with fixed cases and randomized ones: no input makes them fail other than
as documented."""

from __future__ import annotations

import datetime as dt
import json
import random
import string

import pytest

from taskflow_sdk._decode import format_time, parse_time
from taskflow_sdk._sse import parse_lines
from taskflow_sdk.errors import NotFoundError, ServerError, ValidationError, from_response
from taskflow_sdk.protocol import Event, Keys, MalformedEvent, decode, minid


def test_sse_events():
    lines = [": connected", "", "id: 1-0", "event: notification", 'data: {"a":', "data: 1}", "",
             "retry: 100", "data: x", "", ": heartbeat", "event: shutdown", "data:", ""]
    evs = list(parse_lines(lines))
    assert [(e.event, e.id, e.data) for e in evs] == [("notification", "1-0", '{"a":\n1}'), ("message", None, "x"),
                                                       ("shutdown", None, "")]
    assert evs[1].retry == 100


def test_sse_random_lines_never_raise():
    rnd = random.Random(28)
    alphabet = string.printable + "é\x00"
    for _ in range(3000):
        lines = ["".join(rnd.choice(alphabet) for _ in range(rnd.randint(0, 12))) for _ in range(rnd.randint(0, 8))]
        for e in parse_lines(lines + [""]):
            assert isinstance(e.data, str)


def test_event_round_trip_and_refusals():
    e = Event("task.progress", {"task_id": "t1", "percent": 5})
    f = e.fields()
    assert set(f) == {"event_id", "event_type", "timestamp", "data"} and f["timestamp"].endswith("Z")
    d = decode("1-0", f)
    assert d.data == {"task_id": "t1", "percent": 5} and d.entry_id == "1-0" and d.event_type == "task.progress"
    for bad in [None, {}, {"event_id": "x"}, {**f, "data": "[1]"}, {**f, "data": "{"}, {**f, "timestamp": "yesterday"}]:
        with pytest.raises(MalformedEvent):
            decode("1-0", bad)


def test_decode_random_entries_only_refuse_as_malformed():
    rnd = random.Random(26)
    base = Event("task.create", {"task_id": "t"}).fields()
    for _ in range(3000):
        f = dict(base)
        k = rnd.choice(list(f))
        f[k] = "".join(rnd.choice(string.printable) for _ in range(rnd.randint(0, 20)))
        if rnd.random() < 0.2:
            f.pop(rnd.choice(list(f)))
        try:
            decode("1-0", f)
        except MalformedEvent:
            pass


def test_times():
    t = parse_time("2026-11-28T03:08:19.123456789Z")
    assert t == dt.datetime(2026, 11, 28, 3, 8, 19, 123456, tzinfo=dt.timezone.utc)
    assert format_time(t) == "2026-11-28T03:08:19.123Z"
    assert parse_time("2024-01-01T12:00:00+02:00").utcoffset() == dt.timedelta(hours=2)


def test_keys_and_minid():
    k = Keys("taskflow")
    assert k.service("report-service") == "{taskflow}:agent:service:report-service"
    assert k.create == "{taskflow}:agent:stream:task.create"
    assert k.artifact("t1", "a.csv") == "{taskflow}:agent:artifact:t1:a.csv"
    assert minid(now=7 * 24 * 3600 + 1.5) == "1500-0"
    for bad in ["", "a{b", "x" * 65, "ns:p3"]:
        with pytest.raises(ValueError):
            Keys(bad)


def test_error_mapping():
    e = from_response(422, {"error": {"code": "validation_failed", "message": "bad", "field": "priority"}})
    assert isinstance(e, ValidationError) and e.field == "priority" and "priority" in str(e)
    assert isinstance(from_response(404, {"error": {"code": "task_not_found", "message": "no"}}), NotFoundError)
    e = from_response(503, "<html>", {"retry-after": "3"})
    assert isinstance(e, ServerError) and e.code == "http_503" and e.retry_after == 3.0
    assert json.dumps(e.body) == '"<html>"'


def test_file_url_arguments():
    from taskflow_sdk._core import split_file_url
    assert split_file_url("t1", "a.csv") == ("t1", "a.csv")
    assert split_file_url("/api/v1/results/t1/files/a.csv", None) == ("t1", "a.csv")
    assert split_file_url("http://h:1/api/v1/results/t1/files/a.csv", None) == ("t1", "a.csv")
    for bad in ["t1", "/api/v1/results/t1/files/", "/api/v1/results/t1/x/files/a"]:
        with pytest.raises(ValueError):
            split_file_url(bad, None)


def test_service_options_are_checked():
    from taskflow_sdk import Service
    for kw in [dict(concurrency=0), dict(claim_idle=1, heartbeat_interval=1), dict(block=0), dict(grace=-1),
               dict(redis_url="redis://h1:1?addr=h2:2")]:
        with pytest.raises(ValueError):
            Service("svc", **kw)
    with pytest.raises(ValueError):
        Service("has space")
    svc = Service("svc", namespace="ns1")
    assert svc.group == "svc-group" and svc.keys.create == "{ns1}:agent:stream:task.create"
    svc.handle("a.b", lambda t: {})
    with pytest.raises(ValueError):
        svc.handle("a.b", lambda t: {})
    with pytest.raises(ValueError):
        svc.handle("Bad Type", lambda t: {})
