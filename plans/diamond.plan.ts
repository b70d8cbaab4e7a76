import { definePlan } from "@ranking-dsl/runtime";

export default definePlan({
  name: "diamond",
  build: (ctx) => {
    const v = ctx.viewer({ endpoint: EP.redis.redis_default });
    const left = v.follow({ endpoint: EP.redis.redis_default });
    const right = v.recommendation({ endpoint: EP.redis.redis_default });
    return left.concat({ rhs: right }); // waits for both branches
  },
});
