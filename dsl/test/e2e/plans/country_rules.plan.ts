// Predicates beyond spec 002's examples: string membership, or/not, literal
// null tests, a param in an arithmetic expression, sort by a string key.
import { definePlan, Pred } from "@ranking-dsl/runtime";

export default definePlan({
  name: "country_rules",
  build: (ctx) =>
    ctx
      .viewer({ endpoint: EP.redis.redis_default })
      .follow({ endpoint: EP.redis.redis_default, fanout: 8, trace: "follows" })
      .filter({ pred: Pred.in(Key.country, ["CA"]) || !(Key.id < 7) })
      .vm({ outKey: Key.final_score, expr: -Key.id + coalesce(P.weight, 1) * 2 - 0.5 })
      .filter({ pred: Key.final_score != null && Pred.notNull(Key.country) })
      .sort({ key: Key.country, order: "desc" }),
});
