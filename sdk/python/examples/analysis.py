"""The data.analyze example service in Python (the Go one is
extsvc/tools/analyze.go): statistics of each column of a CSV, stored as
a JSON result file the task's session downloads."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import math
import statistics

from taskflow_sdk import Fail, Service

MAX_CSV_BYTES = 10 << 20

PARAMS_SCHEMA = {
    "type": "object",
    "properties": {
        "csv": {"type": "string", "maxLength": MAX_CSV_BYTES, "description": "the data, with a header row"},
        "delimiter": {"type": "string", "maxLength": 4, "description": "one character; default ,"},
    },
    "required": ["csv"],
    "additionalProperties": False,
}


def column_stats(name: str, values: list[str]) -> dict:
    c: dict = {"name": name, "count": 0, "empty": 0, "numeric": False, "distinct": 0}
    counts: dict[str, int] = {}
    nums: list[float] = []
    numeric = True
    for v in values:
        v = v.strip()
        if not v:
            c["empty"] += 1
            continue
        c["count"] += 1
        counts[v] = counts.get(v, 0) + 1
        try:
            f = float(v)
        except ValueError:
            numeric = False
            continue
        if math.isnan(f) or math.isinf(f):
            numeric = False
        else:
            nums.append(f)
    c["distinct"] = len(counts)
    if counts:  # the most frequent value, the smallest on a tie
        top = min(counts.items(), key=lambda kv: (-kv[1], kv[0]))
        c["top"], c["top_count"] = top
    if numeric and nums:
        c.update(numeric=True, sum=math.fsum(nums), mean=statistics.fmean(nums), median=statistics.median(nums),
                 min=min(nums), max=max(nums), stddev=statistics.pstdev(nums))
    return c


def analyze(data: str, delimiter: str = ",") -> dict:
    """Per column: count, empty cells, distinct values, the most frequent;
    for numeric columns also sum, mean, median, min, max and stddev."""
    rows = csv.reader(io.StringIO(data), delimiter=delimiter, strict=True)
    try:
        header = next(rows)
    except StopIteration:
        raise ValueError("empty CSV: a header row is required") from None
    except csv.Error as e:
        raise ValueError(f"csv: {e}") from None
    cols: list[list[str]] = [[] for _ in header]
    n = 0
    try:
        for rec in rows:
            n += 1
            if len(rec) != len(header):
                raise ValueError(f"csv: record on line {rows.line_num}: wrong number of fields")
            for i, v in enumerate(rec):
                cols[i].append(v)
    except csv.Error as e:
        raise ValueError(f"csv: {e}") from None
    return {"rows": n, "columns": [column_stats(h, c) for h, c in zip(header, cols)]}


async def handle(task) -> dict:
    p = task.params or {}
    unknown = set(p) - {"csv", "delimiter"}
    if unknown:
        raise Fail("INVALID_PARAMS", f"params: unknown field {sorted(unknown)[0]!r}")
    data, delim = p.get("csv"), p.get("delimiter") or ","
    if not isinstance(data, str) or not data:
        raise Fail("INVALID_PARAMS", "csv: required (the data, with a header row)")
    if len(data.encode()) > MAX_CSV_BYTES:
        raise Fail("INVALID_PARAMS", f"csv: exceeds {MAX_CSV_BYTES} bytes")
    if not isinstance(delim, str) or len(delim) != 1 or delim in '"\r\n':
        raise Fail("INVALID_PARAMS", f"delimiter {delim!r}: want one character other than a quote or newline")
    try:
        st = analyze(data, delim)
    except ValueError as e:
        raise Fail("INVALID_PARAMS", str(e)) from None
    await task.progress(80, "statistics computed")
    out = json.dumps(st, indent=2).encode()
    url = await task.put_file(f"{task.id}.json", "application/json", out)
    numeric = sum(1 for c in st["columns"] if c["numeric"])
    return {"file_url": url, "summary": f"{st['rows']} rows, {len(st['columns'])} columns ({numeric} numeric)",
            "metadata": {"rows": st["rows"], "columns": len(st["columns"]), "numeric_columns": numeric,
                         "sha256": hashlib.sha256(out).hexdigest(), "stats": st}}


def register(svc: Service) -> None:
    svc.task("data.analyze", description="Computes statistics of a CSV (per column: count, mean, min, max); "
             "the result links the analysis.", params_schema=PARAMS_SCHEMA, notify="Your data analysis is ready")(handle)
