"""The SDK's tests run against a real `taskflow dev` on a real Redis.

The session fixture builds the binary (or takes TASKFLOW_BIN), starts it
on a free port with its own namespace and admin key, and fails loudly when
Redis does not answer: these tests never skip for a missing server.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass

import httpx
import pytest
import redis

from taskflow_sdk import Client, Service

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
REDIS_URL = os.environ.get("TASKFLOW_TEST_REDIS_URL") or "redis://127.0.0.1:6379/0"

#: The external task types the test deployment accepts (TASKFLOW_EXTERNAL_TYPES).
EXTERNAL_TYPES = [
    "py.echo", "py.sync", "py.fail", "py.retry", "py.slow", "py.progress", "py.files", "py.cancel", "py.timeout",
    "py.dup", "py.claim", "py.bulk", "py.other", "py.stop", "py.spec", "py.bad", "data.analyze", "document.process",
    "text.wordcount",
]

#: The named queue tests/test_controls.py submits to: the test deployment's
#: worker serves it beside the default one (TASKFLOW_QUEUES), as a worker
#: serves only the queues it is given.
CONTROLS_QUEUE = "py-sdk.controls"


@dataclass
class Server:
    url: str
    admin_key: str
    namespace: str
    redis_url: str
    proc: subprocess.Popen
    #: the deployment's TASKFLOW_ARTIFACT_DIR (files over 8 MiB)
    artifact_dir: str

    def client(self, token: str | None = None) -> Client:
        return Client(self.url, token if token is not None else self.admin_key)

    def redis(self) -> redis.Redis:
        return redis.Redis.from_url(self.redis_url, decode_responses=True)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _die_with_parent() -> None:
    """In the child: SIGTERM when the test process dies (Linux), so a
    killed pytest leaves no taskflow dev behind."""
    try:
        import ctypes
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except OSError:
        pass


def _binary(tmp: str) -> str:
    if os.environ.get("TASKFLOW_BIN"):
        return os.environ["TASKFLOW_BIN"]
    go = shutil.which("go") or "/usr/local/go/bin/go"
    out = os.path.join(tmp, "taskflow")
    r = subprocess.run([go, "build", "-o", out, "./cmd/taskflow"], cwd=REPO, capture_output=True, text=True)
    if r.returncode != 0:
        pytest.fail(f"go build ./cmd/taskflow failed:\n{r.stderr}", pytrace=False)
    return out


@pytest.fixture(scope="session")
def server():
    try:
        redis.Redis.from_url(REDIS_URL, socket_connect_timeout=2).ping()
    except Exception as e:  # no skip: a missing server is a failure
        pytest.fail(f"Redis at {REDIS_URL} does not answer ({e}); start one or set TASKFLOW_TEST_REDIS_URL",
                    pytrace=False)
    tmp = tempfile.mkdtemp(prefix="tf-sdk-py-")
    binary = _binary(tmp)
    port = _free_port()
    ns = "sdkpy-" + uuid.uuid4().hex[:10]
    admin = "admin-" + uuid.uuid4().hex
    env = {**os.environ, "REDIS_URL": REDIS_URL, "TASKFLOW_NAMESPACE": ns, "TASKFLOW_ADMIN_KEY": admin,
           "TASKFLOW_EXTERNAL_TYPES": ",".join(EXTERNAL_TYPES), "TASKFLOW_ADDR": f"127.0.0.1:{port}",
           "TASKFLOW_QUEUES": "default," + CONTROLS_QUEUE,
           "TASKFLOW_OUTPUT_DIR": os.path.join(tmp, "out"), "TASKFLOW_ARTIFACT_DIR": os.path.join(tmp, "artifacts")}
    os.makedirs(env["TASKFLOW_ARTIFACT_DIR"])
    logf = open(os.path.join(tmp, "taskflow-dev.log"), "w")
    proc = subprocess.Popen([binary, "dev", "--addr", f"127.0.0.1:{port}"], env=env, stdout=logf,
                            stderr=subprocess.STDOUT, start_new_session=True,
                            preexec_fn=_die_with_parent)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        if proc.poll() is not None:
            logf.flush()
            pytest.fail(f"taskflow dev exited with {proc.returncode}:\n" + open(logf.name).read()[-4000:], pytrace=False)
        try:
            if httpx.get(url + "/ready", timeout=1).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            proc.kill()
            pytest.fail("taskflow dev did not become ready in 60s:\n" + open(logf.name).read()[-4000:], pytrace=False)
        time.sleep(0.1)
    srv = Server(url, admin, ns, REDIS_URL, proc, env["TASKFLOW_ARTIFACT_DIR"])
    yield srv
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(20)
    except subprocess.TimeoutExpired:
        proc.kill()
    logf.close()
    # the namespace's keys (ours alone; never a flush of the shared server)
    r = srv.redis()
    keys = list(r.scan_iter(match="{" + ns + "}*", count=10000))
    for i in range(0, len(keys), 500):
        r.delete(*keys[i:i + 500])
    shutil.rmtree(tmp, ignore_errors=True)


@pytest.fixture
def client(server):
    with server.client() as c:
        yield c


@pytest.fixture
def session_client(server):
    """A client acting as a fresh session (notifications need one)."""
    with server.client() as admin:
        s = admin.open_session()
    with server.client(s.token) as c:
        yield c


class Running:
    """A Service served on a thread of its own (its own event loop)."""

    def __init__(self, svc: Service) -> None:
        self.svc = svc
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        try:
            asyncio.run(self.svc.serve())
        except BaseException as e:  # reported by stop()
            self.error = e

    def start(self) -> "Running":
        self.thread.start()
        if not self.svc.wait_started(15):
            raise AssertionError(f"service did not start: {self.error!r}")
        return self

    def stop(self, timeout: float = 30) -> None:
        self.svc.stop()
        self.thread.join(timeout)
        assert not self.thread.is_alive(), "service did not stop"
        if self.error is not None:
            raise self.error


@pytest.fixture
def serve(server):
    """serve(svc) runs the service until the test ends."""
    started: list[Running] = []

    def start(svc: Service) -> Running:
        r = Running(svc).start()
        started.append(r)
        return r

    yield start
    for r in started:
        if r.thread.is_alive():
            r.stop()


def new_service(server: Server, name: str | None = None, **kw) -> Service:
    kw.setdefault("heartbeat_interval", 0.5)
    kw.setdefault("claim_idle", 2.0)
    kw.setdefault("block", 0.2)
    return Service(name or ("py-" + uuid.uuid4().hex[:8]), redis_url=server.redis_url, namespace=server.namespace,
                   **kw)


def wait_published(client: Client, task_type: str, service: str, timeout: float = 10) -> None:
    """Waits until the API has read the spec service published for
    task_type (it reads the hash again at most every 2 s)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if any(t.name == task_type and t.published_by == service for t in client.task_types()):
            return
        time.sleep(0.1)
    raise AssertionError(f"the API never listed {task_type} as published by {service}")
