"""docs/python.md's client quick start runs as written (against the test
server instead of 127.0.0.1:8080), and the package builds with the
dependencies it declares."""

from __future__ import annotations

import contextlib
import io
import pathlib
import re
import subprocess
import sys
import zipfile

HERE = pathlib.Path(__file__).resolve().parent.parent
PAGE = (HERE.parent.parent / "docs" / "python.md").read_text()


def _client_blocks() -> list[str]:
    section = PAGE.split("## Quick start: a client", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", section, re.S)


def test_client_quick_start_runs(server, monkeypatch):
    blocks = _client_blocks()
    assert len(blocks) == 2
    monkeypatch.setenv("TASKFLOW_ADMIN_KEY", server.admin_key)
    monkeypatch.delenv("TASKFLOW_TOKEN", raising=False)
    outs = []
    for code in blocks:
        assert '"http://127.0.0.1:8080"' in code
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(code.replace('"http://127.0.0.1:8080"', repr(server.url)), "python.md", "exec"), {})
        outs.append(out.getvalue())
    assert outs[0].startswith("COMPLETED ") and "422 validation_failed params.duration_ms" in outs[0], outs[0]
    assert outs[1].strip() == str(["COMPLETED"] * 10)


def test_wheel_declares_its_dependencies(tmp_path):
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index",
                        "-q", "-w", str(tmp_path), str(HERE)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    (whl,) = tmp_path.glob("taskflow_sdk-*.whl")
    from taskflow_sdk import __version__
    assert whl.name.startswith(f"taskflow_sdk-{__version__}-")
    with zipfile.ZipFile(whl) as z:
        names = z.namelist()
        meta = z.read(next(n for n in names if n.endswith("METADATA"))).decode()
    assert "taskflow_sdk/service.py" in names and not any(n.startswith(("tests/", "examples/")) for n in names)
    assert re.search(r"^Requires-Dist: httpx ?\(?>=0\.23\)?$", meta, re.M), meta
    assert re.search(r"^Requires-Dist: redis ?\(?>=4\.3\)?$", meta, re.M), meta
    assert "Requires-Python: >=3.10" in meta
