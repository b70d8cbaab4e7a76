"""The no-op service `taskflow-bench external --service-cmd` measures
(docs/benchmarks.md): it serves BENCH_TASK_TYPE as BENCH_SERVICE with
BENCH_CONCURRENCY slots, sleeping BENCH_WORK_MS per task, until SIGTERM."""

import asyncio
import os
import resource
import sys

from taskflow_sdk import Service

svc = Service(os.environ["BENCH_SERVICE"], concurrency=int(os.environ.get("BENCH_CONCURRENCY", "200")))
work = float(os.environ.get("BENCH_WORK_MS", "0")) / 1000


@svc.task(os.environ["BENCH_TASK_TYPE"])
async def noop(task):
    if work > 0:
        await asyncio.sleep(work)
    return {"ok": True}


if __name__ == "__main__":
    svc.run()
    ru = resource.getrusage(resource.RUSAGE_SELF)  # the service's own CPU, for the bench's record
    print(f"bench_noop: {ru.ru_utime + ru.ru_stime:.2f} s CPU", file=sys.stderr)
