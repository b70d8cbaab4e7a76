"""Writing an external service of taskflow in Python: a process that takes
the tasks of its types from Redis (docs/protocol.md), runs them, and
reports progress, result files and outcomes. It is the Python counterpart
of the Go SDK ``extsvc`` and follows it::

    from taskflow_sdk import Service

    svc = Service("wordcount-service")

    @svc.task("text.wordcount", description="Counts the words of a text.")
    async def wordcount(task):
        words = task.params["text"].split()
        await task.progress(50, "counted")
        return {"summary": f"{len(words)} words", "metadata": {"words": len(words)}}

    svc.run()

A handler is a coroutine function (run on the service's event loop; a
cancel request cancels it) or a plain function (run in a thread; it sees a
cancel request in ``task.cancelled``). It returns the result, a dict (by
convention ``file_url``, ``summary``, ``metadata``), or raises
:class:`Fail` to choose the error code and whether the agent retries; any
other exception is reported as ``INTERNAL_ERROR``, not retried.

The protocol's fast form is what it does: reads take up to the free slots
at once (``concurrency``, published with the registration), the outcomes
of the tasks that finished meanwhile are written in one pipeline and their
entries acknowledged with one XACK, and never before their outcome is
written. Delivery is at least once: an entry stays pending until its
outcome is published, a live service touches its entries (XCLAIM) every
heartbeat, and the entries of a dead instance are claimed (XAUTOCLAIM)
after ``claim_idle``.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import hashlib
import inspect
import json
import logging
import os
import signal
import socket
import tempfile
import threading
import time
import traceback
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Optional, Union

import redis.asyncio as aioredis
from redis.exceptions import ResponseError

from . import protocol
from .protocol import Event, Keys, MalformedEvent

log = logging.getLogger("taskflow_sdk.service")

#: The most outcomes written in one pipeline.
MAX_FLUSH = 256


class Fail(Exception):
    """Raise it from a handler to fail the task with ``code``. A retryable
    failure is retried by the agent with backoff; the others go to the DLQ.
    ``details`` (a dict) is kept with the error in the task's history."""

    def __init__(self, code: str, message: str = "", *, retryable: bool = False,
                 details: Optional[dict] = None) -> None:
        super().__init__(f"{code}: {message}")
        if not code:
            raise ValueError("Fail: code is required")
        self.code = code
        self.message = message or code
        self.retryable = retryable
        self.details = details or {}


class Cancelled(Exception):
    """Raise it from a plain (thread) handler that saw ``task.cancelled``:
    the task ends CANCELLED. (Any exception raised after a cancel request
    does the same.)"""


class FileTooLarge(Exception):
    """A result file over 8 MiB with no artifact directory to put it in."""


@dataclass
class TypeInfo:
    """What a service publishes about a task type when it registers
    (docs/protocol.md, "Publishing a task type")."""

    description: str = ""
    #: A JSON Schema object: the API refuses a submit whose params break it.
    params_schema: Optional[dict] = None
    #: The session's notification text; {field} is the task's params.field.
    notify: str = ""

    def spec(self, service: str) -> dict:
        d: dict = {"service": service}
        if self.description:
            d["description"] = self.description
        if self.params_schema is not None:
            d["params_schema"] = self.params_schema
        if self.notify:
            d["notify"] = self.notify
        return d


