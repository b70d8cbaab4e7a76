// A regex from a request param, and rows without a country (media) sorted
// after the others: nulls last; the viewer alone when it has no country.
import { definePlan, Pred } from "@ranking-dsl/runtime";

export default definePlan({
  name: "regex_and_nulls",
  build: (ctx) => {
    const v = ctx.viewer({ endpoint: EP.redis.redis_default });
    const people = v.recommendation({ endpoint: EP.redis.redis_default, fanout: 3 });
    const matching = v
      .follow({ endpoint: EP.redis.redis_default })
      .filter({ pred: Pred.regex(Key.country, P.blocklist_regex, "i") });
    const media = v.follow({ endpoint: EP.redis.redis_default, fanout: 2 }).media({ endpoint: EP.redis.redis_default });
    const all = matching.concat({ rhs: media }).concat({ rhs: people });
    return [all.sort({ key: Key.country }).take({ count: 12 }), v.filter({ pred: Key.country == null })];
  },
});
