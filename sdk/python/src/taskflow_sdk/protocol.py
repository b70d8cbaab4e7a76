"""The wire format of taskflow's external-service protocol
(docs/protocol.md): key names, the four fields of an event, outcome data."""

from __future__ import annotations

import datetime as dt
import json
import re
import time
import uuid
from dataclasses import dataclass
from typing import Any, Mapping, Optional

from ._decode import format_time, parse_time

DEFAULT_NAMESPACE = "taskflow"
#: Events and artifacts are kept this long (XADD MINID ~, artifact PEXPIRE).
RETENTION_SECONDS = 7 * 24 * 3600
#: A result file kept in Redis is at most this many bytes.
MAX_ARTIFACT_BYTES = 8 << 20
#: A registration without a concurrency field counts as this many.
DEFAULT_CONCURRENCY = 64

_ARTIFACT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
_TASK_TYPE = re.compile(r"[a-z][a-z0-9._-]{0,63}")
_NS_BAD = re.compile(r"[{} \t\r\n]|:p\d+$")


def valid_task_type(name: str) -> bool:
    return isinstance(name, str) and _TASK_TYPE.fullmatch(name) is not None


def valid_artifact_name(name: str) -> bool:
    return isinstance(name, str) and _ARTIFACT_NAME.fullmatch(name) is not None


def file_url(task_id: str, name: str) -> str:
    """Where the API serves a task's result file."""
    return f"/api/v1/results/{task_id}/files/{name}"


def service_group(service: str) -> str:
    return service + "-group"


class Keys:
    """The protocol's Redis keys under a namespace (hash tag {NS})."""

    def __init__(self, namespace: str = DEFAULT_NAMESPACE) -> None:
        if not namespace or len(namespace) > 64 or _NS_BAD.search(namespace):
            raise ValueError(f"namespace {namespace!r}: want 1 to 64 characters without braces or white space")
        self.ns = "{" + namespace + "}:"

    def stream(self, event_type: str) -> str:
        return self.ns + "agent:stream:" + event_type

    @property
    def create(self) -> str:
        return self.stream("task.create")

    @property
    def completed(self) -> str:
        return self.stream("task.completed")

    @property
    def failed(self) -> str:
        return self.stream("task.failed")

    @property
    def progress(self) -> str:
        return self.stream("task.progress")

    @property
    def cancel(self) -> str:
        return self.stream("task.cancel")

    @property
    def services(self) -> str:
        return self.ns + "agent:services"

    def service(self, name: str) -> str:
        return self.ns + "agent:service:" + name

    @property
    def task_types(self) -> str:
        return self.ns + "agent:task-types"

    def artifact(self, task_id: str, name: str) -> str:
        return self.ns + "agent:artifact:" + task_id + ":" + name


@dataclass
class Event:
    """One stream entry: event_id, event_type, timestamp and data (a JSON object)."""

    event_type: str
    data: dict
    event_id: str = ""
    timestamp: Optional[dt.datetime] = None
    entry_id: str = ""

    def fields(self) -> dict:
        """The entry's four fields, as XADD takes them."""
        ts = self.timestamp or dt.datetime.now(dt.timezone.utc)
        return {"event_id": self.event_id or str(uuid.uuid4()), "event_type": self.event_type,
                "timestamp": format_time(ts), "data": json.dumps(self.data, separators=(",", ":"))}


class MalformedEvent(ValueError):
    """A stream entry that breaks the protocol (acknowledged and skipped)."""


def _s(v: Any) -> str:
    return v.decode() if isinstance(v, (bytes, bytearray)) else str(v)


def decode(entry_id: Any, fields: Optional[Mapping[Any, Any]]) -> Event:
    """Decodes a stream entry, refusing one that breaks the protocol."""
    if not fields:
        raise MalformedEvent("entry has no fields (deleted?)")
    f = {_s(k): _s(v) for k, v in fields.items()}
    for k in ("event_id", "event_type", "timestamp", "data"):
        if k not in f:
            raise MalformedEvent(f"entry lacks {k}")
    try:
        ts = parse_time(f["timestamp"])
    except ValueError as e:
        raise MalformedEvent(f"timestamp {f['timestamp']!r}: {e}") from e
    try:
        data = json.loads(f["data"])
    except ValueError as e:
        raise MalformedEvent(f"data is not JSON: {e}") from e
    if not isinstance(data, dict):
        raise MalformedEvent("data is not a JSON object")
    return Event(event_type=f["event_type"], data=data, event_id=f["event_id"], timestamp=ts, entry_id=_s(entry_id))


def minid(now: Optional[float] = None, retention: float = RETENTION_SECONDS) -> str:
    """The XADD MINID cut-off: events older than the retention go."""
    now = time.time() if now is None else now
    return f"{int((now - retention) * 1000)}-0"


def concurrency_field(consumer: str) -> str:
    return "concurrency:" + consumer


def format_concurrency(n: int, until_ms: int) -> str:
    return f"{n} {until_ms}"