class Task:
    """One task handed to a coroutine handler."""

    def __init__(self, svc: "Service", entry_id: str, ev: Event) -> None:
        d = ev.data
        self.entry_id = entry_id
        self.id: str = d["task_id"]
        self.type: str = d["task_type"]
        self.session_id: str = d.get("session_id") or ""
        self.params: Optional[dict] = d.get("params")
        #: the attempt's deadline in seconds (0: none)
        self.timeout: float = float(d.get("timeout") or 0)
        self.priority: str = d.get("priority") or "normal"
        #: 1 for the first run, +1 per retry
        self.attempt: int = int(d.get("attempt") or 1)
        self.created_at = ev.timestamp
        #: the W3C trace context of the dispatch ("" when not traced)
        self.traceparent: str = d.get("traceparent") or ""
        self._token: str = d.get("token") or ""
        self._svc = svc
        self._started = time.monotonic()
        self._cancel = threading.Event()

    @property
    def cancelled(self) -> bool:
        """The agent asked to stop this task (a cancel request), or the
        service is stopping past its grace."""
        return self._cancel.is_set()

    async def progress(self, percent: float, message: str = "", eta_seconds: float = 0) -> None:
        """Publishes task.progress: percent done (0–100), a short message,
        an estimate of the seconds left (0: unknown)."""
        if not 0 <= percent <= 100:
            raise ValueError("percent: want 0 to 100")
        data = {"task_id": self.id, "percent": percent, "message": message, "eta_seconds": eta_seconds,
                "reported_by": self._svc.name, "token": self._token}
        await self._svc._shielded(self._svc._xadd(self._svc.keys.progress, Event("task.progress", data)))

    async def put_file(self, name: str, content_type: str, data: Union[bytes, str]) -> str:
        """Stores ``data`` (a str is UTF-8) as the task's result file ``name``
        of ``content_type`` (e.g. "text/csv") in taskflow's
        artifact store and returns the URL the API serves it at to the
        task's session: put it in the result's ``file_url``. Up to 8 MiB
        go into Redis; a larger file into the service's ``artifact_dir``
        (FileTooLarge without one). Storing a name again replaces it."""
        if isinstance(data, str):
            data = data.encode()
        if not protocol.valid_artifact_name(name):
            raise ValueError(f"file name {name!r}: want 1 to 128 of A-Z a-z 0-9 . _ -, not starting with a dot")
        if not protocol.valid_artifact_name(self.id):
            raise ValueError(f"task id {self.id!r} cannot name a file")
        fields: dict = {"content_type": content_type or "application/octet-stream", "size": len(data),
                        "sha256": hashlib.sha256(data).hexdigest()}
        if len(data) <= protocol.MAX_ARTIFACT_BYTES:
            fields["data"] = data
        else:
            d = self._svc.artifact_dir
            if not d:
                raise FileTooLarge(f"{name} is {len(data)} bytes; the store keeps up to {protocol.MAX_ARTIFACT_BYTES}"
                                   " without an artifact directory (TASKFLOW_ARTIFACT_DIR)")
            await asyncio.get_running_loop().run_in_executor(None, _write_artifact, d, self.id, name, data)
            fields["location"] = "dir"
        key = self._svc.keys.artifact(self.id, name)

        async def store() -> None:
            p = self._svc.redis.pipeline(transaction=False)
            p.delete(key)  # a replaced file keeps no field of the old one
            p.hset(key, mapping=fields)
            p.pexpire(key, protocol.RETENTION_SECONDS * 1000)
            await p.execute()

        await self._svc._shielded(store())
        return protocol.file_url(self.id, name)


class SyncTask:
    """One task handed to a plain (thread) handler: the same attributes as
    Task, with progress and put_file blocking."""

    def __init__(self, task: Task, loop: asyncio.AbstractEventLoop) -> None:
        self._t = task
        self._loop = loop

    def __getattr__(self, name: str) -> Any:
        return getattr(self._t, name)

    @property
    def cancelled(self) -> bool:
        return self._t.cancelled

    def progress(self, percent: float, message: str = "", eta_seconds: float = 0) -> None:
        asyncio.run_coroutine_threadsafe(self._t.progress(percent, message, eta_seconds), self._loop).result()

    def put_file(self, name: str, content_type: str, data: Union[bytes, str]) -> str:
        return asyncio.run_coroutine_threadsafe(self._t.put_file(name, content_type, data), self._loop).result()


def _write_artifact(directory: str, task_id: str, name: str, data: bytes) -> None:
    d = os.path.join(directory, task_id)
    os.makedirs(d, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=d, prefix="." + name + ".")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, os.path.join(d, name))
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


