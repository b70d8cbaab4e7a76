import { definePlan, Pred, E } from "@ranking-dsl/runtime";

export default definePlan({
  name: "viewer_filter",
  build: (ctx) =>
    ctx
      .viewer({ endpoint: EP.redis.redis_default })
      .filter({ pred: Pred.cmp(">", E.key(Key.id), E.const(5)) }),
});
