import { definePlan } from "@ranking-dsl/runtime";

export default definePlan({
  name: "simple_viewer",
  build: (ctx) => ctx.viewer({ endpoint: EP.redis.redis_default }),
});