Handler = Callable[[Any], Union[Awaitable[Optional[dict]], Optional[dict]]]


@dataclass
class _Running:
    task: Task
    is_async: bool
    atask: Optional[asyncio.Task] = None
    reason: Optional[str] = None  # "cancel" or "stop"

    def stop(self, reason: str) -> None:
        if self.reason is None:
            self.reason = reason
        self.task._cancel.set()
        if self.is_async and self.atask is not None:
            self.atask.cancel()


@dataclass
class _Outcome:
    stream: str
    event: Event
    entry_id: str
    done: asyncio.Future = field(repr=False)


class Service:
    """One instance of an external service: it serves the task types
    registered on it. Register handlers, then call :meth:`run` (blocking)
    or await :meth:`serve`.

    Defaults: ``redis_url`` from REDIS_URL (else redis://127.0.0.1:6379/0),
    ``namespace`` from TASKFLOW_NAMESPACE (else ``taskflow``),
    ``artifact_dir`` from TASKFLOW_ARTIFACT_DIR; ``consumer``
    ``<name>-worker-<host>-<pid>``; ``concurrency`` 5 tasks at once;
    ``block`` 1 s per read; ``heartbeat_interval`` 2 s; ``claim_idle``
    15 s (more than two heartbeats); ``grace`` 30 s for running tasks at a
    stop.
    """

    def __init__(self, name: str, *, redis: Optional[aioredis.Redis] = None, redis_url: Optional[str] = None,
                 namespace: Optional[str] = None, consumer: Optional[str] = None, concurrency: int = 5,
                 block: float = 1.0, heartbeat_interval: float = 2.0, claim_idle: float = 15.0,
                 grace: float = 30.0, artifact_dir: Optional[str] = None) -> None:
        if not name or any(c in name for c in " {}\t\n"):
            raise ValueError(f"service name {name!r}: want non-empty, without spaces or braces")
        if concurrency < 1:
            raise ValueError("concurrency: want at least 1")
        if block < 0.001:
            raise ValueError("block: want at least 1 ms")
        if heartbeat_interval <= 0:
            raise ValueError("heartbeat_interval: want a positive number of seconds")
        if claim_idle <= 2 * heartbeat_interval:
            raise ValueError("claim_idle: want more than twice heartbeat_interval")
        if grace < 0:
            raise ValueError("grace: want 0 or more seconds")
        self.name = name
        self.keys = Keys(namespace or os.environ.get("TASKFLOW_NAMESPACE") or protocol.DEFAULT_NAMESPACE)
        self.group = protocol.service_group(name)
        self.consumer = consumer or f"{name}-worker-{socket.gethostname()}-{os.getpid()}"
        self.concurrency = concurrency
        self.block = block
        self.heartbeat_interval = heartbeat_interval
        self.claim_idle = claim_idle
        self.grace = grace
        self.artifact_dir = artifact_dir if artifact_dir is not None else os.environ.get("TASKFLOW_ARTIFACT_DIR") or None
        self._redis_given = redis
        self._redis_url = redis_url or os.environ.get("REDIS_URL") or "redis://127.0.0.1:6379/0"
        if "addr=" in self._redis_url.partition("?")[2]:
            raise ValueError("redis_url names a Redis Cluster (?addr=): the Python SDK serves a single Redis server")
        self.redis: Any = None
        self._handlers: dict[str, tuple[Handler, bool]] = {}
        self._specs: dict[str, TypeInfo] = {}
        self._running: dict[str, _Running] = {}
        self._cancelled: dict[str, float] = {}
        self._stopping = False  # no more reads
        self._closed = False  # the background loops end (after the drain)
        self._loop: Optional[asyncio.AbstractEventLoop] = None
        self._stop_event: Optional[asyncio.Event] = None
        self._closed_event: Optional[asyncio.Event] = None
        self._slot: Optional[asyncio.Event] = None
        self._outcomes: Optional[asyncio.Queue] = None
        self._executor: Optional[concurrent.futures.ThreadPoolExecutor] = None
        self._started = threading.Event()

    # --- registration ---

    def handle(self, task_type: str, handler: Handler, info: Optional[TypeInfo] = None) -> None:
        """Registers handler for task_type, and publishes info about it
        with every registration when given."""
        if not protocol.valid_task_type(task_type):
            raise ValueError(f"{task_type!r} is not a task type name")
        if task_type in self._handlers:
            raise ValueError(f"task type {task_type!r} registered twice")
        self._handlers[task_type] = (handler, inspect.iscoroutinefunction(handler))
        if info is not None:
            self._specs[task_type] = info

    def task(self, task_type: str, *, description: str = "", params_schema: Optional[dict] = None,
             notify: str = "") -> Callable[[Handler], Handler]:
        """A decorator: ``@svc.task("text.wordcount", description=...)``."""
        def deco(fn: Handler) -> Handler:
            info = TypeInfo(description, params_schema, notify) if (description or params_schema or notify) else None
            self.handle(task_type, fn, info)
            return fn
        return deco

    @property
    def types(self) -> list[str]:
        return sorted(self._handlers)

    # --- lifecycle ---

    def run(self) -> None:
        """Serves until SIGINT or SIGTERM, then stops gracefully."""
        async def main() -> None:
            loop = asyncio.get_running_loop()
            for sig in (signal.SIGINT, signal.SIGTERM):
                try:
                    loop.add_signal_handler(sig, self.stop)
                except (NotImplementedError, RuntimeError):
                    pass
            await self.serve()
        asyncio.run(main())

    def stop(self) -> None:
        """Asks a serving service to stop (from any thread): no new reads;
        running tasks get ``grace`` to finish."""
        self._stopping = True
        loop, ev = self._loop, self._stop_event
        if loop is not None and ev is not None:
            try:
                loop.call_soon_threadsafe(ev.set)
            except RuntimeError:
                pass

    def wait_started(self, timeout: float = 10.0) -> bool:
        """Blocks until the service has registered (for tests and tools)."""
        return self._started.wait(timeout)

    async def serve(self) -> None:
        """Serves until :meth:`stop`; returns after a graceful stop."""
        if not self._handlers:
            raise RuntimeError("no task types registered")
        self._loop = asyncio.get_running_loop()
        self._stop_event = asyncio.Event()
        self._closed_event = asyncio.Event()
        self._slot = asyncio.Event()
        self._outcomes = asyncio.Queue()
        if self._stopping:
            return
        own = self._redis_given is None
        self.redis = self._redis_given or aioredis.from_url(self._redis_url, decode_responses=True)
        self._executor = concurrent.futures.ThreadPoolExecutor(max_workers=self.concurrency,
                                                               thread_name_prefix=self.name)
        bg: list[asyncio.Task] = []
        try:
            try:
                await self.redis.xgroup_create(self.keys.create, self.group, id="0", mkstream=True)
            except ResponseError as e:
                if "BUSYGROUP" not in str(e):
                    raise
            await self._register()
            cancel_from = await self._last_id(self.keys.cancel)
            log.info("service started", extra={"service": self.name, "consumer": self.consumer, "types": self.types})
            self._started.set()
            flusher = asyncio.create_task(self._flush_loop())
            bg = [asyncio.create_task(self._heartbeat_loop()), asyncio.create_task(self._cancel_loop(cancel_from))]
            try:
                await self._read_loop()
            finally:
                await self._drain()
                await self._outcomes.put(None)
                await flusher
        finally:
            self._stopping = self._closed = True
            self._stop_event.set()
            self._closed_event.set()
            for t in bg:
                try:
                    await t
                except Exception as e:  # a background loop's failure must not hide the stop
                    log.warning("background loop failed: %s", e)
            self._executor.shutdown(wait=True)
            if own:
                await self.redis.close()
                await self.redis.connection_pool.disconnect()
            log.info("service stopped", extra={"service": self.name, "consumer": self.consumer})

    async def _drain(self) -> None:
        """Graceful stop: running tasks get grace to finish; then the
        coroutine ones are cancelled and their entries left pending for
        another instance to claim."""
        tasks = [r.atask for r in self._running.values() if r.atask is not None]
        if not tasks:
            return
        _, pending = await asyncio.wait(tasks, timeout=self.grace)
        if pending:
            for r in list(self._running.values()):
                r.stop("stop")
            await asyncio.wait(pending)

    # --- the read loop ---

    async def _room(self) -> int:
        while not self._stopping:
            free = self.concurrency - len(self._running)
            if free > 0:
                return free
            self._slot.clear()
            try:
                await asyncio.wait_for(self._slot.wait(), timeout=0.5)
            except asyncio.TimeoutError:
                pass
        return 0

    async def _read_loop(self) -> None:
        cursor = "0-0"
        next_claim = 0.0
        fails = 0
        block_ms = max(1, int(self.block * 1000))
        while not self._stopping:
            n = await self._room()
            if n <= 0:
                break
            try:
                entries: list = []
                now = time.monotonic()
                if now >= next_claim:
                    # the entries of dead instances first (XAUTOCLAIM)
                    res = await self.redis.xautoclaim(self.keys.create, self.group, self.consumer,
                                                      int(self.claim_idle * 1000), start_id=cursor, count=n)
                    cursor = res[0]
                    entries = [e for e in res[1] if e]
                    if cursor == "0-0":
                        next_claim = now + self.claim_idle / 3
                    for e in entries:
                        log.info("entry claimed from a dead consumer", extra={"entry": e[0], "service": self.name})
                if not entries:
                    got = await self.redis.xreadgroup(self.group, self.consumer, {self.keys.create: ">"},
                                                      count=n, block=block_ms)
                    for _stream, items in got or []:
                        entries.extend(items)
                fails = 0
            except (OSError, ConnectionError, ResponseError, Exception) as e:  # Redis down: back off, retry
                if self._stopping:
                    break
                if isinstance(e, ResponseError) and "NOGROUP" in str(e):
                    try:
                        await self.redis.xgroup_create(self.keys.create, self.group, id="0", mkstream=True)
                    except Exception:
                        pass
                delay = min(5.0, 0.1 * (2 ** fails))
                fails += 1
                cursor, next_claim = "0-0", 0.0
                log.warning("read failed; retrying in %.1fs: %s", delay, e)
                await self._sleep(delay)
                continue
            if entries:
                await self._dispatch(entries)

    async def _sleep(self, seconds: float, until: Optional[asyncio.Event] = None) -> None:
        try:
            await asyncio.wait_for((until or self._stop_event).wait(), timeout=seconds)
        except asyncio.TimeoutError:
            pass

    async def _dispatch(self, entries: list) -> None:
        skip: list[str] = []
        for entry_id, fields in entries:
            try:
                ev = protocol.decode(entry_id, fields)
            except MalformedEvent as e:
                log.warning("malformed task.create entry skipped: %s", e, extra={"entry": entry_id})
                skip.append(entry_id)
                continue
            d = ev.data
            if ev.event_type != "task.create" or d.get("task_type") not in self._handlers:
                skip.append(entry_id)  # another service's type
                continue
            if not isinstance(d.get("task_id"), str) or not d["task_id"] or not isinstance(d.get("token", ""), str) \
                    or not (d.get("params") is None or isinstance(d.get("params"), dict)):
                log.warning("malformed task.create entry skipped", extra={"entry": entry_id})
                skip.append(entry_id)
                continue
            if entry_id in self._running:
                continue
            t = Task(self, entry_id, ev)
            handler, is_async = self._handlers[t.type]
            rec = _Running(t, is_async)
            self._running[entry_id] = rec
            if t.id in self._cancelled:
                t._cancel.set()
                rec.reason = "cancel"
            rec.atask = asyncio.create_task(self._run_one(rec, handler))
        if skip:
            try:
                await self.redis.xack(self.keys.create, self.group, *skip)
            except Exception as e:
                log.warning("ack failed: %s", e)

    async def _run_one(self, rec: _Running, handler: Handler) -> None:
        t = rec.task
        result: Any = None
        err: Optional[BaseException] = None
        try:
            if rec.reason == "cancel":
                raise Cancelled()
            if rec.is_async:
                result = await handler(t)
            else:
                result = await self._loop.run_in_executor(self._executor, handler, SyncTask(t, self._loop))
        except asyncio.CancelledError as e:
            if rec.reason is None:  # not ours: the service itself is torn down
                self._release(rec)
                raise
            err = e
        except Exception as e:
            err = e
        try:
            if rec.reason == "stop":
                log.info("task left for another worker (stopping)", extra={"task_id": t.id})
                return
            if err is not None and rec.reason == "cancel":
                err = Cancelled()
            await self._finish(rec, result, err)
        finally:
            self._release(rec)

    def _release(self, rec: _Running) -> None:
        self._running.pop(rec.task.entry_id, None)
        self._slot.set()

    async def _finish(self, rec: _Running, result: Any, err: Optional[BaseException]) -> None:
        t = rec.task
        dur = int((time.monotonic() - t._started) * 1000)
        if err is None:
            if result is None:
                result = {}
            if not isinstance(result, dict):
                err = Fail("INTERNAL_ERROR", f"result is not a JSON object (a {type(result).__name__})")
            else:
                data = {"task_id": t.id, "status": "success", "result": result, "duration_ms": dur,
                        "completed_by": self.name, "token": t._token}
                if t.traceparent:
                    data["traceparent"] = t.traceparent
                ev = Event("task.completed", data)
                try:
                    ev.fields()
                except (TypeError, ValueError) as e:
                    err = Fail("INTERNAL_ERROR", f"result cannot be encoded as JSON: {e}")
                else:
                    await self._publish(self.keys.completed, ev, t.entry_id)
                    return
        data = {"task_id": t.id, "status": "failed", "error": error_info(err), "duration_ms": dur,
                "failed_by": self.name, "token": t._token}
        if t.traceparent:
            data["traceparent"] = t.traceparent
        log.info("task failed: %s", data["error"]["code"], extra={"task_id": t.id})
        await self._publish(self.keys.failed, Event("task.failed", data), t.entry_id)

    async def _publish(self, stream: str, ev: Event, entry_id: str) -> bool:
        fut = self._loop.create_future()
        await self._outcomes.put(_Outcome(stream, ev, entry_id, fut))
        ok = await asyncio.shield(fut)
        if not ok:
            log.error("cannot publish the outcome; the entry stays pending for a retry", extra={"entry": entry_id})
        return ok

    # --- the fast form: outcomes in bulk ---

    async def _flush_loop(self) -> None:
        q = self._outcomes
        while True:
            first = await q.get()
            if first is None:
                return
            batch = [first]
            last = False
            while len(batch) < MAX_FLUSH:
                try:
                    x = q.get_nowait()
                except asyncio.QueueEmpty:
                    break
                if x is None:
                    last = True
                    break
                batch.append(x)
            await self._flush(batch)
            if last:
                return

    async def _flush(self, batch: list[_Outcome]) -> None:
        """One pipeline of XADDs, then one XACK of the entries whose
        outcome was written: never an entry acknowledged before."""
        ok = [False] * len(batch)
        try:
            p = self.redis.pipeline(transaction=False)
            cut = protocol.minid()
            for o in batch:
                p.xadd(o.stream, o.event.fields(), minid=cut, approximate=True)
            res = await p.execute(raise_on_error=False)
            ok = [not isinstance(r, Exception) for r in res]
        except Exception as e:
            log.warning("outcomes not published: %s", e)
        ids = [o.entry_id for o, good in zip(batch, ok) if good]
        if ids:
            try:
                await self.redis.xack(self.keys.create, self.group, *ids)
            except Exception as e:
                # published: the entries are claimed and run again after
                # claim_idle, and the agent applies the first outcome only
                log.warning("ack failed: %s", e)
        for o, good in zip(batch, ok):
            if not o.done.done():
                o.done.set_result(good)

    async def _xadd(self, stream: str, ev: Event) -> str:
        return await self.redis.xadd(stream, ev.fields(), minid=protocol.minid(), approximate=True)

    async def _shielded(self, coro: Awaitable[Any]) -> Any:
        """Runs a Redis call to its end even when the caller (a cancelled
        handler) stops waiting, so no connection is left mid-reply."""
        return await asyncio.shield(asyncio.ensure_future(coro))

    # --- heartbeat, registration, cancel requests ---

    async def _register(self) -> None:
        ttl_ms = max(1000, int(3 * self.heartbeat_interval * 1000))
        now_ms = int(time.time() * 1000)
        p = self.redis.pipeline(transaction=False)
        p.sadd(self.keys.services, self.name)
        p.hset(self.keys.service(self.name), mapping={
            "types": ",".join(self.types), "consumer": self.consumer, "heartbeat_ms": now_ms,
            # this instance's share of the types' in-flight bound
            protocol.concurrency_field(self.consumer): protocol.format_concurrency(self.concurrency, now_ms + ttl_ms),
        })
        p.pexpire(self.keys.service(self.name), ttl_ms)
        for tt, info in self._specs.items():
            p.hset(self.keys.task_types, tt, json.dumps(info.spec(self.name)))
        await p.execute()

    async def _heartbeat_loop(self) -> None:
        while not self._closed:
            await self._sleep(self.heartbeat_interval, self._closed_event)
            if self._closed:
                return
            ids = list(self._running)
            now = time.time()
            for tid, at in list(self._cancelled.items()):
                if now - at > 3600:
                    del self._cancelled[tid]
            try:
                if ids:
                    await self.redis.xclaim(self.keys.create, self.group, self.consumer, 0, ids, justid=True)
                await self._register()
            except Exception as e:
                log.warning("heartbeat failed: %s", e)

    async def _cancel_loop(self, start: str) -> None:
        last = start
        block_ms = max(1, int(self.block * 1000))
        while not self._closed:
            try:
                got = await self.redis.xread({self.keys.cancel: last}, count=100, block=block_ms)
            except Exception as e:
                log.warning("reading cancel requests failed: %s", e)
                await self._sleep(0.2, self._closed_event)
                continue
            for _stream, items in got or []:
                for entry_id, fields in items:
                    last = entry_id
                    try:
                        ev = protocol.decode(entry_id, fields)
                    except MalformedEvent:
                        continue
                    tid = ev.data.get("task_id")
                    if ev.event_type != "task.cancel" or not isinstance(tid, str):
                        continue
                    self._cancelled[tid] = time.time()
                    for r in list(self._running.values()):
                        if r.task.id == tid:
                            r.stop("cancel")

    async def _last_id(self, key: str) -> str:
        xs = await self.redis.xrevrange(key, "+", "-", count=1)
        return xs[0][0] if xs else "0-0"


def error_info(err: Optional[BaseException]) -> dict:
    """The ``error`` object of task.failed for a handler's exception."""
    if isinstance(err, Fail):
        return {"code": err.code, "message": err.message, "details": err.details or {}, "retryable": err.retryable}
    if isinstance(err, (Cancelled, asyncio.CancelledError)):
        return {"code": "CANCELLED", "message": "cancelled at the agent's request", "details": {}, "retryable": False}
    if isinstance(err, (asyncio.TimeoutError, TimeoutError)):
        return {"code": "TIMEOUT", "message": str(err) or "timed out", "details": {}, "retryable": True}
    tb = "".join(traceback.format_exception(type(err), err, err.__traceback__)) if err else ""
    return {"code": "INTERNAL_ERROR", "message": f"{type(err).__name__}: {err}", "details": {"traceback": tb[-4000:]},
            "retryable": False}
