// The test ops: rows 1..rowCount that pass through sleep and busy_cpu.
import { definePlan } from "@ranking-dsl/runtime";

export default definePlan({
  name: "test_ops",
  build: (ctx) =>
    ctx
      .fixedSource({ rowCount: 6 })
      .sleep({ durationMs: 1 })
      .busyCpu({ busyWaitMs: 1 })
      .vm({ outKey: Key.model_score_1, expr: Key.id * Key.id - 10 })
      .sort({ key: Key.model_score_1, order: "desc" })
      .take({ count: 4 }),
});
