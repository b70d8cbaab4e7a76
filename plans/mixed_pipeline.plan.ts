import { definePlan, Pred, E } from "@ranking-dsl/runtime";

export default definePlan({
  name: "mixed_pipeline",
  build: (ctx) =>
    ctx
      .viewer({ endpoint: EP.redis.redis_default })
      .follow({ endpoint: EP.redis.redis_default })
      .vm({ outKey: Key.score, expr: Key.id * coalesce(P.weight, 0.5) })
      .filter({ pred: Pred.cmp(">=", E.key(Key.score), E.const(0.5)) })
      .sort({ key: Key.score, order: "desc" })
      .take({ count: 10 }),
});
