"""The example services (analysis and document, ported from the Go ones;
the quick start's word count) as units and end to end."""

from __future__ import annotations

import json
import os
import pathlib
import signal
import subprocess
import sys
import time

import pytest

from examples import analysis, document
from taskflow_sdk import ValidationError
from tests.conftest import new_service, wait_published

HERE = pathlib.Path(__file__).resolve().parent.parent
REPO = HERE.parent.parent


def test_analyze_columns():
    st = analysis.analyze("city,temp,n\nParis,10,1\nLyon,20,\nParis,30,3\n")
    assert st["rows"] == 3
    city, temp, n = st["columns"]
    assert city == {"name": "city", "count": 3, "empty": 0, "numeric": False, "distinct": 2, "top": "Paris",
                    "top_count": 2}
    assert temp["numeric"] and temp["sum"] == 60 and temp["mean"] == 20 and temp["median"] == 20
    assert temp["min"] == 10 and temp["max"] == 30 and abs(temp["stddev"] - 8.16496580927726) < 1e-12
    assert n["empty"] == 1 and n["median"] == 2 and n["top"] == "1"
    assert analysis.analyze("a;b\n1;2\n", ";")["columns"][1]["sum"] == 2
    for bad in ["", "a,b\n1,2,3\n", 'a\n"unterminated\n']:
        with pytest.raises(ValueError):
            analysis.analyze(bad)


def test_extract_text():
    h = ("<html><head><title>x</title></head><body><h1>Title</h1><script>var a;</script>"
         "<p>Hello&amp;  <b>world</b></p><!-- c --><ul><li>one</li><li>two</li></ul></body></html>")
    assert document.guess_format(h) == "html"
    assert document.extract_text(h, "html") == "Title\n\nHello& world\n\none\n\ntwo\n"
    md = "# Head\n\nSome **bold** and [a link](http://x) ![img](y.png)\n\n- item\n> quote\n```\ncode\n```\n"
    assert document.guess_format(md) == "markdown"
    assert document.extract_text(md, "markdown") == "Head\n\nSome bold and a link img\n\nitem\nquote\n\ncode\n"
    assert document.guess_format("just   text\r\nhere") == "text"
    assert document.extract_text("just   text\r\nhere", "text") == "just text\nhere\n"


def test_examples_end_to_end(server, client, serve):
    svc = new_service(server)
    analysis.register(svc)
    document.register(svc)
    serve(svc)
    csv = "name,score\nann,3\nbob,5\n"
    a = client.submit("data.analyze", {"csv": csv})
    d = client.submit("document.process", {"content": "<p>Hello <i>there</i></p>", "format": "HTML"})
    ta, td = client.wait(a.task_id, 20), client.wait(d.task_id, 20)
    assert ta.state == "COMPLETED" and ta.result["summary"] == "2 rows, 2 columns (1 numeric)", ta
    f = client.result_file(a.task_id, f"{a.task_id}.json")
    assert json.loads(f.data) == analysis.analyze(csv) and f.content_type == "application/json"
    assert td.state == "COMPLETED" and td.result["summary"] == "extracted 2 words from html", td
    assert client.result_file(d.task_id, f"{d.task_id}.txt").data == b"Hello there\n"
    # the deployment checks params at submit against the published schema;
    # the service checks what the schema cannot say
    wait_published(client, "data.analyze", svc.name)
    with pytest.raises(ValidationError) as e:
        client.submit("data.analyze", {"delimiter": ";"})
    assert e.value.field == "params.csv"
    bad = client.submit("data.analyze", {"csv": "a,b\n1,2,3\n"})
    tb = client.wait(bad.task_id, 20)
    assert tb.state == "DLQ" and tb.error_type == "INVALID_PARAMS", tb


def test_quick_start_service_runs_as_a_program(server, client):
    env = {**os.environ, "REDIS_URL": server.redis_url, "TASKFLOW_NAMESPACE": server.namespace,
           "PYTHONPATH": str(HERE / "src")}
    proc = subprocess.Popen([sys.executable, str(HERE / "examples" / "wordcount.py")], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        sub = client.submit("text.wordcount", {"text": "the cat and the hat"})
        t = client.wait(sub.task_id, 30)
        assert t.state == "COMPLETED" and t.result["summary"] == "5 words", t
        assert client.result_file(sub.task_id, f"{sub.task_id}.txt").data.startswith(b"the 2\n")
    finally:
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=15)
    assert proc.returncode == 0, out.decode()


def test_quick_start_is_short_and_in_the_docs():
    src = (HERE / "examples" / "wordcount.py").read_text()
    assert len(src.splitlines()) < 30
    page = (REPO / "docs" / "python.md").read_text()
    assert src.strip() in page, "docs/python.md must show examples/wordcount.py as it is"
