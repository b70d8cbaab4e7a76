// The no-op service `taskflow-bench external --service-cmd` measures
// (docs/benchmarks.md): it serves BENCH_TASK_TYPE as BENCH_SERVICE with
// BENCH_CONCURRENCY slots, each task taking BENCH_WORK_MS (0: none), in
// the namespace and on the Redis the bench names.
//
//   taskflow-bench external --service-cmd 'node sdk/typescript/build/bench/noop-service.js'
import { Service } from '../src/index.js';

const work = Number(process.env.BENCH_WORK_MS || 0);
const svc = new Service({
  name: process.env.BENCH_SERVICE || 'bench-service',
  concurrency: Number(process.env.BENCH_CONCURRENCY || 200),
}).task(process.env.BENCH_TASK_TYPE || 'bench.external', async () => {
  if (work > 0) await new Promise((r) => setTimeout(r, work));
  return { ok: true };
});
process.on('SIGTERM', () => svc.stop());
process.on('SIGINT', () => svc.stop());
await svc.run();
