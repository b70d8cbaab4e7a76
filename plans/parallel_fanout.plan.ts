import { definePlan } from "@ranking-dsl/runtime";

export default definePlan({
  name: "parallel_fanout",
  build: (ctx) => {
    const v = ctx.viewer({ endpoint: EP.redis.redis_default });
    const followBranch = v.follow({ endpoint: EP.redis.redis_default });
    const recsBranch = v.recommendation({ endpoint: EP.redis.redis_default });
    // Both branches returned - engine runs them in parallel
    return [followBranch, recsBranch];
  },
});
