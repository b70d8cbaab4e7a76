import { definePlan } from "@ranking-dsl/runtime";

export default definePlan({
  name: "complex_dag",
  build: (ctx) => {
    const v = ctx.viewer({ endpoint: EP.redis.redis_default });

    // Left branch: follow → media → vm
    const followBranch = v
      .follow({ endpoint: EP.redis.redis_default })
      .media({ endpoint: EP.redis.redis_default })
      .vm({ outKey: Key.score, expr: Key.id * coalesce(P.weight, 0.1) });

    // Right branch: recommendation → media → vm
    const recsBranch = v
      .recommendation({ endpoint: EP.redis.redis_default })
      .media({ endpoint: EP.redis.redis_default })
      .vm({ outKey: Key.score, expr: Key.id * coalesce(P.weight, 0.1) });

    // Merge, sort, take
    return followBranch
      .concat({ rhs: recsBranch })
      .sort({ key: Key.score, order: "desc" })
      .take({ count: 50 });
  },
});
